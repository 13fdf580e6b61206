//! The verbs of a shared daemon, seen by its administrator: `whoami`,
//! `priority` (audited), `audit`, and `logs` read through the daemon
//! (bytes exact, however long the log).

use crate::harness::Nj;

#[test]
fn whoami_names_the_caller_from_the_socket_and_its_role() {
    let mut nj = Nj::new("");
    nj.start();
    let me = nj.json(&["whoami"]);
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    assert_eq!(me["uid"], uid);
    assert_eq!(me["admin"], true, "the daemon's own user administers it");
    assert_eq!(
        me["multi_user"],
        uid == 0,
        "only a root daemon serves many users"
    );
    let text = nj.ok(&["whoami"]);
    assert!(text.contains(&format!("uid {uid}")), "{text}");
}

#[test]
fn a_priority_change_is_applied_and_written_to_the_audit_log() {
    let mut nj = Nj::new("");
    nj.start();
    let id = nj.submit(&["--hold", "--priority", "low", "--", "true"]);
    let out = nj.ok(&["priority", &id.to_string(), "urgent"]);
    assert!(out.contains("priority urgent"), "{out}");
    assert_eq!(nj.show(id)["task"]["priority"], "urgent");
    assert_eq!(nj.show(id)["spec"]["priority"], "urgent");
    let log = nj.json(&["audit"]);
    let entries = log.as_array().expect("a list");
    let e = entries
        .iter()
        .find(|e| e["action"] == "priority")
        .unwrap_or_else(|| panic!("no priority entry in {log}"));
    assert_eq!(e["task"], id);
    assert_eq!(e["detail"].as_str().unwrap(), "low -> urgent (1 task(s))");
    let events = nj.show(id)["events"].to_string();
    assert!(events.contains("priority low -> urgent"), "{events}");
    // A bad level is a usage error that names it.
    let bad = nj.cli(&["priority", &id.to_string(), "asap"]);
    assert_eq!(bad.status.code(), Some(2));
    // An unknown task: exit 4, nothing audited.
    let missing = nj.cli(&["priority", "999999", "high"]);
    assert_eq!(missing.status.code(), Some(4));
    assert_eq!(nj.json(&["audit"]).as_array().unwrap().len(), entries.len());
    let since = nj.json(&["audit", "--since", "1h", "--limit", "1"]);
    assert_eq!(since.as_array().unwrap().len(), 1);
}

#[test]
fn the_config_a_daemon_started_with_and_plugin_reloads_are_audited() {
    let mut nj = Nj::new("");
    nj.start();
    nj.ok(&["plugins", "reload"]);
    let log = nj.json(&["audit"]);
    let actions: Vec<&str> = log
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["config-loaded", "plugins-reload"], "{log}");
    let config = log[0]["detail"].as_str().unwrap();
    assert!(config.contains("(sha256 "), "{config}");
    let table = nj.ok(&["audit"]);
    assert!(
        table.contains("config-loaded") && table.contains("plugins-reload"),
        "{table}"
    );
}

#[test]
fn logs_through_the_daemon_are_byte_exact_and_span_many_chunks() {
    let mut nj = Nj::new("[sandbox]\nlog_cap = \"64MiB\"");
    nj.start();
    // Every byte value, then 3 MiB of lines: more than one reply (1 MiB each).
    let id = nj.submit(&[
        "--",
        "python3",
        "-c",
        "import sys; o=sys.stdout.buffer; o.write(bytes(range(256))); o.write(b''.join(b'%07d\\n' % i for i in range(393216)))",
    ]);
    assert_eq!(nj.wait(id), 0);
    // Not raw: control characters (all but newline and tab) escaped.
    let shown = nj.cli(&["logs", &id.to_string()]);
    assert!(shown.status.success());
    assert!(
        shown
            .stdout
            .starts_with(b"\\x00\\x01\\x02\\x03\\x04\\x05\\x06\\x07\\x08\t\n\\x0b"),
        "{:?}",
        String::from_utf8_lossy(&shown.stdout[..64])
    );
    // Raw to a pipe: every byte as it is.
    let out = nj.cli(&["logs", "--raw", &id.to_string()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want: Vec<u8> = (0..=255u8)
        .chain((0..393216).flat_map(|i| format!("{i:07}\n").into_bytes()))
        .collect();
    assert_eq!(out.stdout.len(), want.len());
    assert!(
        out.stdout == want,
        "the bytes differ from what the task wrote"
    );
    let json = nj.json(&["logs", &id.to_string(), "--stderr"]);
    assert_eq!(json["text"], "");
    assert_eq!(json["stream"], "stderr");
    let waiting = nj.submit(&["--hold", "--", "true"]);
    let out = nj.cli(&["logs", &waiting.to_string()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("has not started yet (held)"), "{err}");
}

#[test]
fn a_hostile_log_cursor_reads_nothing_or_starts_afresh_and_never_breaks_the_daemon() {
    let mut nj = Nj::new("");
    nj.start();
    let id = nj.submit(&["--", "sh", "-c", "echo hello"]);
    assert_eq!(nj.wait(id), 0);
    let first = nj.request(serde_json::json!({ "verb": "logs", "id": id }));
    let cursor = first["ok"]["cursor"].clone();
    assert_eq!(first["ok"]["data"], "aGVsbG8K", "{first}");
    let max = u64::MAX;
    for bad in [
        serde_json::json!({ "inode": max, "rotated": max, "offset": max }),
        serde_json::json!({ "inode": cursor["inode"], "rotated": max, "offset": max }),
        serde_json::json!({ "inode": cursor["inode"], "rotated": 0, "offset": max }),
        serde_json::json!({ "inode": 1, "rotated": 5, "offset": 2 }),
    ] {
        let r = nj.request(serde_json::json!({ "verb": "logs", "id": id, "cursor": bad }));
        let data = r["ok"]["data"]
            .as_str()
            .unwrap_or_else(|| panic!("{bad}: {r}"));
        assert!(data.is_empty() || data == "aGVsbG8K", "{bad}: {r}");
    }
    let bad =
        nj.request(serde_json::json!({ "verb": "logs", "id": id, "cursor": { "inode": -1 } }));
    assert_eq!(bad["kind"], "bad-request", "{bad}");
    let missing = nj.request(serde_json::json!({ "verb": "logs", "id": id, "attempt": 99 }));
    assert!(
        missing["error"]
            .as_str()
            .unwrap()
            .contains("has no attempt 99"),
        "{missing}"
    );
    assert_eq!(
        nj.ok(&["logs", &id.to_string()]),
        "hello\n",
        "still serving"
    );
}

#[test]
fn ls_filters_by_owner_and_mine_means_the_caller() {
    let mut nj = Nj::new("");
    nj.start();
    let a = nj.submit(&["--hold", "--", "true"]);
    let b = nj.submit(&["--hold", "--", "true"]);
    let ids = |v: serde_json::Value| -> Vec<i64> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_i64().unwrap())
            .collect()
    };
    assert_eq!(ids(nj.json(&["ls", "--mine"])), [a, b]);
    let me = nj.json(&["whoami"])["user"].as_str().unwrap().to_string();
    assert_eq!(ids(nj.json(&["ls", "--user", &me])), [a, b]);
    assert!(ids(nj.json(&["ls", "--user", "nobody-of-this-lab"])).is_empty());
    let wide = nj.ok(&["ls", "--wide"]);
    assert!(
        wide.lines().next().unwrap().contains("USER") && wide.contains(&me),
        "{wide}"
    );
    let both = nj.cli(&["ls", "--mine", "--user", "x"]);
    assert_eq!(both.status.code(), Some(2));
}
