//! The privilege boundary, attacked by local users of a root daemon: what
//! the daemon does on a user's paths (manifest capture: pip, git, inputs;
//! outputs: their walk, validators, archives, retention) happens as that
//! user, so nothing only root may read reaches them, and nothing of theirs
//! runs as root.

use std::os::unix::fs::{PermissionsExt, chown, symlink};
use std::path::Path;

use serde_json::Value;

use crate::users_harness::{Acct, folder_of, system, users, wait_end};

/// `body` as an executable script of `who`'s at `path`.
fn script_of(who: &Acct, path: &Path, body: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, body).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    for p in path.ancestors().take(3) {
        let _ = chown(p, Some(who.uid), Some(who.gid));
    }
}

/// Makes every file and folder under `dir` `who`'s.
pub(crate) fn give(who: &Acct, dir: &Path) {
    let out = std::process::Command::new("chown")
        .args(["-R", &format!("{}:{}", who.uid, who.gid)])
        .arg(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
}

#[test]
fn a_users_venv_python_runs_as_her_at_submit_and_at_start_never_as_root() {
    let u = users("pip freeze runs as the task's owner");
    let s = system("");
    let work = folder_of(&u.alice, "nj-venv");
    let venv = work.join("venv");
    // Her "python" answers `-m pip freeze` with the uid it runs as and
    // whether it could read a root-only file.
    script_of(
        &u.alice,
        &venv.join("bin/python"),
        "#!/bin/sh\nif head -c1 /etc/shadow >/dev/null 2>&1; then r=root; else r=user; fi\necho \"uid$(id -u)-$r==1\"\n",
    );
    std::fs::create_dir_all(venv.join("lib/python3.11/site-packages")).unwrap();
    give(&u.alice, &venv);
    let id = s.submit(
        &u,
        &u.alice,
        &[
            "--workdir",
            work.to_str().unwrap(),
            "-e",
            &format!("VIRTUAL_ENV={}", venv.display()),
            "--",
            "true",
        ],
    );
    let d = wait_end(&s, id);
    let want = Value::from(vec![format!("uid{}-user==1", u.alice.uid)]);
    assert_eq!(d["manifests"]["submit"]["python"]["packages"], want, "{d}");
    assert_eq!(d["manifests"]["runs"][0]["python"]["packages"], want, "{d}");
}

#[test]
fn inputs_swapped_for_links_to_root_only_files_after_submit_are_not_hashed_for_their_owner() {
    let u = users("inputs are read as the task's owner");
    let s = system("");
    let work = folder_of(&u.alice, "nj-inputs");
    let decoy = tempfile::tempdir().unwrap();
    std::fs::set_permissions(decoy.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let secret = decoy.path().join("secret");
    std::fs::write(&secret, "root only").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    for f in ["decoy", "shadow", "mine"] {
        std::fs::write(work.join(f), "hers").unwrap();
    }
    give(&u.alice, &work);
    // Root's own task hashes the decoy first: its digest is in the cache.
    let roots =
        s.nj.submit(&["--input", secret.to_str().unwrap(), "--", "true"]);
    let r = wait_end(&s, roots);
    assert!(
        r["manifests"]["submit"]["inputs"][0]["sha256"].is_string(),
        "{r}"
    );
    let input = |f: &str| work.join(f).to_str().unwrap().to_string();
    let id = s.submit(
        &u,
        &u.alice,
        &[
            "--hold",
            "--workdir",
            work.to_str().unwrap(),
            "--input",
            &input("decoy"),
            "--input",
            &input("shadow"),
            "--input",
            &input("mine"),
            "--",
            "true",
        ],
    );
    // Checked at submit; swapped for links before the start.
    for (f, to) in [
        ("decoy", secret.as_path()),
        ("shadow", Path::new("/etc/shadow")),
    ] {
        std::fs::remove_file(work.join(f)).unwrap();
        symlink(to, work.join(f)).unwrap();
    }
    s.ok(&u, &u.alice, &["release", &id.to_string()]);
    let d = wait_end(&s, id);
    let start = &d["manifests"]["runs"][0];
    let inputs = start["inputs"].as_array().expect("inputs");
    assert_eq!(inputs.len(), 3, "{start}");
    for i in &inputs[..2] {
        assert_eq!(i["kind"], "unreadable", "{i}");
        assert!(i["sha256"].is_null(), "a root-only file was hashed: {i}");
        assert!(
            i["size"].is_null(),
            "a root-only file's size was shown: {i}"
        );
    }
    assert_eq!(inputs[2]["kind"], "file");
    assert!(inputs[2]["sha256"].is_string(), "{}", inputs[2]);
}

#[test]
fn git_runs_as_the_workdirs_owner_a_root_only_repository_is_not_read() {
    let u = users("git runs as the task's owner");
    let s = system("");
    let work = folder_of(&u.alice, "nj-git");
    // A workdir of root's that she may enter, holding a repository only
    // root may enter: root's git reads its commit, hers cannot.
    chown(&work, Some(0), Some(0)).unwrap();
    std::fs::set_permissions(&work, std::fs::Permissions::from_mode(0o755)).unwrap();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(&work)
            .args(["-c", "user.name=t", "-c", "user.email=t@example.org"])
            .args(["-c", "safe.directory=*"])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    git(&["init", "-q"]);
    std::fs::write(work.join("f"), "x").unwrap();
    git(&["add", "f"]);
    git(&["commit", "-qm", "root's"]);
    std::fs::set_permissions(work.join(".git"), std::fs::Permissions::from_mode(0o700)).unwrap();
    let id = s.submit(
        &u,
        &u.alice,
        &["--workdir", work.to_str().unwrap(), "--", "true"],
    );
    let d = wait_end(&s, id);
    for g in [
        &d["manifests"]["submit"]["git"],
        &d["manifests"]["runs"][0]["git"],
    ] {
        assert!(g["commit"].is_null(), "root's repository was read: {g}");
        assert!(g["note"].is_string(), "{g}");
    }
}

/// Exchanges the folder `x` with a link `xl` to `/` (renameat2 with
/// RENAME_EXCHANGE: atomic) until `stop` appears, at most 2 million times.
pub(crate) const RACER: &str = "import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
os.symlink('/', 'xl')
i = 0
while i < 2000000 and not os.path.exists('stop'):
    libc.renameat2(-100, b'x', -100, b'xl', 2)
    i += 1
";

#[test]
fn an_output_folder_raced_with_a_link_to_root_is_never_walked_past_its_owner() {
    let u = users("outputs are walked as the task's owner");
    let s = system("slots = 4\n");
    let work = folder_of(&u.alice, "nj-race");
    std::fs::create_dir_all(work.join("x/etc")).unwrap();
    give(&u.alice, &work);
    // Her racer: `x` is exchanged with a link to `/` and back, over and
    // over, so `x/etc` is now and then `/etc` (shadow and all).
    let mut racer = crate::users_harness::setpriv(&u.alice, Path::new("/usr/bin/python3"), None)
        .current_dir(&work)
        .args(["-c", RACER])
        .spawn()
        .unwrap();
    let output = work.join("x/etc");
    let ids: Vec<i64> = (0..20)
        .map(|_| {
            s.submit(
                &u,
                &u.alice,
                &[
                    "--workdir",
                    work.to_str().unwrap(),
                    "--output",
                    output.to_str().unwrap(),
                    "--",
                    "sh",
                    "-c",
                    "echo mine > \"$NIGHTJAR_OUTPUT_PATH/f-$NIGHTJAR_TASK_ID\" || true",
                ],
            )
        })
        .collect();
    let shown: Vec<Value> = ids.iter().map(|&id| wait_end(&s, id)).collect();
    std::fs::write(work.join("stop"), "").unwrap();
    let _ = racer.wait();
    for d in &shown {
        let text = d.to_string();
        assert!(
            !text.contains("shadow") && !text.contains("passwd"),
            "a root-only folder was walked for her: {text}"
        );
        for run in d["runs"].as_array().unwrap() {
            for f in run["outputs"]["manifest"]["files"]
                .as_array()
                .into_iter()
                .flatten()
            {
                let p = f["path"].as_str().unwrap();
                assert!(p.starts_with("f-"), "not hers: {p} in {run}");
            }
        }
    }
}

/// `nightjar ARGS` as `who` on a terminal (a pty made by `script`): its
/// exit code and everything it printed.
fn on_a_terminal(
    s: &crate::users_harness::System,
    u: &crate::users_harness::Users,
    who: &Acct,
    args: &[&str],
) -> (Option<i32>, String) {
    let line = std::iter::once(u.bin.join("nightjar").display().to_string())
        .chain(args.iter().map(|a| a.to_string()))
        .collect::<Vec<_>>()
        .join(" ");
    let out = crate::users_harness::setpriv(who, Path::new("/usr/bin/script"), Some(&s.socket))
        .args(["-qec", &line, "/dev/null"])
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn another_users_log_reaches_an_admins_terminal_escaped_and_raw_is_refused_there() {
    let u = users("logs escape control characters");
    let s = system("");
    let work = folder_of(&u.alice, "nj-ansi");
    // Her task sets the terminal's title and asks for its clipboard.
    let id = s.submit(
        &u,
        &u.alice,
        &[
            "--workdir",
            work.to_str().unwrap(),
            "--",
            "printf",
            "\\033]0;pwned\\007\\033]52;c;?\\007plain\\n",
        ],
    );
    wait_end(&s, id);
    let ids = id.to_string();
    // Carol (an admin) reads it on her terminal: escaped, nothing raw.
    let (code, text) = on_a_terminal(&s, &u, &u.carol, &["logs", &ids]);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("\\x1b]0;pwned\\x07") && text.contains("plain"),
        "{text:?}"
    );
    assert!(
        !text.contains('\u{1b}'),
        "an escape reached the terminal: {text:?}"
    );
    let (code, text) = on_a_terminal(&s, &u, &u.carol, &["logs", "--raw", &ids]);
    assert_ne!(code, Some(0), "{text}");
    assert!(text.contains("not yours"), "{text:?}");
    assert!(!text.contains('\u{1b}'), "{text:?}");
    // Her own log, raw, on her own terminal: as it is.
    let (code, text) = on_a_terminal(&s, &u, &u.alice, &["logs", "--raw", &ids]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("\u{1b}]0;pwned"), "{text:?}");
}

#[test]
fn inputs_through_proc_self_reach_nothing_of_the_daemons_process() {
    let u = users("no magic links from an owner's thread");
    // The daemon starts in an open folder inside one only root may enter,
    // holding a file anyone could read by its own mode: /proc/self/cwd
    // would reach it past the closed folder.
    let decoy = tempfile::tempdir().unwrap();
    std::fs::set_permissions(decoy.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let open = decoy.path().join("pub");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(open.join("secret"), "root by ancestor").unwrap();
    std::fs::set_permissions(open.join("secret"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let s = crate::users_harness::system_in("", Some(&open));
    let work = folder_of(&u.alice, "nj-magic");
    let names: Vec<String> = (0..20).map(|k| format!("in{k}")).collect();
    for n in &names {
        std::fs::write(work.join(n), "hers").unwrap();
    }
    give(&u.alice, &work);
    let mut args = vec![
        "--hold".to_string(),
        "--workdir".into(),
        work.display().to_string(),
    ];
    for n in &names {
        args.push("--input".into());
        args.push(work.join(n).display().to_string());
    }
    args.extend(["--".into(), "true".into()]);
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let id = s.submit(&u, &u.alice, &a);
    // Swapped for links through the daemon's own /proc/self: its folder,
    // and its open descriptors 3..21.
    for (k, n) in names.iter().enumerate() {
        let to = if k == 0 {
            "/proc/self/cwd/secret".to_string()
        } else {
            format!("/proc/self/fd/{}/secret", k + 2)
        };
        std::fs::remove_file(work.join(n)).unwrap();
        symlink(&to, work.join(n)).unwrap();
    }
    s.ok(&u, &u.alice, &["release", &id.to_string()]);
    let d = wait_end(&s, id);
    let text = d.to_string();
    assert!(!text.contains("root by ancestor"));
    for i in d["manifests"]["runs"][0]["inputs"].as_array().unwrap() {
        assert!(i["sha256"].is_null(), "read through /proc/self: {i}");
        assert_ne!(i["kind"], "file", "{i}");
    }
}
