//! Many users on one machine: who may change, see and claim what, and how
//! clients find a daemon (see `multiuser.rs` for the accounts and the daemon).

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::users_harness::{Users, as_user, folder_of, setpriv, system, users};

fn code_and_err(out: &std::process::Output) -> (Option<i32>, String) {
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn only_the_owner_or_an_admin_changes_a_task_and_the_admins_act_is_audited() {
    let u = users("owner or admin");
    let s = system("");
    let work = folder_of(&u.alice, "nj-ctl");
    let w = work.to_str().unwrap();
    let id = s.submit(
        &u,
        &u.alice,
        &["--hold", "--workdir", w, "--", "sleep", "300"],
    );
    let ids = id.to_string();
    for verb in ["cancel", "hold", "release", "retry"] {
        let (code, err) = code_and_err(&s.cli(&u, &u.bob, &[verb, &ids]));
        assert_eq!(code, Some(6), "bob {verb}: {err}");
        assert!(
            err.contains("njtest-alice") && err.contains("njtest-bob"),
            "bob {verb}: {err}"
        );
    }
    assert_eq!(s.nj.show(id)["task"]["state"], "held");
    s.ok(&u, &u.carol, &["cancel", &ids]);
    assert_eq!(s.nj.show(id)["task"]["state"], "cancelled");
    let db = rusqlite::Connection::open(s.nj.state.join("nightjar.db")).unwrap();
    let rows: Vec<(String, String)> = db
        .prepare("SELECT user, action FROM audit WHERE task_id = ?1")
        .unwrap()
        .query_map([id], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(
        rows.iter()
            .any(|(user, action)| user == "njtest-carol" && action.contains("cancel")),
        "{rows:?}"
    );
    assert!(
        !rows.iter().any(|(user, _)| user == "njtest-bob"),
        "{rows:?}"
    );
}

#[test]
fn a_workdir_the_submitter_cannot_enter_is_refused_at_submit_even_through_a_symlink() {
    let u = users("submit checks");
    let s = system("");
    let private = folder_of(&u.alice, "nj-private");
    std::fs::set_permissions(&u.alice.home, std::fs::Permissions::from_mode(0o700)).unwrap();
    let home = u.alice.home.to_str().unwrap();
    let out = s.cli(&u, &u.bob, &["submit", "--workdir", home, "--", "true"]);
    let (code, err) = code_and_err(&out);
    assert_ne!(code, Some(0), "{err}");
    assert!(err.contains(home), "{err}");
    let link = u
        .bob
        .home
        .join(format!("into-alice-{}", std::process::id()));
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&private, &link).unwrap();
    let out = s.cli(
        &u,
        &u.bob,
        &["submit", "--workdir", link.to_str().unwrap(), "--", "true"],
    );
    let (code, err) = code_and_err(&out);
    assert_ne!(code, Some(0), "{err}");
    assert!(err.contains("workdir"), "{err}");
    assert!(s.nj.json(&["ls", "--all"]).to_string().len() < 10_000);
    let queued: Value = s.nj.json(&["ls", "--all"]);
    assert!(
        !queued.to_string().contains("into-alice"),
        "a refused task was queued: {queued}"
    );
}

#[test]
fn others_see_the_queue_and_why_but_not_the_env() {
    let u = users("visibility");
    let s = system("");
    let work = folder_of(&u.alice, "nj-see");
    let w = work.to_str().unwrap();
    let id = s.submit(
        &u,
        &u.alice,
        &[
            "--hold",
            "--workdir",
            w,
            "-e",
            "COLOUR=teal42",
            "--",
            "true",
        ],
    );
    let ids = id.to_string();
    let ls = s.ok(&u, &u.bob, &["--json", "ls", "--all"]);
    assert!(ls.contains(&format!("\"id\": {id}")), "{ls}");
    s.ok(&u, &u.bob, &["why", &ids]);
    let bob_show = s.ok(&u, &u.bob, &["--json", "show", &ids]);
    assert!(!bob_show.contains("teal42"), "{bob_show}");
    assert!(bob_show.contains("<private>"), "{bob_show}");
    let alice_show = s.ok(&u, &u.alice, &["--json", "show", &ids]);
    assert!(alice_show.contains("teal42"), "{alice_show}");
    let carol_show = s.ok(&u, &u.carol, &["--json", "show", &ids]);
    assert!(carol_show.contains("teal42"), "{carol_show}");
}

#[test]
fn an_owner_in_the_submitted_json_is_replaced_by_the_caller() {
    let u = users("owner claim");
    let s = system("");
    let work = folder_of(&u.bob, "nj-claim");
    let name = format!("claim-{}", std::process::id());
    let member = json!({
        "name": name, "project": "default",
        "command": {"argv": ["true"]},
        "workdir": work, "env": {}, "inputs": [], "output": null,
        "priority": "normal", "resources": {}, "retry": {}, "params": {},
        "owner": {"uid": u.alice.uid, "name": "njtest-alice"}
    });
    let entry = json!({
        "name": name, "project": "default", "is_sweep": false, "schedule": null,
        "deps": [], "held": true, "members": [member],
        "owner": {"uid": u.alice.uid, "name": "njtest-alice"}
    });
    let line = crate::harness::raw_request(json!({"verb": "submit", "entries": [entry]}));
    let py = "import socket,sys\ns=socket.socket(socket.AF_UNIX)\ns.connect(sys.argv[1])\ns.sendall(sys.argv[2].encode()+b'\\n')\nprint(s.makefile().readline())";
    let out = setpriv(&u.bob, Path::new("/usr/bin/python3"), None)
        .args(["-c", py, s.socket.to_str().unwrap()])
        .arg(String::from_utf8(line).unwrap())
        .output()
        .unwrap();
    let reply = String::from_utf8_lossy(&out.stdout);
    assert!(reply.contains("\"ok\""), "{reply} {out:?}");
    let db = rusqlite::Connection::open(s.nj.state.join("nightjar.db")).unwrap();
    let (uid, owner): (u32, String) = db
        .query_row(
            "SELECT owner_uid, owner FROM tasks WHERE name = ?1",
            [&name],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((uid, owner.as_str()), (u.bob.uid, "njtest-bob"));
}

#[test]
fn a_users_own_daemon_serves_only_them_even_on_an_open_socket() {
    let u = users("single-user daemon");
    let dir = std::path::PathBuf::from(format!("/tmp/njtest-own-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::chown(&dir, Some(u.alice.uid), Some(u.alice.gid)).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let socket = dir.join("nightjar.sock");
    let config = dir.join("nightjar.toml");
    std::fs::write(
        &config,
        format!(
            "state_dir = \"{}\"\nsocket = \"{}\"\n",
            dir.join("state").display(),
            socket.display()
        ),
    )
    .unwrap();
    let mut daemon = setpriv(&u.alice, &u.bin.join("nightjar"), None)
        .args(["--config", config.to_str().unwrap(), "daemon"])
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(dir.join("daemon.log")).unwrap())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !as_user(&u, &u.alice, Some(&socket), &["ls"])
        .status
        .success()
    {
        assert!(
            t0.elapsed() < Duration::from_secs(90),
            "alice's daemon did not come up: {}",
            std::fs::read_to_string(dir.join("daemon.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "a user's daemon's socket");
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    let (code, err) = code_and_err(&as_user(&u, &u.bob, Some(&socket), &["ls"]));
    crate::harness::unsafe_kill(daemon.id() as i32, 15);
    let _ = daemon.wait();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(code, Some(6), "{err}");
    assert!(err.contains("serves only that user"), "{err}");
}

#[test]
fn a_client_finds_the_system_daemon_and_without_one_names_both_places() {
    let u = users("client search");
    let system_socket = Path::new("/run/nightjar/nightjar.sock");
    if system_socket.exists() || Path::new("/var/lib/nightjar").exists() {
        crate::harness::needs(
            "a machine without a system daemon",
            "/run/nightjar/nightjar.sock or /var/lib/nightjar exists, and the client would find it",
        );
    }
    let Users { alice, .. } = &u;
    let (code, err) = code_and_err(&as_user(&u, alice, None, &["ls"]));
    assert_eq!(code, Some(3), "{err}");
    let own = alice.home.join(".local/state/nightjar/nightjar.sock");
    assert!(
        err.contains(own.to_str().unwrap()) && err.contains("/run/nightjar/nightjar.sock"),
        "{err}"
    );
    // NIGHTJAR_SOCKET names the one place looked at.
    let (code, err) = code_and_err(&as_user(
        &u,
        alice,
        Some(Path::new("/nowhere.sock")),
        &["ls"],
    ));
    assert_eq!(code, Some(3), "{err}");
    assert!(
        err.contains("/nowhere.sock") && !err.contains("/run/nightjar"),
        "{err}"
    );
    // A root daemon on the system socket: alice's plain `nightjar` finds it,
    // through a folder the daemon made 0755.
    let made_run = !Path::new("/run/nightjar").exists();
    let mut nj = crate::harness::Nj::new(&format!("socket = \"{}\"\n", system_socket.display()));
    nj.start();
    let mode = std::fs::metadata("/run/nightjar")
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    let id = nj.submit(&["--hold", "--", "true"]);
    let out = as_user(&u, alice, None, &["--json", "ls", "--all"]);
    nj.term();
    if made_run {
        let _ = std::fs::remove_dir("/run/nightjar");
    }
    let (code, err) = code_and_err(&out);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&format!("\"id\": {id}")),
        "{out:?}"
    );
    if made_run {
        assert_eq!(mode, 0o755, "the socket's folder");
    }
}

#[test]
fn a_socket_group_keeps_other_users_out_by_the_sockets_mode() {
    let u = users("socket group");
    let s = system("[users]\nsocket_group = \"njtest-admins\"\nadmin_group = \"njtest-admins\"\n");
    let meta = std::fs::metadata(&s.socket).unwrap();
    let gid = crate::users_harness::group_gid("njtest-admins");
    assert_eq!((meta.mode() & 0o777, meta.gid()), (0o660, gid));
    // Bob is not in the socket's group: the kernel keeps him out.
    let (code, err) = code_and_err(&s.cli(&u, &u.bob, &["ls"]));
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("Permission denied"), "{err}");
    // Alice is not in it either; carol is.
    let (code, err) = code_and_err(&s.cli(&u, &u.alice, &["ls"]));
    assert_eq!(code, Some(3), "{err}");
    s.ok(&u, &u.carol, &["ls"]);
}

#[test]
fn logs_of_a_task_are_refused_to_other_users_and_read_by_the_owner() {
    let u = users("logs");
    let s = system("");
    let work = folder_of(&u.alice, "nj-logs");
    let w = work.to_str().unwrap();
    let id = s.submit(
        &u,
        &u.alice,
        &["--workdir", w, "--", "echo", "alice-says-hi"],
    );
    crate::users_harness::wait_end(&s, id);
    let ids = id.to_string();
    let (code, err) = code_and_err(&s.cli(&u, &u.bob, &["logs", &ids]));
    assert_eq!(code, Some(6), "{err}");
    assert!(err.contains("njtest-alice"), "{err}");
    assert!(
        s.ok(&u, &u.alice, &["logs", &ids])
            .contains("alice-says-hi")
    );
    assert!(
        s.ok(&u, &u.carol, &["logs", &ids])
            .contains("alice-says-hi")
    );
}
