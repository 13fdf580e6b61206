//! The client's bounds on the socket, against a daemon end that misbehaves.

use super::*;
use std::io::Write;
use std::time::Instant;

/// A client end and the daemon's end of a socket pair.
fn pair() -> (UnixStream, BufReader<UnixStream>, UnixStream) {
    let (client, daemon) = UnixStream::pair().unwrap();
    let reader = BufReader::new(client.try_clone().unwrap());
    (client, reader, daemon)
}

/// The bound a test expects to run out.
const MS: Duration = Duration::from_millis(200);

/// The bound a test expects not to reach: a daemon end on a thread of the
/// test's answers within it however loaded the machine is (a thread can
/// wait 200 ms for a core on a busy 2-core machine), and a test pays it
/// only when it fails.
const PATIENT: Duration = Duration::from_secs(30);

#[test]
fn a_reply_past_the_cap_is_refused_without_keeping_it() {
    let (client, mut reader, mut daemon) = pair();
    let writer = std::thread::spawn(move || {
        // Never a newline: a daemon (or whatever listens) that never ends its line.
        let chunk = vec![b'x'; 64 << 10];
        while daemon.write_all(&chunk).is_ok() {}
    });
    // Never stalls for long: the cap is what ends it, not a clock.
    match read_reply(&client, &mut reader, 1 << 20, Some(PATIENT), PATIENT) {
        Err(CallError::Api(e)) => {
            assert_eq!(e.kind, ErrorKind::Other);
            assert!(e.message.contains("longer than 1 MiB"), "{}", e.message);
        }
        other => panic!("{other:?}"),
    }
    drop((client, reader));
    writer.join().unwrap();
}

#[test]
fn a_reply_that_stops_mid_line_or_never_begins_times_out() {
    let (client, mut reader, mut daemon) = pair();
    daemon.write_all(br#"{"v":2,"ok":"#).unwrap();
    let t0 = Instant::now();
    match read_reply(&client, &mut reader, 1 << 20, None, MS) {
        Err(CallError::Io(m)) => assert!(m.contains("stopped after 12 bytes"), "{m}"),
        other => panic!("{other:?}"),
    }
    // Timed out, not blocked for ever: a bound no loaded machine reaches.
    assert!(t0.elapsed() < PATIENT, "{:?}", t0.elapsed());
    let (client, mut reader, _daemon) = pair();
    match read_reply(&client, &mut reader, 1 << 20, Some(MS), MS) {
        Err(CallError::Io(m)) => assert!(m.contains("did not answer within"), "{m}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_request_the_daemon_does_not_read_times_out_instead_of_blocking_for_ever() {
    let (client, daemon) = UnixStream::pair().unwrap();
    let mut c = Client::on(client, MS, MS).unwrap();
    // Far more than a socket buffer holds; the daemon never reads.
    let t0 = Instant::now();
    match c.call(crate::api::Wait {
        ids: vec![1_000_000; 100_000],
    }) {
        Err(CallError::Io(m)) => assert!(m.contains("took none of the request"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert!(t0.elapsed() < PATIENT, "{:?}", t0.elapsed());
    drop(daemon);
}

#[test]
fn a_socket_that_cannot_be_reached_says_why_unless_nothing_is_there() {
    let dir = tempfile::tempdir().unwrap();
    let gone = Client::connect(&dir.path().join("nightjar.sock"), "")
        .err()
        .unwrap();
    assert!(gone.cause.is_empty(), "{gone}");
    let text = gone.to_string();
    assert!(
        text.contains("not running") && text.contains("Start it"),
        "{text}"
    );
    // Too long for a socket address: said, not "start a daemon".
    let long = dir.path().join("x".repeat(200)).join("nightjar.sock");
    let text = Client::connect(&long, "").err().unwrap().to_string();
    assert!(
        text.starts_with("cannot reach the nightjar daemon's socket"),
        "{text}"
    );
    assert!(!text.contains("Start it"), "{text}");
}

#[test]
fn a_slow_reply_that_keeps_coming_and_a_closed_line_are_read_whole() {
    let (client, mut reader, mut daemon) = pair();
    // Seven parts 300 ms apart: the whole reply takes longer than the
    // first byte's bound and the stall bound (1.5 s each), every gap far
    // less than the stall bound (a writer thread late by 200 ms on a busy
    // machine does not make a stall).
    let gap = Duration::from_millis(300);
    let bound = 5 * gap;
    let t0 = Instant::now();
    let writer = std::thread::spawn(move || {
        let parts = [
            &b"{"[..],
            b"\"v\"",
            b":2",
            b",",
            b"\"ok\":",
            b"3",
            b"}\nnext",
        ];
        for (i, part) in parts.into_iter().enumerate() {
            if i > 0 {
                std::thread::sleep(gap);
            }
            daemon.write_all(part).unwrap();
        }
    });
    let line = read_reply(&client, &mut reader, 1 << 20, Some(bound), bound).unwrap();
    assert_eq!(line, br#"{"v":2,"ok":3}"#);
    assert!(t0.elapsed() > bound, "longer than either bound in all");
    writer.join().unwrap();
    // The rest up to the close: a reply without its newline still counts.
    assert_eq!(
        read_reply(&client, &mut reader, 1 << 20, None, MS).unwrap(),
        b"next"
    );
    assert!(
        read_reply(&client, &mut reader, 1 << 20, None, MS)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn not_running_names_every_place_looked_at_and_the_right_unit() {
    let own = NotRunning {
        socket: "/home/a/.local/state/nightjar/nightjar.sock".into(),
        hint: String::new(),
        cause: String::new(),
        also: Some(crate::paths::SYSTEM_SOCKET.into()),
    };
    let text = own.to_string();
    assert!(
        text.contains("/home/a/.local/state/nightjar/nightjar.sock")
            && text.contains("/run/nightjar/nightjar.sock")
            && text.contains("NIGHTJAR_SOCKET"),
        "{text}"
    );
    let system = NotRunning {
        socket: crate::paths::SYSTEM_SOCKET.into(),
        hint: String::new(),
        cause: String::new(),
        also: None,
    };
    assert!(
        system.to_string().contains("`systemctl start nightjar`"),
        "{system}"
    );
}

/// A daemon from before the list verbs were renamed: it knows `list` and
/// `queue`, and answers any other verb as serde does, naming it unknown.
/// Returns the verbs it was sent.
fn older_daemon(daemon: UnixStream, lines: usize) -> std::thread::JoinHandle<Vec<String>> {
    std::thread::spawn(move || {
        let mut reader = BufReader::new(daemon.try_clone().unwrap());
        let mut writer = daemon;
        let mut seen = Vec::new();
        for _ in 0..lines {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                break;
            }
            let v: serde_json::Value = serde_json::from_str(&line).unwrap();
            let verb = v["req"]["verb"].as_str().unwrap_or_default().to_string();
            let reply = match verb.as_str() {
                "list" => r#"{"v":2,"ok":[]}"#.to_string(),
                other => format!(
                    r#"{{"v":2,"error":"bad request: unknown variant `{other}`, expected one of `ping`, `list`","kind":"bad-request"}}"#
                ),
            };
            writeln!(writer, "{reply}").unwrap();
            seen.push(verb);
        }
        seen
    })
}

#[test]
fn a_renamed_verb_is_sent_again_under_its_earlier_name_to_an_older_daemon() {
    let (client, daemon) = UnixStream::pair().unwrap();
    let seen = older_daemon(daemon, 2);
    let mut c = Client::on(client, PATIENT, PATIENT).unwrap();
    let rows = c
        .call(crate::api::TaskList::default())
        .expect("answered under `list`");
    assert!(rows.is_empty());
    drop(c);
    assert_eq!(seen.join().unwrap(), ["task-list", "list"]);
}

#[test]
fn a_verb_never_renamed_is_not_sent_twice_and_its_refusal_stands() {
    let (client, daemon) = UnixStream::pair().unwrap();
    let seen = older_daemon(daemon, 2);
    let mut c = Client::on(client, PATIENT, PATIENT).unwrap();
    match c.call(crate::api::Queue::default()) {
        Err(CallError::Api(e)) => {
            assert_eq!(e.kind, ErrorKind::BadRequest);
            assert!(
                e.message.contains("unknown variant `queue`"),
                "{}",
                e.message
            );
        }
        other => panic!("{other:?}"),
    }
    drop(c);
    assert_eq!(seen.join().unwrap(), ["queue"]);
}
