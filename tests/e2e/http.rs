//! The HTTP API against a real daemon: tokens made through the CLI, the
//! protocol's verbs over HTTP answered as the socket answers them, 401 and
//! 403, the trusted proxy header, the event and log streams, the body
//! limit, and the OpenAPI file against the live router (connections:
//! `http_connections.rs`).

use std::net::{IpAddr, Ipv4Addr, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{BIN, Nj};
use crate::http_client::*;

const HTTP: &str = "[http]\nlisten = \"127.0.0.1:0\"\ntrusted_proxy_header = \"X-Remote-User\"\ntrusted_proxies = [\"127.0.0.2\"]\n";

/// A world whose socket sits in a folder every user may reach (made
/// 0666 like a system daemon's), so `nobody` can make a token too.
fn world() -> (Nj, tempfile::TempDir) {
    let public = tempfile::tempdir().unwrap();
    std::fs::set_permissions(public.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut nj = Nj::new(HTTP);
    let sock = public.path().join("nj.sock");
    let text = std::fs::read_to_string(&nj.config).unwrap();
    std::fs::write(
        &nj.config,
        format!("socket = \"{}\"\n{text}", sock.display()),
    )
    .unwrap();
    std::fs::write(
        public.path().join("client.toml"),
        format!("socket = \"{}\"\n", sock.display()),
    )
    .unwrap();
    nj.start();
    std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o666)).unwrap();
    (nj, public)
}

/// A token for `nobody` (uid 65534), made through the CLI run as them.
fn nobodys_token(public: &std::path::Path) -> String {
    let out = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            BIN,
            "--config",
        ])
        .arg(public.join("client.toml"))
        .args(["--json", "token", "create", "--name", "nobody's"])
        .current_dir("/")
        .output()
        .expect("run setpriv");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["token"].as_str().unwrap().to_string()
}

fn entry(nj: &Nj, name: &str, script: &str, held: bool) -> Value {
    json!({
        "name": name, "project": "default", "is_sweep": false, "schedule": null,
        "deps": [], "held": held,
        "members": [{
            "name": name, "project": "default",
            "command": {"argv": ["sh", "-c", script]},
            "workdir": nj.path("work"), "env": {}, "inputs": [], "output": null,
            "priority": "normal", "resources": {}, "retry": {}, "params": {}
        }]
    })
}

#[test]
fn the_http_api_serves_the_protocol_to_token_holders_only() {
    let (nj, public) = world();
    let a = addr(&nj);
    let h = call(a, "GET", "/api/v2/health", None, "");
    assert_eq!(
        (h.status, h.json()["ok"]["status"].as_str()),
        (200, Some("ok")),
        "{}",
        h.text()
    );

    // No token, a malformed one, an unknown one: 401 saying how to get one.
    for token in [
        None,
        Some("garbage"),
        Some(&*format!("nj_{}", "0".repeat(64))),
    ] {
        let r = call(a, "POST", "/api/v2/task-list", token, "{}");
        assert_eq!(r.status, 401, "{token:?}: {}", r.text());
        assert!(
            r.json()["error"]
                .as_str()
                .unwrap()
                .contains("nightjar token create"),
            "{}",
            r.text()
        );
    }
    let made = nj.json(&["token", "create", "--name", "tests"]);
    let token = made["token"].as_str().unwrap().to_string();
    let t = Some(token.as_str());
    let me = call(a, "POST", "/api/v2/whoami", t, "");
    assert_eq!(me.status, 200, "{}", me.text());
    assert_eq!(me.json()["ok"]["uid"], 0);

    // The event stream: one `changed` at once, another after a submit.
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
    assert!(seen.contains("text/event-stream"), "{seen}");
    let first = seen.len();

    let script = "for i in 1 2 3; do echo line$i; sleep 0.3; done";
    let body = json!({"entries": [entry(&nj, "web", script, false)]}).to_string();
    let sub = call(a, "POST", "/api/v2/submit", t, &body);
    assert_eq!(sub.status, 200, "{}", sub.text());
    let id = sub.json()["ok"][0].as_i64().unwrap();
    let mut rest = String::new();
    assert!(
        read_until(
            &mut events,
            &mut rest,
            "event: changed",
            Duration::from_secs(10)
        ),
        "{rest}"
    );
    assert!(first > 0 && rest.contains("\"counts\""), "{rest}");

    // The log, followed until the run ends.
    nj.until("the run starts", || {
        !nj.show(id)["runs"].as_array().unwrap().is_empty()
    });
    let mut log = open_stream(a, &format!("/api/v2/logs/{id}?follow=1"), &token);
    let mut lines = String::new();
    assert!(
        read_until(&mut log, &mut lines, "event: end", Duration::from_secs(60)),
        "{lines}"
    );
    for l in ["data: line1\n", "data: line2\n", "data: line3\n"] {
        assert!(lines.contains(l), "{l:?} missing in {lines}");
    }
    assert_eq!(nj.wait(id), 0);

    // show and list over HTTP are what the CLI's --json prints.
    let show = call(a, "POST", "/api/v2/show", t, &format!("{{\"id\":{id}}}"));
    assert_eq!(show.json()["ok"], nj.show(id));
    let filter = r#"{"filter":{"state":null,"project":null,"all":true,"since":0}}"#;
    let list = call(a, "POST", "/api/v2/task-list", t, filter);
    assert_eq!(list.json()["ok"], nj.json(&["ls", "--all"]));
    let missing = call(a, "POST", "/api/v2/show", t, r#"{"id":999999}"#);
    assert_eq!(
        (missing.status, missing.json()["kind"].as_str()),
        (404, Some("not-found"))
    );
    let bad = call(a, "POST", "/api/v2/show", t, r#"{"id":"x"}"#);
    assert_eq!(
        (bad.status, bad.json()["kind"].as_str()),
        (400, Some("bad-request"))
    );

    // Another user may not cancel root's task, nor read its log: 403.
    let held = nj.submit(&["--hold", "--", "true"]);
    let other = nobodys_token(public.path());
    let who = call(a, "POST", "/api/v2/whoami", Some(&other), "");
    assert_eq!(who.json()["ok"]["uid"], 65534, "{}", who.text());
    let c = call(
        a,
        "POST",
        "/api/v2/cancel",
        Some(&other),
        &format!("{{\"id\":{held}}}"),
    );
    assert_eq!(
        (c.status, c.json()["kind"].as_str()),
        (403, Some("forbidden")),
        "{}",
        c.text()
    );
    let l = call(a, "GET", &format!("/api/v2/logs/{id}"), Some(&other), "");
    assert_eq!(l.status, 403, "{}", l.text());
    assert_eq!(nj.show(held)["task"]["state"], "held");

    // The dashboard's cookie carries the same token, but changes nothing:
    // a POST on it alone is refused (any page can make the browser send it).
    let r = call_with(
        a,
        "POST",
        "/api/v2/whoami",
        &[format!("Cookie: a=b; nj_session={token}")],
        "",
    );
    assert_eq!(r.status, 401, "{}", r.text());

    // The proxy header: believed from 127.0.0.2 (configured), not from 127.0.0.1.
    let proxied = |from: Ipv4Addr, user: &str| {
        let mut s = connect_from(IpAddr::V4(from), a);
        send(
            &mut s,
            "POST",
            "/api/v2/whoami",
            &[format!("X-Remote-User: {user}")],
            b"",
        );
        read_resp(&mut s)
    };
    let r = proxied(Ipv4Addr::new(127, 0, 0, 2), "nobody");
    assert_eq!(
        (r.status, r.json()["ok"]["uid"].as_u64()),
        (200, Some(65534)),
        "{}",
        r.text()
    );
    assert_eq!(proxied(Ipv4Addr::LOCALHOST, "root").status, 401);
    assert_eq!(
        proxied(Ipv4Addr::new(127, 0, 0, 2), "no-such-user-nj").status,
        401
    );

    // Bodies over 1 MiB: 413.
    let mut s = TcpStream::connect(a).unwrap();
    let big = vec![b' '; 1024 * 1024 + 16];
    let head = format!(
        "POST /api/v2/task-list HTTP/1.1\r\nHost: n\r\nConnection: close\r\nAuthorization: Bearer {token}\r\nContent-Length: {}\r\n\r\n",
        big.len()
    );
    use std::io::Write;
    s.write_all(head.as_bytes()).unwrap();
    let _ = s.write_all(&big);
    assert_eq!(read_resp(&mut s).status, 413);

    // Every path of the OpenAPI file is a route of the live router.
    let spec = call(a, "GET", "/api/v2/openapi.yaml", None, "");
    let doc: serde_norway::Value = serde_norway::from_str(&spec.text()).unwrap();
    let mut n = 0;
    for (path, ops) in doc["paths"].as_mapping().unwrap() {
        let path = path.as_str().unwrap().replace("{id}", "999999");
        for (method, _) in ops.as_mapping().unwrap() {
            let m = method.as_str().unwrap().to_ascii_uppercase();
            if path.ends_with("/events") {
                // A stream: its head only.
                let mut s = open_stream(a, &path, &token);
                let mut head = String::new();
                assert!(read_until(
                    &mut s,
                    &mut head,
                    "\r\n\r\n",
                    Duration::from_secs(10)
                ));
                assert!(head.starts_with("HTTP/1.1 200"), "{head}");
                n += 1;
                continue;
            }
            // `[]` is no request of any verb: refused before anything runs.
            let r = call(a, &m, &path, t, if m == "POST" { "[]" } else { "" });
            if m == "POST" && path.ends_with("/token-create") {
                // Tokens are made over the socket only.
                assert_eq!(r.status, 403, "{path}: {}", r.text());
            } else if m == "POST" {
                assert_eq!(r.status, 400, "{path}: {}", r.text());
            }
            assert!(
                !r.head.contains("x-nightjar-no-route"),
                "{m} {path}: no route"
            );
            n += 1;
        }
    }
    assert!(n > 30, "{n}");
    assert!(
        call(a, "POST", "/api/v2/no-such-verb", t, "{}")
            .head
            .contains("x-nightjar-no-route")
    );

    // A revoked token is refused at once.
    nj.ok(&["token", "revoke", &made["id"].to_string()]);
    assert_eq!(call(a, "POST", "/api/v2/whoami", t, "").status, 401);
    let rows = nj.json(&["token", "ls"]);
    assert_eq!(
        rows.as_array().unwrap().len(),
        2,
        "root sees every token: {rows}"
    );
    // An administrator's verb is refused to a plain user's token.
    let dead = call(a, "POST", "/api/v2/notify-list", Some(&other), "{}");
    assert_eq!(dead.status, 403, "{}", dead.text());
}
