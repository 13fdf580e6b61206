//! The dashboard's views as verbs every client can call: `queue` (a page of
//! the waiting and running tasks, with the counts of all) and `runs` (the
//! runs that ended since a moment), on the socket and over HTTP alike. (The
//! dashboard's pages that call them are driven in Chromium by `dashboard.rs`.)

use serde_json::json;

use crate::harness::Nj;
use crate::http_client::{addr, call};

#[test]
fn queue_and_runs_answer_alike_on_the_socket_and_over_http() {
    let mut nj = Nj::new("[http]\nlisten = \"127.0.0.1:0\"\n");
    nj.start();
    let held: Vec<i64> = (0..3)
        .map(|i| nj.submit(&["--hold", "--name", &format!("held{i}"), "--", "true"]))
        .collect();
    let done = nj.submit(&["--name", "done", "--", "true"]);
    assert_eq!(nj.wait(done), 0);

    // A page of two, then the rest; the counts are of all.
    let first = nj.request(json!({ "verb": "queue", "limit": 2 }));
    let rows = first["ok"]["rows"]
        .as_array()
        .unwrap_or_else(|| panic!("{first}"));
    let ids: Vec<i64> = rows.iter().map(|r| r["id"].as_i64().unwrap()).collect();
    assert_eq!(ids, held[..2], "{first}");
    assert_eq!(
        (&first["ok"]["running"], &first["ok"]["waiting"]),
        (&json!(0), &json!(3))
    );
    let rest = nj.request(json!({ "verb": "queue", "limit": 2, "offset": 2 }));
    assert_eq!(rest["ok"]["rows"][0]["id"], held[2], "{rest}");
    assert_eq!(
        rest["ok"]["rows"].as_array().map(Vec::len),
        Some(1),
        "{rest}"
    );
    // No limit, or a null one: a page of 100.
    for req in [
        json!({ "verb": "queue" }),
        json!({ "verb": "queue", "limit": null }),
    ] {
        let all = nj.request(req);
        assert_eq!(all["ok"]["rows"].as_array().map(Vec::len), Some(3), "{all}");
    }

    // The runs that ended since the epoch: the finished one, not the held.
    let token = nj.json(&["token", "create", "--name", "board"])["token"]
        .as_str()
        .unwrap()
        .to_string();
    let r = call(
        addr(&nj),
        "POST",
        "/api/v2/runs",
        Some(&token),
        "{\"since\": 0}",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let runs = r.json()["ok"].as_array().cloned().unwrap_or_default();
    assert_eq!(runs.len(), 1, "{}", r.text());
    assert_eq!(
        (&runs[0]["task"], &runs[0]["name"], &runs[0]["class"]),
        (&json!(done), &json!("done"), &json!("ok"))
    );
    // Since after it ended: none.
    let later = json!({ "verb": "runs", "since": runs[0]["finished_at"].as_i64().unwrap() + 1 });
    assert_eq!(nj.request(later)["ok"], json!([]));
    // `since` is required: a bad request, the caller's (400), not the daemon's.
    let bad = call(addr(&nj), "POST", "/api/v2/runs", Some(&token), "{}");
    assert_eq!(
        (bad.status, bad.json()["kind"].as_str()),
        (400, Some("bad-request")),
        "{}",
        bad.text()
    );
    // The HTTP queue is the socket's.
    let q = call(
        addr(&nj),
        "POST",
        "/api/v2/queue",
        Some(&token),
        "{\"limit\": 2}",
    );
    assert_eq!(q.json()["ok"], first["ok"], "{}", q.text());
}

/// Verbs renamed so every list is `NOUN-list` (`task-list`, `gpu-list`,
/// `plugin-list`; `task-count`, `plugin-reload`) still answer under the
/// names protocol 2 first had, on the socket and over HTTP, with what the
/// new names answer.
#[test]
fn renamed_verbs_answer_under_their_earlier_names_on_the_socket_and_over_http() {
    let mut nj = Nj::new("[http]\nlisten = \"127.0.0.1:0\"\n");
    nj.start();
    let held = nj.submit(&["--hold", "--name", "held", "--", "true"]);
    let token = nj.json(&["token", "create", "--name", "renamed"])["token"]
        .as_str()
        .unwrap()
        .to_string();
    let filter = json!({ "state": null, "project": null, "all": true, "since": 0 });
    let pairs = [
        ("list", "task-list", json!({ "filter": filter })),
        ("list-count", "task-count", json!({ "filter": filter })),
        ("gpus", "gpu-list", json!({})),
        ("plugins", "plugin-list", json!({})),
    ];
    for (was, name, fields) in &pairs {
        let with = |verb: &str| {
            let mut req = fields.clone();
            req["verb"] = json!(verb);
            req
        };
        let new = nj.request(with(name));
        let old = nj.request(with(was));
        assert!(new.get("ok").is_some(), "{name}: {new}");
        assert_eq!(old, new, "socket: `{was}` answers as `{name}`");
        let http_new = call(
            addr(&nj),
            "POST",
            &format!("/api/v2/{name}"),
            Some(&token),
            &fields.to_string(),
        );
        let http_old = call(
            addr(&nj),
            "POST",
            &format!("/api/v2/{was}"),
            Some(&token),
            &fields.to_string(),
        );
        assert_eq!(http_new.status, 200, "{name}: {}", http_new.text());
        assert_eq!(
            (http_old.status, http_old.json()),
            (200, http_new.json()),
            "HTTP: `{was}` answers as `{name}`"
        );
    }
    // The listing names the held task under either name.
    let old = nj.request(json!({ "verb": "list", "filter": filter }));
    assert_eq!(old["ok"][0]["id"], held, "{old}");
    // A change under its earlier name is a change: the reload answers.
    let reload = nj.request(json!({ "verb": "plugins-reload" }));
    assert!(reload.get("ok").is_some(), "{reload}");
}
