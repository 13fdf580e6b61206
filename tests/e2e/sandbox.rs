//! The sandbox: kill path, environment, logs, pinning, GPUs.

use crate::harness::{Nj, alive, read};

/// A task whose setsid'd grandchild ignores SIGTERM and writes its pid.
fn runaway(nj: &Nj, timeout: &str) -> (i64, std::path::PathBuf) {
    let pidfile = nj.path("out").join("gc.pid");
    let script = format!(
        "setsid sh -c 'trap \"\" TERM; echo $$ > {}; exec sleep 300' & trap '' TERM; sleep 300",
        pidfile.display()
    );
    let id = nj.submit(&["--timeout", timeout, "--", "sh", "-c", &script]);
    (id, pidfile)
}

fn grandchild_dies_on_timeout(config: &str) {
    let mut nj = Nj::new(config);
    nj.start();
    let (id, pidfile) = runaway(&nj, "1s");
    nj.until("grandchild pid", || !read(&pidfile).trim().is_empty());
    let pid: i32 = read(&pidfile).trim().parse().unwrap();
    assert_eq!(nj.wait(id), 124, "timeout");
    assert!(
        !alive(pid),
        "double-forked grandchild {pid} survived the kill"
    );
    let show = nj.show(id);
    assert_eq!(show["runs"][0]["class"], "timeout");
}

#[test]
fn timeout_kills_a_double_forked_grandchild_that_ignores_sigterm() {
    grandchild_dies_on_timeout("");
}

#[test]
fn without_cgroups_the_subreaper_still_kills_the_grandchild() {
    grandchild_dies_on_timeout("[sandbox]\ngrace = \"1s\"\ncgroup = \"off\"\n");
}

#[test]
fn cancel_takes_the_same_path() {
    let mut nj = Nj::new("");
    nj.start();
    let (id, pidfile) = runaway(&nj, "1h");
    nj.until("grandchild pid", || !read(&pidfile).trim().is_empty());
    let pid: i32 = read(&pidfile).trim().parse().unwrap();
    nj.ok(&["cancel", &id.to_string()]);
    assert_eq!(nj.wait(id), 130);
    assert!(!alive(pid), "grandchild {pid} survived cancel");
    assert_eq!(nj.show(id)["runs"][0]["class"], "cancelled");
}

#[test]
fn environment_is_cleared_to_the_allow_list_plus_task_and_nightjar_vars() {
    let mut nj = Nj::new("");
    nj.start();
    let id = nj.submit(&[
        "-e",
        "FOO=bar",
        "--",
        "sh",
        "-c",
        "env; test -d ${SCRATCH} && echo scratch-ok",
    ]);
    assert_eq!(nj.wait(id), 0);
    let env = nj.ok(&["logs", &id.to_string()]);
    assert!(!env.contains("SECRET_TOKEN"), "daemon env leaked: {env}");
    assert!(env.contains("FOO=bar"), "{env}");
    assert!(env.contains(&format!("NIGHTJAR_TASK_ID={id}")), "{env}");
    assert!(env.contains("NIGHTJAR_RUN_ID="), "{env}");
    assert!(env.contains("NIGHTJAR_SCRATCH="), "{env}");
    assert!(
        env.contains("scratch-ok"),
        "the scratch folder exists when used: {env}"
    );
    let quiet = nj.submit(&["--", "env"]);
    assert_eq!(nj.wait(quiet), 0);
    let env = nj.ok(&["logs", &quiet.to_string()]);
    assert!(
        !env.contains("NIGHTJAR_SCRATCH"),
        "no scratch folder for a task that does not use it: {env}"
    );
    assert!(
        env.contains("CUDA_VISIBLE_DEVICES=\n"),
        "no GPU asked, none visible: {env}"
    );
    assert!(env.contains("PATH="), "{env}");
}

#[test]
fn variables_are_substituted_at_dispatch() {
    let mut nj = Nj::new("");
    nj.start();
    let out = nj.path("results");
    let id = nj.submit(&[
        "--output",
        &format!("{}/${{TASK_ID}}", out.display()),
        "--",
        "sh",
        "-c",
        "echo task=${TASK_ID} run=${RUN_ID} > ${OUTPUT_PATH}/who.txt",
    ]);
    assert_eq!(nj.wait(id), 0);
    let run = nj.show(id)["runs"][0]["id"].as_i64().unwrap();
    assert_eq!(
        read(&out.join(id.to_string()).join("who.txt")),
        format!("task={id} run={run}\n")
    );
}

#[test]
fn chatty_output_is_capped_and_the_tail_kept() {
    let mut nj = Nj::new("[sandbox]\ngrace = \"1s\"\nlog_cap = \"8KiB\"\n");
    nj.start();
    let id = nj.submit(&[
        "--",
        "sh",
        "-c",
        "i=0; while [ $i -lt 20000 ]; do echo line-$i; i=$((i+1)); done",
    ]);
    assert_eq!(nj.wait(id), 0);
    let log = nj.ok(&["logs", &id.to_string()]);
    assert!(log.len() <= 8192, "kept {} bytes", log.len());
    assert!(log.ends_with("line-19999\n"), "tail kept");
}

#[test]
fn cpus_pin_the_task_and_gpus_go_through_cuda_visible_devices() {
    let mut nj = Nj::new("slots = 2\ngpus = [0, 1]\ncpus = [0, 1]");
    nj.start();
    let pinned = nj.submit(&[
        "--cpus",
        "1",
        "--gpus",
        "2",
        "--",
        "sh",
        "-c",
        "grep Cpus_allowed_list /proc/self/status; echo gpus=$CUDA_VISIBLE_DEVICES; sleep 1",
    ]);
    let waits = nj.submit(&[
        "--gpus",
        "1",
        "--",
        "sh",
        "-c",
        "echo gpus=$CUDA_VISIBLE_DEVICES",
    ]);
    assert_eq!(nj.wait(pinned), 0);
    assert_eq!(nj.wait(waits), 0);
    let log = nj.ok(&["logs", &pinned.to_string()]);
    assert!(log.contains("Cpus_allowed_list:\t0\n"), "{log}");
    assert!(log.contains("gpus=0,1"), "{log}");
    let a = nj.show(pinned)["runs"][0].clone();
    let b = nj.show(waits)["runs"][0].clone();
    assert!(
        b["started_at"].as_i64() >= a["finished_at"].as_i64(),
        "GPU task waited for the GPUs"
    );
    assert!(nj.ok(&["logs", &waits.to_string()]).starts_with("gpus=0"));
    let too_many = nj.cli(&["submit", "--gpus", "3", "--", "true"]);
    assert!(String::from_utf8_lossy(&too_many.stderr).contains("3 GPU(s)"));
}

#[test]
fn memory_limit_enforcement_is_reported_in_show() {
    let mut nj = Nj::new("");
    nj.start();
    // The task prints its own cgroup's memory.max, if its cgroup has one.
    let script = r#"cg=$(sed -n 's/^0:://p' /proc/self/cgroup); for m in /sys/fs/cgroup /sys/fs/cgroup/unified; do [ -f "$m$cg/memory.max" ] && cat "$m$cg/memory.max"; done; true"#;
    let id = nj.submit(&["--mem", "1GiB", "--", "sh", "-c", script]);
    assert_eq!(nj.wait(id), 0);
    let enforced = nj.ok(&["logs", &id.to_string()]).trim() == (1u64 << 30).to_string();
    let note = nj.show(id)["runs"][0]["sandbox_note"].clone();
    let says_not_enforced = note
        .as_str()
        .unwrap_or("")
        .contains("memory limit not enforced");
    // Exactly one holds: the limit is in the task's cgroup, or `show` says it is not.
    assert_ne!(
        enforced, says_not_enforced,
        "enforced: {enforced}, note: {note}"
    );
}

/// The late-supervisor race: a daemon dies right after starting a supervisor,
/// the next daemon finds the run's lock free and marks it lost. When the
/// late supervisor then gets the lock, it must not start the task.
#[test]
fn a_supervisor_whose_run_was_declared_lost_never_starts_the_task() {
    let nj = Nj::new("");
    let state = nj.path("state");
    let lock_file = state.join("runs.lock");
    std::fs::write(&lock_file, "").unwrap();
    let run_dir = state.join("runs").join("9");
    std::fs::create_dir_all(&run_dir).unwrap();
    std::fs::write(run_dir.join("status.json"), r#"{"started_at":0,"finished_at":1,"exit_code":null,"signal":null,"ended_by":"lost","message":null,"log_dropped":0,"log_error":null}"#).unwrap();
    let marker = nj.path("out").join("ran");
    let spec = serde_json::json!({
        "run_id": 9, "task_id": 1,
        "argv": ["touch", marker],
        "env": [["PATH", "/usr/bin:/bin"]],
        "workdir": "/", "timeout_ms": null, "grace_ms": 1000, "log_cap": 65536,
        "cpus": [], "mem_limit": null, "cgroup": null, "lock_file": lock_file,
    });
    let sup = std::path::Path::new(crate::harness::BIN).with_file_name("nightjar-supervise");
    let mut child = std::process::Command::new(sup)
        .arg(&run_dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    writeln!(child.stdin.take().unwrap(), "{spec}").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert!(
        !marker.exists(),
        "the task ran although its run was declared lost"
    );
    assert!(
        out.stdout.is_empty(),
        "no status reported for a run it did not run"
    );

    // The same supervisor on a fresh run does run it and reports on stdout.
    let fresh = state.join("runs").join("10");
    let mut spec = spec;
    spec["run_id"] = 10.into();
    let mut child = std::process::Command::new(
        std::path::Path::new(crate::harness::BIN).with_file_name("nightjar-supervise"),
    )
    .arg(&fresh)
    .stdin(std::process::Stdio::piped())
    .stdout(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    writeln!(child.stdin.take().unwrap(), "{spec}").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(marker.exists(), "the task ran");
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["exit_code"], 0);
    // Nobody acknowledged (stdin closed), so it also left status.json.
    assert!(fresh.join("status.json").exists());
}
