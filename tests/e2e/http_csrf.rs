//! Cross-site requests: a browser sends the dashboard's session cookie with
//! any page's request to the API's port (the same *site* for `SameSite` as
//! any other 127.0.0.1 port), so the API changes nothing on the cookie
//! alone and takes only JSON bodies.

use crate::harness::Nj;
use crate::http_client::*;

#[test]
fn a_post_with_only_the_session_cookie_or_a_form_body_changes_nothing() {
    let mut nj = Nj::new("[http]\nlisten = \"127.0.0.1:0\"\n");
    nj.start();
    let a = addr(&nj);
    let id = nj.submit(&["--hold", "--", "true"]);
    let made = nj.json(&["token", "create", "--name", "browser"]);
    let token = made["token"].as_str().unwrap().to_string();
    let cookie = format!("Cookie: nj_session={token}");
    let body = format!("{{\"id\":{id}}}");
    // What another page's fetch or form makes the browser send.
    for (headers, body) in [
        (
            vec![cookie.clone(), "Content-Type: text/plain".into()],
            body.clone(),
        ),
        (
            vec![cookie.clone(), "Content-Type: application/json".into()],
            body.clone(),
        ),
        (vec![cookie.clone()], String::new()),
    ] {
        let r = call_with(a, "POST", "/api/v2/cancel", &headers, &body);
        assert_eq!(r.status, 401, "{headers:?}: {}", r.text());
        assert!(r.text().contains("cookie"), "{}", r.text());
    }
    let r = call_with(
        a,
        "POST",
        "/api/v2/token-create",
        &[cookie.clone(), "Content-Type: application/json".into()],
        r#"{"name":"minted"}"#,
    );
    assert_eq!(r.status, 401, "{}", r.text());
    // A bearer token with a form's or text's type: 415, nothing read.
    for kind in [
        "application/x-www-form-urlencoded",
        "text/plain",
        "multipart/form-data; boundary=x",
    ] {
        let r = call_with(
            a,
            "POST",
            "/api/v2/cancel",
            &[
                format!("Authorization: Bearer {token}"),
                format!("Content-Type: {kind}"),
            ],
            &body,
        );
        assert_eq!(r.status, 415, "{kind}: {}", r.text());
    }
    // Not even a bearer token mints tokens over HTTP.
    let r = call(
        a,
        "POST",
        "/api/v2/token-create",
        Some(&token),
        r#"{"name":"minted"}"#,
    );
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(
        nj.show(id)["task"]["state"],
        "held",
        "nothing was cancelled"
    );
    let tokens = nj.json(&["token", "ls"]);
    assert_eq!(
        tokens.as_array().map(Vec::len),
        Some(1),
        "no token minted: {tokens}"
    );
    // The cookie still opens the dashboard's GET streams; a bearer POST works.
    let mut s = std::net::TcpStream::connect(a).unwrap();
    send(
        &mut s,
        "GET",
        "/api/v2/events",
        std::slice::from_ref(&cookie),
        b"",
    );
    let mut seen = String::new();
    assert!(
        read_until(
            &mut s,
            &mut seen,
            "changed",
            std::time::Duration::from_secs(10)
        ),
        "the dashboard's event stream opens on its cookie: {seen}"
    );
    let ok = call(a, "POST", "/api/v2/cancel", Some(&token), &body);
    assert_eq!(ok.status, 200, "{}", ok.text());
    assert_eq!(nj.show(id)["task"]["state"], "cancelled");
}

#[test]
fn one_peer_cannot_hold_every_connection_and_one_user_every_stream() {
    let mut nj = Nj::new(
        "[http]\nlisten = \"127.0.0.1:0\"\nmax_connections_per_peer = 3\nmax_streams_per_user = 2\n",
    );
    nj.start();
    let a = addr(&nj);
    // Three half-open connections (nothing sent) from 127.0.0.1: the fourth is 429.
    let held: Vec<std::net::TcpStream> = (0..3)
        .map(|_| std::net::TcpStream::connect(a).unwrap())
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(300));
    // The answer comes unasked, and the connection is closed.
    let mut fourth = std::net::TcpStream::connect(a).unwrap();
    let mut said = String::new();
    read_until(
        &mut fourth,
        &mut said,
        "}",
        std::time::Duration::from_secs(10),
    );
    assert!(said.starts_with("HTTP/1.1 429"), "{said}");
    assert!(said.contains("max_connections_per_peer"), "{said}");
    drop(held);
    nj.until("a slot is free again", || {
        try_get_status(a, "/api/v2/health") == Some(200)
    });
    // Two event streams of one user: the third is 429.
    let made = nj.json(&["token", "create", "--name", "streams"]);
    let token = made["token"].as_str().unwrap().to_string();
    let mut open: Vec<std::net::TcpStream> = Vec::new();
    for _ in 0..2 {
        let mut s = open_stream(a, "/api/v2/events", &token);
        let mut head = String::new();
        assert!(read_until(
            &mut s,
            &mut head,
            "\r\n\r\n",
            std::time::Duration::from_secs(10)
        ));
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        open.push(s);
    }
    let mut s = open_stream(a, "/api/v2/events", &token);
    let mut head = String::new();
    read_until(
        &mut s,
        &mut head,
        "max_streams_per_user",
        std::time::Duration::from_secs(10),
    );
    assert!(head.starts_with("HTTP/1.1 429"), "{head}");
}
