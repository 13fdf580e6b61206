use super::*;

fn broker(allow: &[&str]) -> HttpBroker {
    HttpBroker::new(
        allow.iter().map(|s| s.to_string()).collect(),
        Duration::from_secs(2),
        vec!["s3cret".into()],
    )
}

fn denied(b: &HttpBroker, url: &str) -> String {
    match b.send(&Request {
        method: "POST".into(),
        url: url.into(),
        headers: vec![],
        body: vec![],
    }) {
        Err(HttpError::Denied(m)) => m,
        other => panic!("{url}: {other:?}"),
    }
}

#[test]
fn only_allow_listed_hosts_https_and_public_addresses_are_reached() {
    let b = broker(&["127.0.0.1:9", "localhost", "example.com"]);
    assert!(denied(&b, "https://other.example/x").contains("not on this notifier's allow-list"));
    assert!(denied(&b, "http://example.com/x").contains("only https"));
    assert!(denied(&b, "ftp://example.com/x").contains("only https"));
    assert!(
        denied(&b, "https://127.0.0.1:10/").contains("allow-list"),
        "the port counts"
    );
    assert!(denied(&b, "not a url").contains("not a URL"));
    // Loopback named itself: allowed (and nothing listens on port 9).
    let r = b.send(&Request {
        method: "POST".into(),
        url: "http://127.0.0.1:9/hook?key=s3cret".into(),
        headers: vec![],
        body: vec![],
    });
    match r {
        Err(HttpError::Unreachable(m)) => assert!(!m.contains("s3cret"), "redacted: {m}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn private_ranges_are_private() {
    for ip in [
        "10.1.2.3",
        "192.168.0.1",
        "172.16.5.5",
        "127.0.0.1",
        "169.254.1.1",
        "100.64.0.1",
        "::1",
        "fd00::1",
        "fe80::1",
        "::ffff:10.0.0.1",
        "::ffff:169.254.169.254",
        "::169.254.169.254",
        "64:ff9b::a9fe:a9fe",
        "2002:a9fe:a9fe::1",
        "2002:7f00:1::",
        "0.1.2.3",
        "198.18.0.1",
        "224.0.0.1",
        "ff02::1",
        "fec0::1",
    ] {
        assert!(private(ip.parse().unwrap()), "{ip}");
    }
    for ip in [
        "8.8.8.8",
        "1.1.1.1",
        "2606:4700::1111",
        "64:ff9b::808:808",
        "2002:808:808::1",
    ] {
        assert!(!private(ip.parse().unwrap()), "{ip}");
    }
}

/// A server on loopback that answers each connection with `answer`
/// (given its own port), then drips `drip` bytes one by one, 100 ms
/// apart; the number of connections it took.
fn server(
    answer: impl Fn(u16) -> String + Send + 'static,
    drip: usize,
) -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::Write;
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = std::sync::Arc::clone(&seen);
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut c) = c else { return };
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let mut head = [0u8; 4096];
            let _ = c.read(&mut head);
            let _ = c.write_all(answer(port).as_bytes());
            for _ in 0..drip {
                std::thread::sleep(Duration::from_millis(100));
                if c.write_all(b"x").is_err() {
                    break;
                }
            }
        }
    });
    (port, seen)
}

fn post(b: &HttpBroker, url: &str) -> Result<Response, HttpError> {
    b.send(&Request {
        method: "POST".into(),
        url: url.into(),
        headers: vec![],
        body: b"{}".to_vec(),
    })
}

#[test]
fn a_server_dripping_its_body_byte_by_byte_is_cut_off_at_the_timeout() {
    let (port, _) = server(
        |_| "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n".into(),
        600,
    );
    let b = HttpBroker::new(
        vec![format!("127.0.0.1:{port}")],
        Duration::from_secs(1),
        vec![],
    );
    let t = Instant::now();
    let r = post(&b, &format!("http://127.0.0.1:{port}/"));
    assert_eq!(r.err(), Some(HttpError::Timeout));
    // Cut at 1 s, not after the minute of dripping: the bounds here tell
    // those apart with room for a loaded machine (a 600 ms margin was not).
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
    // The delivery's deadline ends it sooner than a timeout of a minute.
    let b = HttpBroker::new(
        vec![format!("127.0.0.1:{port}")],
        Duration::from_secs(60),
        vec![],
    )
    .until(Instant::now() + Duration::from_millis(300));
    let t = Instant::now();
    assert_eq!(
        post(&b, &format!("http://127.0.0.1:{port}/")).err(),
        Some(HttpError::Timeout)
    );
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
}

#[test]
fn a_redirect_to_another_port_of_the_same_host_is_refused() {
    let (other, seen) = server(
        |_| "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n".into(),
        0,
    );
    let (port, _) = server(
        move |_| {
            format!(
                "HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.1:{other}/admin\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
            )
        },
        0,
    );
    let b = broker(&[&format!("127.0.0.1:{port}")]);
    match post(&b, &format!("http://127.0.0.1:{port}/hook")) {
        Err(HttpError::Denied(m)) => assert!(m.contains("allow-list"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(seen.load(std::sync::atomic::Ordering::SeqCst), 0);
    // A redirect within the allowed port is followed.
    let (port, _) = server(
        |p| {
            format!(
                "HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.1:{p}/x\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
            )
        },
        0,
    );
    let b = broker(&[&format!("127.0.0.1:{port}")]);
    match post(&b, &format!("http://127.0.0.1:{port}/hook")) {
        Err(HttpError::Denied(m)) => assert!(m.contains("more than 3"), "{m}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_notifier_sets_only_allow_listed_headers_never_host() {
    for ok in [
        "Content-Type",
        "authorization",
        "X-Api-Key",
        "Webhook-Signature",
        "ce-type",
    ] {
        assert!(header_allowed(ok), "{ok}");
    }
    for no in [
        "Host",
        "host",
        "Content-Length",
        "Transfer-Encoding",
        "Connection",
        "X-Forwarded-Host",
        "x-real-ip",
        "X-Original-URL",
        "X-HTTP-Method-Override",
        "Proxy-Authorization",
        "Cookie",
    ] {
        assert!(!header_allowed(no), "{no}");
    }
    let b = broker(&["127.0.0.1:9"]);
    let r = b.send(&Request {
        method: "POST".into(),
        url: "http://127.0.0.1:9/hook".into(),
        headers: vec![("Host".into(), "internal.example".into())],
        body: vec![],
    });
    match r {
        Err(HttpError::Denied(m)) => assert!(m.contains("header `Host`"), "{m}"),
        other => panic!("{other:?}"),
    }
}
