//! The HTTP server's connections against a real daemon: idle ones do not
//! keep health from answering and are closed, those past the limit are
//! refused, and a revoked token ends the streams it opened.

use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::harness::Nj;
use crate::http_client::*;

#[test]
fn idle_connections_do_not_keep_health_from_answering_and_are_closed() {
    let mut nj = Nj::new(
        "[http]\nlisten = \"127.0.0.1:0\"\nmax_connections = 210\nmax_connections_per_peer = 1000\nidle_timeout = \"6s\"\n",
    );
    nj.start();
    let a = addr(&nj);
    let idle: Vec<TcpStream> = (0..200).map(|_| TcpStream::connect(a).unwrap()).collect();
    let t0 = Instant::now();
    let h = call(a, "GET", "/api/v2/health", None, "");
    assert_eq!(h.status, 200);
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    // Past the limit: 503 and closed. The server answers such a connection
    // without reading it, so a request that arrives after it closed is
    // reset by the kernel, which may discard the 503 unread: a reset is a
    // refusal too (a connection it served answers 200).
    let extra: Vec<TcpStream> = (0..20).map(|_| TcpStream::connect(a).unwrap()).collect();
    let refused = extra
        .into_iter()
        .filter(|s| {
            use std::io::{Read, Write};
            let mut s = s.try_clone().unwrap();
            s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
            let req = b"GET /api/v2/health HTTP/1.1\r\nHost: nightjar\r\nConnection: close\r\n\r\n";
            let _ = s.write_all(req);
            let mut raw = Vec::new();
            match s.read_to_end(&mut raw) {
                Ok(_) => raw.starts_with(b"HTTP/1.1 503"),
                Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
            }
        })
        .count();
    assert!(refused >= 9, "{refused} of 20 refused");
    // An idle connection is closed after `idle_timeout`.
    let mut s = idle.into_iter().next().unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut buf = [0u8; 64];
    use std::io::Read;
    let n = s.read(&mut buf).unwrap_or(0);
    assert_eq!(n, 0, "{}", String::from_utf8_lossy(&buf[..n]));
    assert!(t0.elapsed() < Duration::from_secs(15));
}

#[test]
fn a_revoked_token_ends_the_streams_it_opened() {
    let mut nj = Nj::new("[http]\nlisten = \"127.0.0.1:0\"\n");
    nj.start();
    let a = addr(&nj);
    let made = nj.json(&["token", "create", "--name", "streams"]);
    let token = made["token"].as_str().unwrap().to_string();
    let mut events = open_stream(a, "/api/v2/events", &token);
    let mut seen = String::new();
    assert!(
        read_until(
            &mut events,
            &mut seen,
            "event: changed",
            Duration::from_secs(10)
        ),
        "{seen}"
    );
    let id = nj.submit(&[
        "--",
        "sh",
        "-c",
        "while true; do echo tick; sleep 0.2; done",
    ]);
    nj.until("the run starts", || {
        !nj.show(id)["runs"].as_array().unwrap().is_empty()
    });
    let mut log = open_stream(a, &format!("/api/v2/logs/{id}?follow=1"), &token);
    let mut lines = String::new();
    assert!(
        read_until(&mut log, &mut lines, "data: tick", Duration::from_secs(10)),
        "{lines}"
    );
    nj.ok(&["token", "revoke", &made["id"].to_string()]);
    // The followed log ends with an error event at its next read.
    let mut rest = String::new();
    assert!(
        read_until(
            &mut log,
            &mut rest,
            "the token was revoked",
            Duration::from_secs(10)
        ),
        "{rest}"
    );
    // The event stream ends at the next change instead of reporting it.
    nj.submit(&["--hold", "--", "true"]);
    let mut after = String::new();
    read_until(
        &mut events,
        &mut after,
        "0\r\n\r\n",
        Duration::from_secs(10),
    );
    // The last chunk (size 0) starts a line: the first thing read, or
    // after the end of an earlier chunk's line.
    assert!(
        after.starts_with("0\r\n\r\n") || after.contains("\r\n0\r\n\r\n"),
        "the stream was not closed: {after:?}"
    );
    // Changes from before the revoke may still arrive; the held task's never.
    assert!(!after.contains("\"held\""), "{after}");
    nj.ok(&["cancel", &id.to_string()]);
}
