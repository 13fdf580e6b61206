//! The HTTP server against hostile clients on raw TCP: bodies that never
//! finish, oversized chunked bodies, deep JSON, odd bytes in every part of
//! a request. Each must be answered (or the connection closed) without
//! holding a connection slot and without harming the daemon.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use crate::harness::Nj;
use crate::http_client::*;

fn daemon(extra: &str) -> (Nj, SocketAddr) {
    let mut nj = Nj::new(&format!("[http]\nlisten = \"127.0.0.1:0\"\n{extra}"));
    nj.start();
    let a = addr(&nj);
    (nj, a)
}

/// Whatever comes back on `s` within `limit` (until EOF).
fn drain(s: &mut TcpStream, limit: Duration) -> Vec<u8> {
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let (t0, mut out, mut buf) = (Instant::now(), Vec::new(), [0u8; 8192]);
    while t0.elapsed() < limit {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                out.extend_from_slice(&buf[..n]);
                // A whole response on a connection kept open: nothing more
                // is coming (waiting out `limit` cost 5 s a request).
                if whole_response(&out) {
                    break;
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => break,
        }
    }
    out
}

/// Whether `got` holds one whole HTTP response: its head, and its body as
/// long as `Content-Length` says. Any other response (chunked, or with no
/// length) ends at the connection's close.
fn whole_response(got: &[u8]) -> bool {
    let Some(head_end) = got.windows(4).position(|w| w == b"\r\n\r\n") else {
        return false;
    };
    let head = String::from_utf8_lossy(&got[..head_end]).to_ascii_lowercase();
    if head.contains("transfer-encoding") {
        return false;
    }
    let body = got.len().saturating_sub(head_end + 4);
    head.lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())
        .is_some_and(|n| body >= n)
}

#[test]
fn a_body_that_never_arrives_does_not_hold_a_connection() {
    let (_nj, a) = daemon("max_connections = 3\nidle_timeout = \"2s\"\n");
    // Every slot taken by a request whose body is promised but never sent
    // (the login form needs no token).
    let mut slow: Vec<TcpStream> = (0..3)
        .map(|_| {
            let mut s = TcpStream::connect(a).unwrap();
            s.write_all(b"POST /login HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nt")
                .unwrap();
            s
        })
        .collect();
    // The body is dribbled a byte a second, past the timeout.
    for _ in 0..4 {
        std::thread::sleep(Duration::from_secs(1));
        for s in &mut slow {
            let _ = s.write_all(b"o");
        }
    }
    let h = call(a, "GET", "/api/v2/health", None, "");
    assert_eq!(h.status, 200, "{}", h.text());
    for mut s in slow {
        let got = String::from_utf8_lossy(&drain(&mut s, Duration::from_secs(3))).into_owned();
        assert!(got.is_empty() || got.starts_with("HTTP/1.1 408"), "{got}");
    }
}

#[test]
fn a_huge_chunked_body_is_cut_at_the_limit() {
    let (nj, a) = daemon("");
    let token = nj.json(&["token", "create"])["token"]
        .as_str()
        .unwrap()
        .to_string();
    for (path, auth) in [
        ("/login", String::new()),
        (
            "/api/v2/submit",
            format!("Authorization: Bearer {token}\r\n"),
        ),
    ] {
        let mut s = TcpStream::connect(a).unwrap();
        let head =
            format!("POST {path} HTTP/1.1\r\nHost: x\r\n{auth}Transfer-Encoding: chunked\r\n\r\n");
        s.write_all(head.as_bytes()).unwrap();
        let mut w = s.try_clone().unwrap();
        w.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
        // A gigabyte in 64 KiB chunks, unless the server stops reading.
        let writer = std::thread::spawn(move || {
            let chunk = format!("10000\r\n{}\r\n", "[".repeat(0x10000));
            let mut sent = 0u64;
            while sent < 1 << 30 {
                if w.write_all(chunk.as_bytes()).is_err() {
                    break;
                }
                sent += 0x10000;
            }
            sent
        });
        let got = String::from_utf8_lossy(&drain(&mut s, Duration::from_secs(30))).into_owned();
        assert!(got.starts_with("HTTP/1.1 413"), "{path}: {got}");
        drop(s);
        let sent = writer.join().unwrap();
        assert!(sent < 256 << 20, "{path}: the server read {sent} bytes");
    }
    assert_eq!(call(a, "GET", "/api/v2/health", None, "").status, 200);
}

#[test]
fn deep_json_and_odd_bytes_are_refused_cleanly() {
    let (nj, a) = daemon("");
    let token = nj.json(&["token", "create"])["token"]
        .as_str()
        .unwrap()
        .to_string();
    let auth = [
        format!("Authorization: Bearer {token}"),
        "Content-Type: application/json".to_string(),
    ];
    for body in [
        "[".repeat(100_000),
        format!("{{\"id\":{}}}", "[".repeat(100_000)),
        "{\"a\":\"\u{0}\"}".into(),
    ] {
        let r = call_with(a, "POST", "/api/v2/show", &auth, &body);
        assert_eq!(r.status, 400, "{}", r.text());
        r.json();
    }
    // Raw requests: each is answered below 500 or closed, never crashes.
    let cookie = format!("Cookie: {}nj_session=x\r\n", "a=b;".repeat(10_000));
    let big_auth = format!("Authorization: Bearer {}\r\n", "a".repeat(1 << 20));
    let raw: Vec<Vec<u8>> = vec![
        b"GET /task/\xff\xfe HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        b"GET /task/%ff%fe HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        b"GET /task/..%2f..%2fetc%2fpasswd HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        b"GET /assets/../../../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        b"GET /?page=%ff HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        b"GET /?page=-1 HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        b"GET /?page=18446744073709551615 HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        b"GET /?page=99999999999999999999999999 HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        b"GET /runs?since=%00 HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        b"GET /runs?since=9999999999999999y HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        b"GET /runs?since=-262144-01-01 HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        b"GET /api/v2/logs/99999999999999999999?since=%ff HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        b"GET / HTTP/1.1\r\nHost: x\r\nCookie: nj_session=\xff\x00\r\n\r\n".to_vec(),
        b"GET / HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n".to_vec(),
        format!("GET / HTTP/1.1\r\nHost: x\r\n{cookie}\r\n").into_bytes(),
        format!("GET /api/v2/whoami HTTP/1.1\r\nHost: x\r\n{big_auth}\r\n").into_bytes(),
        b"POST /login HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nabcdef".to_vec(),
        b"POST /login HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".to_vec(),
        b"POST /login HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n".to_vec(),
        b"POST /login HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n".to_vec(),
    ];
    for (i, req) in raw.iter().enumerate() {
        let mut s = TcpStream::connect(a).unwrap();
        let _ = s.write_all(req);
        let got = drain(&mut s, Duration::from_secs(5));
        let text = String::from_utf8_lossy(&got);
        let status: u16 = text.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
        assert!(status < 500, "request {i}: {text}");
        assert!(!text.contains("root:x:0"), "request {i}: {text}");
    }
    assert_eq!(call(a, "GET", "/api/v2/health", None, "").status, 200);
}

#[test]
fn headers_dribbled_a_byte_a_second_are_cut_at_the_idle_timeout() {
    let (_nj, a) = daemon("idle_timeout = \"2s\"\n");
    let mut s = TcpStream::connect(a).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(1))).unwrap();
    let t0 = Instant::now();
    let head = b"GET /api/v2/health HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaa";
    let mut closed = false;
    for b in head {
        if s.write_all(&[*b]).is_err() {
            closed = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
        if t0.elapsed() > Duration::from_secs(8) {
            break;
        }
    }
    let got = drain(&mut s, Duration::from_secs(2));
    assert!(
        closed
            || t0.elapsed() < Duration::from_secs(8)
            || got.is_empty()
            || got.starts_with(b"HTTP/1.1 408"),
        "{}",
        String::from_utf8_lossy(&got)
    );
    // The connection is gone: a last byte is refused or gets nothing.
    let _ = s.write_all(b"\r\n\r\n");
    let got = drain(&mut s, Duration::from_secs(2));
    assert!(
        !got.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&got)
    );
}

#[test]
fn one_local_users_connections_do_not_take_another_local_users_share() {
    let u = crate::users_harness::users("local HTTP clients are counted per local user");
    let (_nj, a) = daemon("max_connections_per_peer = 3\nidle_timeout = \"20s\"\n");
    // Alice holds three idle connections and tries a fourth.
    let script = format!(
        "import socket, sys, time\n\
         held = [socket.create_connection(('{ip}', {port})) for _ in range(3)]\n\
         time.sleep(0.3)\n\
         extra = socket.create_connection(('{ip}', {port}))\n\
         extra.settimeout(5)\n\
         print(extra.recv(200).decode(errors='replace').splitlines()[0], flush=True)\n\
         sys.stdin.read()\n",
        ip = a.ip(),
        port = a.port()
    );
    let mut alice =
        crate::users_harness::setpriv(&u.alice, std::path::Path::new("/usr/bin/python3"), None)
            .args(["-c", &script])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
    let mut first = String::new();
    {
        use std::io::BufRead;
        let out = alice.stdout.as_mut().unwrap();
        std::io::BufReader::new(out).read_line(&mut first).unwrap();
    }
    assert!(
        first.starts_with("HTTP/1.1 429"),
        "her fourth is refused: {first}"
    );
    // Another local user (root, this test) still gets in while she holds hers.
    let h = call(a, "GET", "/api/v2/health", None, "");
    assert_eq!(h.status, 200, "{}", h.text());
    drop(alice.stdin.take());
    let _ = alice.wait();
}
