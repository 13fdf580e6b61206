//! `run-trace` (`nightjar report --trace`, `nightjar simulate --history`):
//! the daemon's own finished runs of a period as a trace for the
//! simulator, so a lab replays its real last month under another config.
//! One job per run: a retry or a preempted run's next attempt is a job of
//! its own, arriving when it became eligible.

use serde::{Deserialize, Serialize};

/// Most rows one trace holds (the simulator reads at most a million).
pub const MAX_TRACE_ROWS: usize = 1_000_000;

/// `run-trace`: the runs that became eligible in `[from, to)` and have ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RunTrace {
    /// Start of the period (Unix ms): the trace's second 0.
    pub from: i64,
    /// End of the period (Unix ms, exclusive).
    pub to: i64,
}

/// The period's runs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TraceRows {
    /// Second 0 (Unix ms).
    pub from: i64,
    /// End of the period (Unix ms, exclusive).
    pub to: i64,
    /// One per run, by eligible time then run id.
    pub rows: Vec<TraceRow>,
    /// Runs of the period still in progress (not in `rows`: their length is not known).
    pub running: u64,
    /// Whether rows past [`MAX_TRACE_ROWS`] were left out.
    #[serde(default)]
    pub truncated: bool,
}

/// One finished run as a trace job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TraceRow {
    /// The run (the job's id in the trace).
    pub run: i64,
    /// Its task.
    pub task: i64,
    /// When it became eligible to start (Unix ms): the job's arrival.
    pub eligible_at: i64,
    /// When it started (Unix ms).
    pub started_at: i64,
    /// When it ended (Unix ms).
    pub finished_at: i64,
    /// GPUs it held.
    pub gpus: u32,
    /// The task's name.
    pub name: String,
    /// The task's project.
    pub project: String,
    /// The task's owner (none: the daemon's user).
    pub user: Option<String>,
    /// The task's priority (`low`, `normal`, `high`, `urgent`).
    pub priority: String,
    /// GPU memory it asked per GPU, bytes.
    pub gpu_mem: Option<u64>,
    /// Its `timeout`, ms: what the scheduler was told it runs at most.
    pub timeout_ms: Option<i64>,
    /// Energy recorded for the run, joules.
    pub energy_j: Option<f64>,
    /// A policy could preempt it.
    pub preemptible: bool,
}

/// `s` as one CSV field (RFC 4180): quoted when it holds a comma, a quote,
/// a line end, or starts with `#` or a space.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) || s.starts_with(['#', ' ']) || s.ends_with(' ') {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Milliseconds as seconds with at most three decimals.
fn secs(ms: i64) -> String {
    let s = format!("{:.3}", ms as f64 / 1000.0);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s.is_empty() || s == "-" {
        "0".into()
    } else {
        s.to_string()
    }
}

impl TraceRows {
    /// The trace as `nightjar simulate` reads it: comments saying what it
    /// is, a header, one line per run. `duration_s` is how long the run
    /// ran; `estimate_s` its timeout where it had one (else the simulator
    /// takes the true duration); `power_w` its recorded energy per GPU.
    pub fn csv(&self) -> String {
        let start = chrono::DateTime::from_timestamp_millis(self.from)
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
            .unwrap_or_default();
        let mut out = format!(
            "# nightjar trace: {} runs that became eligible from {start} for {} s{}{}\n# start: {start}\n",
            self.rows.len(),
            secs(self.to - self.from),
            if self.running > 0 {
                format!(" ({} still running, left out)", self.running)
            } else {
                String::new()
            },
            if self.truncated {
                format!(" (cut at {MAX_TRACE_ROWS} rows)")
            } else {
                String::new()
            },
        );
        out.push_str("id,arrival_s,gpus,duration_s,name,project,user,priority,gpu_mem,estimate_s,power_w,preemptible\n");
        for r in &self.rows {
            let ran = (r.finished_at - r.started_at).max(0);
            let power = r
                .energy_j
                .filter(|_| ran > 0)
                .map(|j| j * 1000.0 / ran as f64 / f64::from(r.gpus.max(1)))
                .filter(|w| w.is_finite() && *w >= 0.0)
                .map(|w| format!("{w:.1}"))
                .unwrap_or_default();
            out.push_str(&format!(
                "{},{},{},{},{},{},{},{},{},{},{},{}\n",
                r.run,
                secs((r.eligible_at - self.from).max(0)),
                r.gpus,
                secs(ran),
                field(&r.name),
                field(&r.project),
                field(r.user.as_deref().unwrap_or("")),
                r.priority,
                r.gpu_mem.map(|b| b.to_string()).unwrap_or_default(),
                r.timeout_ms.map(secs).unwrap_or_default(),
                power,
                r.preemptible,
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_that_csv_would_misread_are_quoted_and_seconds_keep_milliseconds() {
        assert_eq!(field("plain"), "plain");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(field("#hash"), "\"#hash\"");
        assert_eq!(field("two\nlines"), "\"two\nlines\"");
        assert_eq!(secs(1500), "1.5");
        assert_eq!(secs(60_000), "60");
        assert_eq!(secs(1), "0.001");
        assert_eq!(secs(0), "0");
    }
}
