//! The privilege boundary over the raw socket: a client that skips the
//! CLI's checks names a validator file, which is still read as its owner.

use std::path::Path;

use serde_json::Value;

use crate::users_harness::{Acct, folder_of, system, users, wait_end};

/// Sends one raw request line to the socket as `who` (a client that skips
/// the CLI's checks); the reply line.
fn raw_as(s: &crate::users_harness::System, who: &Acct, req: &serde_json::Value) -> String {
    let line = String::from_utf8(crate::harness::raw_request(req.clone())).unwrap();
    let out = crate::users_harness::setpriv(who, Path::new("/usr/bin/python3"), Some(&s.socket))
        .args([
            "-c",
            "import socket, sys\ns = socket.socket(socket.AF_UNIX)\ns.connect(sys.argv[1])\ns.sendall(sys.argv[2].encode() + b'\\n')\nprint(s.makefile().readline())",
        ])
        .arg(&s.socket)
        .arg(&line)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_validator_file_a_user_names_over_the_raw_socket_is_read_as_her() {
    let u = users("validator files are read as the task's owner");
    let s = system("");
    let work = folder_of(&u.alice, "nj-valfile");
    let shadow_head: String = std::fs::read_to_string("/etc/shadow")
        .unwrap_or_default()
        .chars()
        .take(12)
        .collect();
    let member = serde_json::json!({
        "name": "v", "project": "default", "command": {"argv": ["true"]},
        "workdir": work, "env": {}, "inputs": [], "output": work.join("out"),
        "priority": "normal", "resources": {}, "retry": {}, "params": {},
        "validate": [{"plugin": "/etc/shadow", "config": ""}]
    });
    let entry = serde_json::json!({
        "name": "v", "project": "default", "is_sweep": false, "schedule": null,
        "deps": [], "held": false, "members": [member]
    });
    let reply = raw_as(
        &s,
        &u.alice,
        &serde_json::json!({"verb": "submit", "entries": [entry]}),
    );
    let v: Value = serde_json::from_str(reply.trim()).unwrap_or_else(|e| panic!("{e}: {reply}"));
    let id = v["ok"][0].as_i64().unwrap_or_else(|| panic!("{reply}"));
    let d = wait_end(&s, id);
    let text = d.to_string();
    assert_eq!(d["runs"][0]["class"], "validation-failed", "{text}");
    assert!(text.contains("Permission denied"), "{text}");
    // Not a byte of it, in any form the error might print them.
    let bytes: Vec<String> = shadow_head
        .bytes()
        .take(4)
        .map(|b| format!("{b:#04x}"))
        .collect();
    assert!(
        !bytes.is_empty() && !text.contains(&bytes.join(",")),
        "{text}"
    );
    assert!(!text.contains(&shadow_head), "{text}");
}
