//! Where a replay's trace comes from besides a file: the daemon's own
//! finished runs (`simulate --history 30d`, through the `run-trace` verb,
//! as `report --trace` writes them), and the second 0 a trace written that
//! way names in its `# start:` comment.

use std::io::Read;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use nightjar_core::api::RunTrace;
use nightjar_core::client::Client;

use super::trace::Trace;

/// How far into a trace its `# start:` line may be.
const HEAD: u64 = 4096;

/// The `# start: TIME` (RFC 3339) line among the comments opening the
/// trace at `path` (as `report --trace` writes it), in Unix ms. Only a
/// regular file is looked at (a pipe cannot be read twice).
pub fn start_comment(path: &Path) -> Option<i64> {
    if !std::fs::metadata(path).ok()?.is_file() {
        return None;
    }
    let mut head = String::new();
    std::fs::File::open(path)
        .ok()?
        .take(HEAD)
        .read_to_string(&mut head)
        .ok()?;
    head.lines()
        .take_while(|l| l.starts_with('#'))
        .find_map(|l| l.strip_prefix("# start:"))
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t.trim()).ok())
        .map(|t| t.timestamp_millis())
}

/// The runs that became eligible in the last `since` and have ended, from
/// the daemon of `config` (or `NIGHTJAR_SOCKET`), as a trace, and its
/// second 0 (the period's start).
pub fn fetch(config: Option<&Path>, since: Duration) -> Result<(Trace, i64)> {
    use nightjar_core::paths::{SOCKET_VAR, socket_of};
    let socket = match std::env::var_os(SOCKET_VAR).filter(|v| !v.is_empty()) {
        Some(s) => s.into(),
        None => socket_of(config, None).map_err(anyhow::Error::msg)?,
    };
    let mut client = Client::connect(&socket, "")
        .context("--history reads the daemon's runs: start the daemon, or give a trace file")?;
    let to = nightjar_core::time::now_ms();
    let from = to.saturating_sub(i64::try_from(since.as_millis()).unwrap_or(i64::MAX));
    let rows = client.call(RunTrace { from, to })?;
    if rows.truncated {
        // Said on stderr: `simulate` runs without the daemon's log.
        eprintln!(
            "nightjard: --history: the period holds more than {} runs; the trace keeps the first",
            nightjar_core::api::history::MAX_TRACE_ROWS
        );
    }
    let csv = rows.csv();
    let trace = Trace::parse("--history", csv.as_bytes())?;
    Ok((trace, from))
}

#[cfg(test)]
mod tests {
    use super::*;
    use nightjar_core::api::history::{TraceRow, TraceRows};

    fn row(run: i64, user: &str) -> TraceRow {
        TraceRow {
            run,
            task: run,
            eligible_at: 1_000_500 + run,
            started_at: 1_002_000,
            finished_at: 1_062_000,
            gpus: 2,
            name: "train".into(),
            project: "vision".into(),
            user: Some(user.into()),
            priority: "high".into(),
            gpu_mem: Some(1 << 30),
            timeout_ms: Some(90_000),
            energy_j: Some(24_000.0),
            preemptible: true,
        }
    }

    #[test]
    fn a_written_trace_reads_back_the_same_jobs_and_names_its_second_0() {
        let rows = TraceRows {
            from: 1_000_000,
            to: 2_000_000,
            rows: vec![row(7, "ann, \"the\" admin"), row(8, "#bob")],
            running: 1,
            truncated: false,
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.csv");
        std::fs::write(&path, rows.csv()).unwrap();
        let trace = Trace::read(&path).expect("reads back");
        assert_eq!(start_comment(&path), Some(1_000_000));
        let j = &trace.jobs[0];
        assert_eq!((j.id, j.arrival, j.gpus, j.duration), (7, 507, 2, 60_000));
        assert_eq!(
            (&*j.user, &*j.name, &*j.project),
            ("ann, \"the\" admin", "train", "vision")
        );
        assert_eq!(
            (j.estimate, j.gpu_mem, j.preemptible),
            (90_000, Some(1 << 30), true)
        );
        // 24 kJ over 60 s on 2 GPUs: 200 W each.
        assert_eq!(j.power_w, Some(200.0));
        assert_eq!(&*trace.jobs[1].user, "#bob");
        // No `# start:` line, or not a regular file: none.
        std::fs::write(&path, "id,arrival_s,gpus,duration_s\n1,0,1,1\n").unwrap();
        assert_eq!(start_comment(&path), None);
        assert_eq!(start_comment(Path::new("/dev/null")), None);
    }
}
