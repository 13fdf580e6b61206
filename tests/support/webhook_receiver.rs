//! The webhook receiver the notification tests deliver to: a real HTTP
//! server on 127.0.0.1 (`tests/e2e/webhook_receiver.py`) that checks every
//! request's signature and logs it. Shared by the end-to-end tier
//! (`tests/e2e/notify*.rs`) and the in-process one (`host/src/api/inproc/notify.rs`),
//! each of which includes this file.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use serde_json::Value;

pub(crate) const SECRET: &str = "test-signing-secret-1234";

/// The receiver, running.
pub(crate) struct Receiver {
    child: Child,
    pub(crate) port: u16,
    log: PathBuf,
}

impl Receiver {
    pub(crate) fn start(log: PathBuf, port: Option<u16>) -> Receiver {
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/e2e/webhook_receiver.py"
        );
        let mut child = Command::new("python3")
            .arg(script)
            .arg(&log)
            .arg(SECRET)
            .env("PORT", port.unwrap_or(0).to_string())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs the receiver");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the receiver's port");
        let port = line.trim().parse().expect("a port");
        Receiver { child, port, log }
    }

    /// Every request it got, in order.
    pub(crate) fn got(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// Makes it answer `status` (None: 204 again).
    pub(crate) fn answer(&self, status: Option<u16>) {
        let flag = self.log.with_extension("jsonl.fail");
        match status {
            Some(s) => std::fs::write(flag, s.to_string()).unwrap(),
            None => {
                let _ = std::fs::remove_file(flag);
            }
        }
    }

    /// Makes it hold its answers (after logging the request), or not.
    pub(crate) fn hold(&self, on: bool) {
        let flag = self.log.with_extension("jsonl.hold");
        if on {
            std::fs::write(flag, "").unwrap();
        } else {
            let _ = std::fs::remove_file(flag);
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// (key, kind) of each request answered 204, its signature checked.
pub(crate) fn delivered(r: &Receiver) -> Vec<(String, String)> {
    r.got()
        .iter()
        .filter(|g| g["status"] == 204)
        .map(|g| {
            assert_eq!(g["valid"], true, "signature and key check: {g}");
            (
                g["key"].as_str().unwrap_or_default().to_string(),
                g["kind"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// The deliveries came in the outbox's order (their keys' event ids rise),
/// one per task of `ids`.
pub(crate) fn in_order_once(r: &Receiver, ids: &[i64]) {
    let got = delivered(r);
    let event_ids: Vec<i64> = got
        .iter()
        .map(|(key, _)| key.split('-').next().unwrap_or("").parse().unwrap_or(0))
        .collect();
    assert!(
        event_ids.windows(2).all(|w| w[0] < w[1]),
        "in order: {got:?}"
    );
    let mut tasks: Vec<i64> = r
        .got()
        .iter()
        .filter(|g| g["status"] == 204)
        .map(|g| g["task"].as_i64().unwrap_or(0))
        .collect();
    tasks.sort_unstable();
    let mut want = ids.to_vec();
    want.sort_unstable();
    assert_eq!(tasks, want, "once each");
}
