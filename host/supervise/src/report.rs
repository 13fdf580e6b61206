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

/// Where the answers to a status reported on stdout come from: `stdin`
/// where it is the daemon's pipe; nowhere where it is a file (a SLURM
/// job's spec, or a job array's specs, whose next lines are the other
/// elements' specs: never a daemon's answer).
pub fn answers<'a>(stdin: &'a mut dyn BufRead, from_file: bool) -> Box<dyn BufRead + 'a> {
    if from_file {
        Box::new(std::io::empty())
    } else {
        Box::new(stdin)
    }
}

/// Whether the supervisor's stdin is a file (not a daemon's pipe).
pub fn stdin_is_file() -> bool {
    use std::os::fd::AsFd;
    std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .map(std::fs::File::from)
        .and_then(|f| f.metadata())
        .is_ok_and(|m| m.is_file())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn status() -> RunStatus {
        RunStatus {
            started_at: 1,
            finished_at: 2,
            exit_code: Some(0),
            signal: None,
            ended_by: files::EndedBy::Exited,
            message: None,
            log_dropped: 0,
            log_error: None,
            detected: None,
        }
    }

    #[test]
    fn an_array_elements_next_spec_line_is_no_daemons_answer_to_its_status() {
        // Element 0 of a batch's specs has read its line; the next is
        // element 1's spec, not a daemon refusing the status.
        let specs = "{\"run_id\":7}\n{\"run_id\":8}\n";
        let mut stdin = std::io::Cursor::new(specs.as_bytes());
        let mut line = String::new();
        stdin.read_line(&mut line).unwrap();
        assert_eq!(report(&status(), &mut answers(&mut stdin, true)), Ack::Gone);
        let mut rest = String::new();
        stdin.read_line(&mut rest).unwrap();
        assert_eq!(
            rest, "{\"run_id\":8}\n",
            "the next element's line is not read"
        );
        // A daemon's pipe answers.
        let mut pipe = std::io::Cursor::new(&b"ok\n"[..]);
        assert_eq!(
            report(&status(), &mut answers(&mut pipe, false)),
            Ack::Recorded
        );
    }
}
