//! Host hardening: private files, redacted secrets, what a task inherits,
//! output folders made by the supervisor inside `output_roots`, the API
//! socket's limits (`hardening_socket.rs`), and clean exits on a broken pipe.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::harness::{BIN, Nj};

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .mode()
        & 0o7777
}

/// A wrapper that starts the daemon after running `prelude` (shell).
pub(crate) fn wrapper(nj: &Nj, prelude: &str) -> std::path::PathBuf {
    let path = nj.dir.path().join("nightjar-wrapped");
    std::fs::write(&path, format!("#!/bin/sh\n{prelude}\nexec {BIN} \"$@\"\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

pub(crate) fn connect(nj: &Nj) -> UnixStream {
    let s = UnixStream::connect(nj.state.join("nightjar.sock")).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s
}

#[test]
fn state_files_and_run_folders_are_private_and_task_output_keeps_the_users_umask() {
    let mut nj = Nj::new("");
    nj.start();
    let out = nj.path("results").join("r1");
    let id = nj.submit(&[
        "--output",
        out.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        "echo hi; touch \"$NIGHTJAR_OUTPUT_PATH/f\"",
    ]);
    assert_eq!(nj.wait(id), 0);
    let run_dir = nj.show(id)["runs"][0]["run_dir"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(mode(&nj.state), 0o700, "state dir");
    for f in ["nightjar.db", "runs.lock", "daemon.lock"] {
        assert_eq!(mode(&nj.state.join(f)), 0o600, "{f}");
    }
    assert_eq!(mode(&nj.state.join("runs")), 0o700, "runs/");
    assert_eq!(mode(Path::new(&run_dir)), 0o700, "run folder");
    assert_eq!(mode(&Path::new(&run_dir).join("stdout.log")), 0o600);
    // The task's own files follow the umask the daemon was started with (022 here).
    // SAFETY: umask is read and restored at once.
    let mask = unsafe {
        let m = libc::umask(0o022);
        libc::umask(m);
        m
    } as u32;
    assert_eq!(mode(&out.join("f")), 0o666 & !mask, "task output file");
}

#[test]
fn a_task_runs_with_its_submitters_umask_and_a_mask_past_0777_is_refused() {
    let mut nj = Nj::new("");
    nj.start();
    let out = nj.path("results").join("shared");
    // The submitter's shell says 002; this test process (and so the daemon) 022.
    let submit = Command::new("sh")
        .arg("-c")
        .arg("umask 002; exec \"$0\" --config \"$1\" --json submit --output \"$2\" -- sh -c 'touch \"$NIGHTJAR_OUTPUT_PATH/f\"; mkdir \"$NIGHTJAR_OUTPUT_PATH/d\"'")
        .args([BIN, nj.config.to_str().unwrap(), out.to_str().unwrap()])
        .current_dir(nj.path("work"))
        .output()
        .unwrap();
    assert!(submit.status.success(), "{submit:?}");
    let v: serde_json::Value = serde_json::from_slice(&submit.stdout).unwrap();
    let id = v[0]["id"].as_i64().unwrap();
    assert_eq!(nj.wait(id), 0);
    assert_eq!(mode(&out.join("f")), 0o664, "a file under umask 002");
    assert_eq!(mode(&out.join("d")), 0o775, "a folder under umask 002");
    assert_eq!(mode(&out), 0o775, "the output folder the supervisor made");
    // A raw client's mask past 0777: refused, naming it.
    let member = serde_json::json!({
        "name": "m", "project": "default", "command": {"argv": ["true"]},
        "workdir": nj.path("work"), "env": {}, "inputs": [], "output": null,
        "priority": "normal", "resources": {}, "retry": {}, "params": {},
        "umask": 0o1777
    });
    let entry = serde_json::json!({
        "name": "m", "project": "default", "is_sweep": false, "schedule": null,
        "deps": [], "held": true, "members": [member]
    });
    let mut s = connect(&nj);
    s.write_all(&crate::harness::raw_request(
        serde_json::json!({"verb": "submit", "entries": [entry]}),
    ))
    .unwrap();
    writeln!(s).unwrap();
    let mut reply = String::new();
    BufReader::new(s).read_line(&mut reply).unwrap();
    assert!(reply.contains("umask 0o1777"), "{reply}");
    assert_eq!(
        nj.json(&["ls"]).as_array().map(Vec::len),
        Some(1),
        "nothing queued"
    );
}

#[test]
fn a_state_dir_others_can_write_is_refused_with_the_fix() {
    let nj = Nj::new("");
    std::fs::create_dir_all(&nj.state).unwrap();
    std::fs::set_permissions(&nj.state, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = Command::new(BIN)
        .args(["--config", nj.config.to_str().unwrap(), "daemon"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("chmod 700 {}", nj.state.display())),
        "{err}"
    );
    assert!(
        !nj.state.join("nightjar.db").exists(),
        "nothing was created"
    );
}

#[test]
fn secrets_in_env_are_redacted_in_show_json_and_logs_but_reach_the_task() {
    let mut nj = Nj::new("");
    nj.start();
    let id = nj.submit(&[
        "-e",
        "WANDB_API_KEY=s3cret-value",
        "-e",
        "db_password=hunter2",
        "-e",
        "LR=0.1",
        "--",
        "sh",
        "-c",
        "echo key=$WANDB_API_KEY",
    ]);
    assert_eq!(nj.wait(id), 0);
    assert_eq!(nj.ok(&["logs", &id.to_string()]).trim(), "key=s3cret-value");
    let show = nj.show(id);
    assert_eq!(show["spec"]["env"]["WANDB_API_KEY"], "<redacted>");
    assert_eq!(show["spec"]["env"]["db_password"], "<redacted>");
    assert_eq!(show["spec"]["env"]["LR"], "0.1");
    let human = nj.ok(&["show", &id.to_string()]);
    assert!(human.contains("WANDB_API_KEY=<redacted>"), "{human}");
    let everything = format!(
        "{human}{}{}",
        nj.ok(&["--json", "ls", "--all"]),
        nj.daemon_log()
    );
    for secret in ["s3cret-value", "hunter2"] {
        assert!(!everything.contains(secret), "{secret} leaked");
    }
}

#[test]
fn the_task_gets_no_daemon_env_via_its_supervisor_no_extra_fds_and_default_sighup() {
    let mut nj = Nj::new("");
    // The daemon inherits fd 7 without close-on-exec, as from a careless parent.
    let bin = wrapper(&nj, "exec 7<\"$0\"");
    nj.start_with(&bin);
    let id = nj.submit(&[
        "--",
        "sh",
        "-c",
        "tr '\\0' '\\n' < /proc/$PPID/environ | grep -c SECRET_TOKEN; \
         echo fds; ls /proc/self/fd; echo end; \
         grep SigIgn /proc/self/status",
    ]);
    assert_eq!(nj.wait(id), 0);
    let out = nj.ok(&["logs", &id.to_string()]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0], "0",
        "the supervisor's environ holds SECRET_TOKEN: {out}"
    );
    // `ls` lists its own descriptors: 0-2 and 3, the folder it is reading.
    assert_eq!(lines[1..6], ["fds", "0", "1", "2", "3"], "{out}");
    assert_eq!(
        lines[6], "end",
        "an inherited descriptor reached the task: {out}"
    );
    let ign = u64::from_str_radix(lines[7].split_whitespace().nth(1).unwrap(), 16).unwrap();
    assert_eq!(ign & 1, 0, "SIGHUP is ignored in the task: {out}");
}

#[test]
fn output_folders_are_made_by_the_supervisor_and_checked_again_against_output_roots() {
    let mut nj = Nj::new("");
    let results = nj.path("results");
    let outside = nj.path("outside");
    let text = std::fs::read_to_string(&nj.config).unwrap();
    std::fs::write(
        &nj.config,
        format!("output_roots = [\"{}\"]\n{text}", results.display()),
    )
    .unwrap();
    nj.start();
    let good = nj.submit(&["--output", "../results/${TASK_ID}", "--", "true"]);
    assert_eq!(nj.wait(good), 0);
    assert!(results.join(good.to_string()).is_dir());
    // Accepted at submit (nothing there yet), then a symlink leads outside.
    let held = results.join("later");
    let id = nj.submit(&[
        "--hold",
        "--output",
        held.join("x").to_str().unwrap(),
        "--",
        "true",
    ]);
    std::os::unix::fs::symlink(&outside, &held).unwrap();
    nj.ok(&["release", &id.to_string()]);
    assert_eq!(nj.wait(id), 127, "the run could not start");
    let msg = nj.show(id)["runs"][0]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(msg.contains("outside output_roots"), "{msg}");
    assert!(
        !outside.join("x").exists(),
        "nothing made outside the roots"
    );
}

#[test]
fn a_sweep_value_is_substituted_once_and_stays_literal() {
    let mut nj = Nj::new("");
    nj.start();
    let work = nj.path("work");
    std::fs::write(
        work.join("s.toml"),
        "command = [\"echo\", \"v=${v}\"]\n[sweep]\nv = [\"${TASK_ID}\"]\n",
    )
    .unwrap();
    let id = nj.json(&["submit", "s.toml"])[0]["id"].as_i64().unwrap();
    assert_eq!(nj.wait(id), 0);
    let member = nj.show(id)["members"][0]["id"].as_i64().unwrap();
    assert_eq!(nj.ok(&["logs", &member.to_string()]).trim(), "v=${TASK_ID}");
}

#[test]
fn every_verb_ends_quietly_when_its_reader_goes_away() {
    let mut nj = Nj::new("");
    nj.start();
    let id = nj.submit(&["--", "echo", "hi"]);
    assert_eq!(nj.wait(id), 0);
    let id = id.to_string();
    let verbs: Vec<Vec<&str>> = vec![
        vec!["show", &id],
        vec!["--json", "show", &id],
        vec!["ls", "--all"],
        vec!["--json", "ls", "--all"],
        vec!["logs", &id],
        vec!["why", &id],
        vec!["wait", &id],
        vec!["gpus"],
        vec!["plugins", "ls"],
        vec!["completions", "bash"],
    ];
    for args in verbs {
        let mut child = Command::new(BIN)
            .arg("--config")
            .arg(&nj.config)
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The reader is gone before the first byte is written.
        drop(child.stdout.take());
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        let status = child.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(
            status.success() || status.signal() == Some(libc::SIGPIPE),
            "{args:?}: {status:?} {err}"
        );
    }
}

#[test]
fn a_table_that_cannot_be_written_is_a_failure_not_a_success() {
    let mut nj = Nj::new("");
    nj.start();
    let id = nj.submit(&["--", "true"]);
    nj.wait(id);
    // A full disk under `nightjar ls > file`: the table is lost, and the
    // exit status must say so.
    let out = Command::new(BIN)
        .arg("--config")
        .arg(&nj.config)
        .args(["ls", "--all"])
        .stdout(crate::harness::dev_full())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{:?} {err}", out.status);
    assert!(err.contains("cannot write to stdout"), "{err}");
}
