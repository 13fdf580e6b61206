//! The API socket's limits against a real daemon: idle connections closed
//! while a long wait gets its reply, connections past the limit refused
//! and recovered from, and a daemon out of descriptors backing off.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use crate::hardening::{connect, wrapper};
use crate::harness::{Nj, read};

#[test]
fn idle_connections_are_closed_but_a_long_wait_gets_its_reply() {
    let mut nj = Nj::new("[api]\nidle_timeout = \"1s\"\n");
    nj.start();
    let mut idle = connect(&nj);
    let mut buf = [0u8; 16];
    assert_eq!(idle.read(&mut buf).unwrap(), 0, "closed after idling");
    let id = nj.submit(&["--", "sleep", "3"]);
    let mut s = connect(&nj);
    s.write_all(&crate::harness::raw_request(
        serde_json::json!({"verb": "wait", "ids": [id]}),
    ))
    .unwrap();
    writeln!(s).unwrap();
    let mut reply = String::new();
    BufReader::new(s).read_line(&mut reply).unwrap();
    assert!(reply.contains("succeeded"), "{reply}");
}

#[test]
fn connections_beyond_the_limit_get_an_error_and_the_daemon_recovers() {
    let mut nj = Nj::new("[api]\nmax_connections = 2\n");
    nj.start();
    let held: Vec<UnixStream> = (0..2).map(|_| connect(&nj)).collect();
    nj.until("both connections accepted", || {
        let out = nj.cli(&["ls"]);
        String::from_utf8_lossy(&out.stderr).contains("too many connections")
    });
    let err = String::from_utf8_lossy(&nj.cli(&["ls"]).stderr).into_owned();
    assert!(err.contains("at most 2 at once"), "{err}");
    drop(held);
    nj.until("a slot is free again", || nj.cli(&["ls"]).status.success());
}

#[test]
fn out_of_descriptors_the_daemon_backs_off_instead_of_spinning_and_recovers() {
    let mut nj = Nj::new("");
    // Soft limit below the hard one: the daemon raises it itself.
    let bin = wrapper(&nj, "ulimit -S -n 32; ulimit -H -n 64");
    nj.start_with(&bin);
    let ping = {
        let mut s = connect(&nj);
        s.write_all(&crate::harness::raw_request(
            serde_json::json!({"verb": "ping"}),
        ))
        .unwrap();
        writeln!(s).unwrap();
        let mut r = String::new();
        BufReader::new(s).read_line(&mut r).unwrap();
        serde_json::from_str::<serde_json::Value>(&r).unwrap()["ok"]["pid"]
            .as_i64()
            .unwrap()
    };
    let limits = read(Path::new(&format!("/proc/{ping}/limits")));
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    let nums: Vec<&str> = line.split_whitespace().skip(3).take(2).collect();
    assert_eq!(nums, vec!["64", "64"], "soft limit raised to hard: {line}");
    // Exhaust its descriptors; the accept loop must back off, not spin.
    let conns: Vec<UnixStream> = (0..80)
        .filter_map(|_| UnixStream::connect(nj.state.join("nightjar.sock")).ok())
        .collect();
    nj.until("accept failures reported", || {
        nj.daemon_log().contains("accept failed")
    });
    std::thread::sleep(Duration::from_millis(1500));
    let reports = nj.daemon_log().matches("accept failed").count();
    assert!(
        reports <= 2,
        "{reports} log lines: one per backoff period expected"
    );
    drop(conns);
    nj.until("the daemon answers again", || {
        nj.cli(&["ls"]).status.success()
    });
}
