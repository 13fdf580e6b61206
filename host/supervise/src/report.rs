//! The supervisor's last job: getting the run's status somewhere safe. A
//! daemon acknowledges it only once committed; otherwise it goes to
//! `status.json`, and while neither works (a full disk) the supervisor keeps
//! it and tries again, holding the run's lock.

use std::io::{BufRead, Write};
use std::path::Path;

use super::files::{self, RunStatus};

/// What the daemon said to a status.
#[derive(Debug, PartialEq, Eq)]
pub enum Ack {
    /// Committed: the status is safe in the database.
    Recorded,
    /// Not committed (database busy, disk full): keep it.
    Refused,
    /// No daemon is listening (it died or restarted since it started us).
    Gone,
}

/// Keeps the status until it is safe: acknowledged by a daemon that has
/// committed it, or written (atomically) to `status.json` for a later one.
/// While neither works (a full disk) it tries again, up to every 30 s,
/// holding the run's lock, so the run is alive and never declared lost.
pub fn keep(dir: &Path, status: &RunStatus, stdin: &mut impl BufRead) {
    let mut daemon = true;
    let mut delay = std::time::Duration::from_millis(500);
    loop {
        if daemon {
            match report(status, stdin) {
                Ack::Recorded => {
                    // A copy for the record: a database that lost its last
                    // writes (a truncated WAL) learns the end again from it
                    // instead of calling the run lost. Best effort.
                    let _ = files::write_atomic(dir, files::STATUS, status);
                    return;
                }
                Ack::Refused => {}
                Ack::Gone => daemon = false,
            }
        }
        let written = std::fs::create_dir_all(dir)
            .and_then(|_| files::write_atomic(dir, files::STATUS, status));
        if written.is_ok() {
            return;
        }
        std::thread::sleep(delay);
        delay = (delay * 2).min(std::time::Duration::from_secs(30));
    }
}

/// Sends the status to the daemon and waits for its answer.
pub fn report(status: &RunStatus, stdin: &mut impl BufRead) -> Ack {
    let Ok(mut line) = serde_json::to_vec(status) else {
        return Ack::Gone;
    };
    line.push(b'\n');
    let mut out = std::io::stdout().lock();
    if out.write_all(&line).and_then(|_| out.flush()).is_err() {
        return Ack::Gone;
    }
    let mut ack = String::new();
    match stdin.read_line(&mut ack) {
        Ok(n) if n > 0 && ack == "ok\n" => Ack::Recorded,
        Ok(n) if n > 0 => Ack::Refused,
        _ => Ack::Gone,
    }
}
