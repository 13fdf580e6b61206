//! `[quotas]`: a user's running tasks and GPUs are limited at dispatch with
//! a reason naming the key, and their waiting tasks at submit.

use crate::harness::Nj;

fn user() -> String {
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    let out = std::process::Command::new("id")
        .args(["-un", &uid.to_string()])
        .output();
    out.ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| uid.to_string())
}

#[test]
fn a_user_at_their_running_quota_waits_with_the_key_named_and_starts_when_one_ends() {
    let mut nj = Nj::new("slots = 4\n[quotas]\nrunning = 1\n");
    nj.start();
    let first = nj.submit(&["--", "sleep", "1"]);
    nj.until("first runs", || {
        nj.show(first)["task"]["state"] == "running"
    });
    let second = nj.submit(&["--", "true"]);
    let want = format!(
        "quota: {} has 1 task(s) running; `quotas.running` allows 1",
        user()
    );
    nj.until("the quota reason", || {
        nj.show(second)["task"]["reason"].as_str() == Some(want.as_str())
    });
    let why = nj.ok(&["why", &second.to_string()]);
    assert!(why.contains(&want), "{why}");
    assert_eq!(nj.show(second)["task"]["state"], "queued");
    assert_eq!(nj.wait(first), 0);
    assert_eq!(nj.wait(second), 0, "started once the first ended");
}

#[test]
fn a_gpu_quota_keeps_a_user_to_their_gpus_even_when_more_are_free() {
    let mut nj = Nj::new(&format!(
        "slots = 4\n[gpu]\nbackend = \"sim:2xA100-80GB\"\nhost_mem_min_free = \"1MiB\"\n[quotas]\ngpus = 4\n[quotas.user.{}]\ngpus = 1\n",
        user()
    ));
    nj.start();
    let a = nj.submit(&["--gpus", "1", "--", "sleep", "1"]);
    nj.until("a runs", || nj.show(a)["task"]["state"] == "running");
    let b = nj.submit(&["--gpus", "1", "--", "true"]);
    let key = format!("`quotas.user.{}.gpus` allows 1", user());
    nj.until("b held back by the GPU quota", || {
        nj.show(b)["task"]["reason"].as_str().is_some_and(|r| {
            r.contains("holds 1 GPU(s) and this task asks for 1") && r.contains(&key)
        })
    });
    // A CPU task is not held back by a GPU quota.
    let cpu = nj.submit(&["--", "true"]);
    assert_eq!(nj.wait(cpu), 0);
    assert_eq!(nj.wait(a), 0);
    assert_eq!(nj.wait(b), 0);
}

#[test]
fn a_submission_past_the_waiting_quota_is_refused_whole_and_nothing_is_queued() {
    let mut nj = Nj::new("[quotas]\nqueued = 3\n");
    nj.start();
    nj.submit(&["--hold", "--", "true"]);
    nj.submit(&["--hold", "--", "true"]);
    let sweep = nj.dir.path().join("work/sweep.toml");
    std::fs::write(
        &sweep,
        "name = \"s\"\ncommand = \"echo ${x}\"\n[sweep]\nx = [1, 2]\n",
    )
    .unwrap();
    let out = nj.cli(&["submit", sweep.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("has 2 task(s) waiting and this submission adds 2; `quotas.queued` allows 3"),
        "{err}"
    );
    assert_eq!(
        nj.json(&["ls"]).as_array().unwrap().len(),
        2,
        "nothing queued"
    );
    nj.submit(&["--hold", "--", "true"]);
    let out = nj.cli(&["submit", "--", "true"]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn a_retry_counts_against_the_waiting_quota_like_a_submission() {
    let mut nj = Nj::new("[quotas]\nqueued = 2\n");
    nj.start();
    let a = nj.submit(&["--hold", "--", "true"]);
    let b = nj.submit(&["--hold", "--", "true"]);
    nj.ok(&["cancel", &a.to_string()]);
    nj.ok(&["cancel", &b.to_string()]);
    nj.submit(&["--hold", "--", "true"]);
    nj.submit(&["--hold", "--", "true"]);
    // Two waiting: retrying a cancelled one would make three.
    let out = nj.cli(&["retry", &a.to_string()]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("`quotas.queued` allows 2"), "{err}");
    assert_eq!(nj.show(a)["task"]["state"], "cancelled");
}
