//! The privilege boundary under races a local user runs against a root
//! daemon: her process swaps a folder on her output's path for a link to
//! root's files (renameat2 RENAME_EXCHANGE, millions of times) while runs
//! end and their outputs are archived or removed; or a hard link to a
//! root-only file comes and goes in her output while validators read it.
//! Nothing of root's may be copied, read or removed for her.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::privsep::{RACER, give};
use crate::users_harness::{Users, folder_of, setpriv, system, users, wait_end};

/// Every file under `dir` (links not followed) with its sha256, sorted.
fn listing(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let t = e.file_type().unwrap();
            if t.is_dir() {
                todo.push(e.path());
            } else if t.is_file() {
                let sum = format!("{:x}", Sha256::digest(std::fs::read(e.path()).unwrap()));
                out.push((e.path(), sum));
            } else {
                out.push((e.path(), "link".into()));
            }
        }
    }
    out.sort();
    out
}

/// A root-only decoy folder under `/`: `n` folders `name/secret-N`, each
/// with a `sentinel` file readable by root alone.
fn decoy(name: &str, n: usize) -> PathBuf {
    let d = Path::new("/").join(name);
    let _ = std::fs::remove_dir_all(&d);
    for i in 0..n {
        let sub = d.join(format!("secret-{i}"));
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join("sentinel"), format!("ROOT-ONLY-{name}-{i}\n")).unwrap();
        std::fs::set_permissions(sub.join("sentinel"), std::fs::Permissions::from_mode(0o600))
            .unwrap();
    }
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
    d
}

/// Starts her racer in `work`: `x` exchanged with a link to `target`.
fn racer(u: &Users, work: &Path, target: &Path) -> std::process::Child {
    let script = RACER.replace(
        "os.symlink('/', 'xl')",
        &format!("os.symlink('{}', 'xl')", target.display()),
    );
    setpriv(&u.alice, Path::new("/usr/bin/python3"), None)
        .current_dir(work)
        .args(["-c", &script])
        .spawn()
        .unwrap()
}

#[test]
fn archives_raced_with_a_link_to_a_root_only_folder_copy_nothing_of_roots() {
    let u = users("archives are copied from the owner's real output folder");
    let secret = decoy("nj-decoy-archive", 3);
    let before = listing(&secret);
    let root = tempfile::tempdir().unwrap();
    let s = system(&format!(
        "slots = 4\n[archive]\nroot = \"{}\"\nretry = \"1s\"\nretry_max = \"2s\"\n",
        root.path().display()
    ));
    let work = folder_of(&u.alice, "nj-race-archive");
    for i in 0..3 {
        std::fs::create_dir_all(work.join(format!("x/secret-{i}"))).unwrap();
    }
    give(&u.alice, &work);
    let mut race = racer(&u, &work, &secret);
    let ids: Vec<i64> = (0..30)
        .map(|i| {
            let out = work.join(format!("x/secret-{}", i % 3));
            s.submit(
                &u,
                &u.alice,
                &[
                    "--output",
                    out.to_str().unwrap(),
                    "--",
                    "sh",
                    "-c",
                    "echo mine > \"$NIGHTJAR_OUTPUT_PATH/f-$NIGHTJAR_TASK_ID\" 2>/dev/null; true",
                ],
            )
        })
        .collect();
    for &id in &ids {
        wait_end(&s, id);
        s.nj.until("the archive, or a failed try", || {
            let a = &s.nj.show(id)["runs"][0]["outputs"]["archive"];
            a["state"] == "done" || a["attempts"].as_u64() >= Some(1)
        });
    }
    std::fs::write(work.join("stop"), "").unwrap();
    let _ = race.wait();
    for (path, _) in listing(root.path()) {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            !text.contains("ROOT-ONLY"),
            "root's file was archived for her: {}",
            path.display()
        );
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name != "sentinel",
            "root's file was archived for her: {}",
            path.display()
        );
    }
    let mut archived = 0;
    for &id in &ids {
        let shown = s.nj.show(id);
        let text = shown.to_string();
        assert!(
            !text.contains("sentinel"),
            "task {id} names root's file: {text}"
        );
        archived += usize::from(shown["runs"][0]["outputs"]["archive"]["state"] == "done");
    }
    let copied = listing(root.path())
        .iter()
        .filter(|(p, _)| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("f-"))
        })
        .count();
    eprintln!(
        "archives: {archived} of {} done, {copied} of her files copied",
        ids.len()
    );
    assert!(
        copied > 0,
        "no archive copied anything: the test raced nothing"
    );
    assert_eq!(listing(&secret), before, "the decoy is untouched");
    let _ = std::fs::remove_dir_all(&secret);
}

/// Submits a failing task writing to `out`, again while the race makes the
/// path resolve out of `output_roots` (refused at submit, rightly).
fn submit_outside_the_race(s: &crate::users_harness::System, u: &Users, out: &Path) -> i64 {
    for _ in 0..200 {
        let o = s.cli(
            u,
            &u.alice,
            &[
                "--json",
                "submit",
                "--output",
                out.to_str().unwrap(),
                "--",
                "sh",
                "-c",
                "echo m > \"$NIGHTJAR_OUTPUT_PATH/m\"; exit 1",
            ],
        );
        if o.status.success() {
            let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
            return v[0]["id"].as_i64().unwrap();
        }
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("outside output_roots"), "{err}");
    }
    panic!("200 submits all raced out of output_roots");
}

#[test]
fn retention_raced_with_a_link_to_a_root_only_folder_removes_nothing_of_roots() {
    let u = users("retention removes the owner's real output folder as her");
    let secret = decoy("nj-decoy-retention", 30);
    let before = listing(&secret);
    let work = folder_of(&u.alice, "nj-race-retention");
    let s = system(&format!(
        "slots = 4\noutput_roots = [\"{}\"]\n[retention]\ntask_outputs = true\noutputs_failed = \"0s\"\nevery = \"0s\"\n",
        work.display()
    ));
    for i in 0..30 {
        std::fs::create_dir_all(work.join(format!("x/secret-{i}"))).unwrap();
    }
    give(&u.alice, &work);
    // The race runs while the runs end and gc removes their folders.
    let mut race = racer(&u, &work, &secret);
    let ids: Vec<i64> = (0..30)
        .map(|i| {
            let out = work.join(format!("x/secret-{i}"));
            submit_outside_the_race(&s, &u, &out)
        })
        .collect();
    let mut removed = 0;
    let mut gc = || {
        let out = s.nj.cli(&["--json", "gc"]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        removed += v["outputs"].as_u64().unwrap_or(0);
    };
    for &id in &ids {
        gc();
        wait_end(&s, id);
    }
    gc();
    eprintln!(
        "retention: {removed} of {} runs' outputs removed",
        ids.len()
    );
    assert!(removed > 0, "gc removed nothing: the test raced nothing");
    assert!(
        removed <= ids.len() as u64,
        "{removed} removals counted for {} runs: some counted twice",
        ids.len()
    );
    std::fs::write(work.join("stop"), "").unwrap();
    let _ = race.wait();
    assert_eq!(listing(&secret), before, "nothing of root's was removed");
    let _ = std::fs::remove_dir_all(&secret);
}

#[test]
fn a_hard_link_to_a_root_only_file_that_comes_and_goes_is_never_read_by_a_validator() {
    let u = users("validators read the outputs as the task's owner");
    let s = system("slots = 4\n");
    let secret_dir = tempfile::tempdir().unwrap();
    let secret = secret_dir.path().join("shadow-like");
    std::fs::write(&secret, "ROOT-ONLY-HARDLINK\n").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let work = folder_of(&u.alice, "nj-race-hardlink");
    std::fs::create_dir_all(&work).unwrap();
    give(&u.alice, &work);
    let hostile = work.join("hostile-validator.wasm");
    std::fs::copy(env!("NIGHTJAR_TEST_PLUGIN_HOSTILE_VALIDATOR"), &hostile).unwrap();
    give(&u.alice, &work);
    let hostile = hostile.display();
    let outs: Vec<PathBuf> = (0..40).map(|i| work.join(format!("out-{i}"))).collect();
    // Root stands in for a kernel without protected_hardlinks (or a link
    // she made to a file she could once read): the link comes and goes in
    // each of 40 output folders while its run ends and is judged.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let linker = {
        let (outs, secret, stop) = (outs.clone(), secret.clone(), std::sync::Arc::clone(&stop));
        std::thread::spawn(move || {
            // There half of the time in each folder: a walk that misses it
            // and a validator that meets it are both likely in every run.
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for o in &outs {
                    let _ = std::fs::hard_link(&secret, o.join("hardlink"));
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
                for o in &outs {
                    let _ = std::fs::remove_file(o.join("hardlink"));
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        })
    };
    let ids: Vec<i64> = outs
        .iter()
        .enumerate()
        .map(|(i, out)| {
            let file = work.join(format!("t{i}.toml"));
            std::fs::write(
                &file,
                format!(
                    "name = \"h{i}\"\noutput = \"{}\"\ncommand = '''echo mine > \"$NIGHTJAR_OUTPUT_PATH/f\"; sleep 0.2'''\n[[validate]]\nplugin = \"{hostile}\"\nmode = \"escape\"\n",
                    out.display()
                ),
            )
            .unwrap();
            std::os::unix::fs::chown(&file, Some(u.alice.uid), Some(u.alice.gid)).unwrap();
            s.submit(&u, &u.alice, &[file.to_str().unwrap()])
        })
        .collect();
    let shown: Vec<String> = ids.iter().map(|&id| wait_end(&s, id).to_string()).collect();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = linker.join();
    for (id, text) in ids.iter().zip(&shown) {
        assert!(
            !text.contains("ROOT-ONLY"),
            "task {id}: a validator read root's file: {text}"
        );
    }
    // The validators ran and tried the link; where it was there, the open
    // was refused (as her), not merely missing.
    let tried = shown
        .iter()
        .filter(|t| t.contains("read /output/hardlink"))
        .count();
    let met = shown
        .iter()
        .filter(|t| t.contains("REFUSED read /output/hardlink: Permission denied"))
        .count();
    eprintln!("hard link: {tried} validators tried it, {met} met it and were refused");
    assert!(tried > 0, "no validator tried the link: {}", shown[0]);
    assert!(met > 0, "no validator met the link: the race was not run");
}
