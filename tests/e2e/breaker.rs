//! What a hostile reviewer broke: a `wait` naming one task 200,000 times
//! (each lookup under the store lock kept `ls` and run recording waiting),
//! and, with cgroups off, a task that leaves its session (`setsid`) and then
//! kills its supervisor (the escaped process lived on while the task ran
//! again).

use std::io::{BufRead, BufReader, Write};
use std::time::{Duration, Instant};

use crate::harness::{Nj, alive};
use crate::hostile_inputs::connect;

#[test]
fn a_wait_naming_one_task_200000_times_answers_once_and_keeps_ls_quick() {
    let mut nj = Nj::new("");
    nj.start();
    let id = nj.submit(&["--", "true"]);
    assert_eq!(nj.wait(id), 0);
    let ids = vec![id; 200_000];
    let line = crate::harness::raw_request(serde_json::json!({ "verb": "wait", "ids": ids }));
    assert!(line.len() < 1 << 20, "within the line limit");
    let mut s = connect(&nj);
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    let waiter = std::thread::spawn(move || {
        s.write_all(&line).and_then(|_| s.write_all(b"\n")).unwrap();
        let mut reply = String::new();
        BufReader::new(s).read_line(&mut reply).unwrap();
        reply
    });
    std::thread::sleep(Duration::from_millis(200));
    let t0 = Instant::now();
    nj.ok(&["ls", "--all"]);
    let ls = t0.elapsed();
    let reply: serde_json::Value = serde_json::from_str(&waiter.join().unwrap()).unwrap();
    let results = reply["ok"].as_array().expect("a wait result");
    assert_eq!(results.len(), 1, "each task once");
    assert_eq!(results[0]["id"], id);
    assert_eq!(results[0]["state"], "succeeded");
    assert!(
        ls < Duration::from_secs(3),
        "ls waited {ls:?} behind the wait"
    );
}

#[test]
fn without_cgroups_a_task_that_leaves_its_session_and_kills_its_supervisor_leaves_nothing_alive() {
    let mut nj = Nj::new("[sandbox]\ncgroup = \"off\"\ngrace = \"1s\"\n");
    nj.start();
    let pidfile = nj.path("out").join("escaped.pid");
    // The first attempt starts a process in a session of its own, records its
    // pid, kills its supervisor and exits; a second attempt would just end.
    let script = format!(
        "if [ -e {p} ]; then exit 0; fi; \
         setsid sh -c 'echo $$ > {p}.tmp; mv {p}.tmp {p}; exec sleep 300' </dev/null >/dev/null 2>&1 & \
         while [ ! -e {p} ]; do sleep 0.05; done; kill -9 $PPID; exit 0",
        p = pidfile.display()
    );
    let id = nj.submit(&["--attempts", "3", "--", "sh", "-c", &script]);
    nj.until("the escaped process is started", || pidfile.exists());
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    nj.until("the first run is recorded", || {
        nj.show(id)["runs"]
            .as_array()
            .is_some_and(|r| r.first().is_some_and(|r| r["state"] == "finished"))
    });
    let run = &nj.show(id)["runs"][0];
    assert_eq!(run["class"], "lost", "{run}");
    let t0 = Instant::now();
    while alive(pid) && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let escaped = alive(pid);
    if escaped {
        crate::harness::unsafe_kill(pid, libc::SIGKILL);
    }
    assert!(
        !escaped,
        "a process of the run outlived it in a session of its own, and the task may run again"
    );
}
