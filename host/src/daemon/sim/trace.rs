//! A trace for `nightjar simulate`: CSV with a header, one job per row.
//! Required columns `id, arrival_s, gpus, duration_s`; optional `name,
//! project, user, priority, gpu_mem, estimate_s, power_w, preemptible,
//! checkpoint_s, temp_c`. A bad row is refused with the file, line and column and
//! what to write instead; nothing is guessed. Bounds keep a hostile trace
//! from costing unbounded memory or time: at most [`MAX_JOBS`] rows and
//! [`MAX_BYTES`] of text (so one endless line is refused too), times up to
//! [`MAX_SECONDS`], at most [`MAX_GPUS`] GPUs a job.

use std::collections::HashSet;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use crate::task::model::Priority;

#[path = "trace_row.rs"]
mod row;
use row::{Columns, Interner, Row};

/// Most jobs a trace may hold (a month of a busy lab is tens of thousands).
pub const MAX_JOBS: usize = 1_000_000;

/// Most text a trace may hold: 128 MiB (a million rows of every column
/// with short names is about 70 MiB).
pub const MAX_BYTES: u64 = 128 << 20;

/// A reader that fails once more than [`MAX_BYTES`] have been read.
struct Capped<R> {
    inner: R,
    read: u64,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        if self.read > MAX_BYTES {
            return Err(std::io::Error::other(format!(
                "more than {} MiB of text; split the trace into shorter periods",
                MAX_BYTES >> 20
            )));
        }
        Ok(n)
    }
}

/// Longest time a trace may name, in seconds: ten years.
pub const MAX_SECONDS: f64 = 10.0 * 365.0 * 86_400.0;

/// Most GPUs one job may ask for.
pub const MAX_GPUS: u32 = 100_000;

/// The columns a trace must have.
const REQUIRED: [&str; 4] = ["id", "arrival_s", "gpus", "duration_s"];

/// Every column a trace may have.
const KNOWN: [&str; 14] = [
    "id",
    "arrival_s",
    "gpus",
    "duration_s",
    "name",
    "project",
    "user",
    "priority",
    "gpu_mem",
    "estimate_s",
    "power_w",
    "preemptible",
    "checkpoint_s",
    "temp_c",
];

/// One job of a trace, times in ms from the simulation's start.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// Its id (unique in the trace; lower ids rank first among equals).
    pub id: i64,
    /// Name (`job-ID` when the trace has none).
    pub name: Arc<str>,
    /// Project (`default` when the trace has none).
    pub project: Arc<str>,
    /// User (`trace` when the trace has none).
    pub user: Arc<str>,
    /// Priority class.
    pub priority: Priority,
    /// When it is submitted.
    pub arrival: i64,
    /// Whole GPUs it takes.
    pub gpus: u32,
    /// GPU memory per GPU, bytes (`None`: whole GPUs).
    pub gpu_mem: Option<u64>,
    /// How long it really runs.
    pub duration: i64,
    /// What the scheduler is told it runs (default: `duration`).
    pub estimate: i64,
    /// Mean draw per GPU, watts (for energy and cost).
    pub power_w: Option<f64>,
    /// A policy may preempt it.
    pub preemptible: bool,
    /// A preempted run resumes from its last multiple of this (`None`: restarts).
    pub checkpoint: Option<i64>,
    /// How hot its GPUs run while it runs, °C (`None`: the simulated 65 °C).
    pub temp_c: Option<f64>,
}

/// A trace, read whole and checked.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    /// Its jobs in file order.
    pub jobs: Vec<Job>,
}

/// Why a trace was refused: where, and what to do.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct TraceError(String);

impl Trace {
    /// Reads the trace at `path`.
    pub fn read(path: &Path) -> Result<Trace, TraceError> {
        let file = std::fs::File::open(path).map_err(|e| {
            TraceError(format!(
                "trace {}: {e}; give a CSV file with a header: {}",
                path.display(),
                REQUIRED.join(",")
            ))
        })?;
        Trace::parse(&path.display().to_string(), file)
    }

    /// Reads a trace from `input`, named `name` in errors.
    pub fn parse(name: &str, input: impl Read) -> Result<Trace, TraceError> {
        let mut rdr = csv::ReaderBuilder::new()
            .trim(csv::Trim::All)
            .comment(Some(b'#'))
            .from_reader(Capped {
                inner: input,
                read: 0,
            });
        let at = |line: u64, col: Option<&str>, msg: String| {
            let col = col.map(|c| format!(", column {c}")).unwrap_or_default();
            TraceError(format!("trace {name}, line {line}{col}: {msg}"))
        };
        let header = rdr
            .headers()
            .map_err(|e| at(1, None, format!("{e}")))?
            .clone();
        let cols: Vec<&str> = header.iter().collect();
        for (i, c) in cols.iter().enumerate() {
            if !KNOWN.contains(c) {
                return Err(at(
                    1,
                    Some(c),
                    format!("unknown column; the columns are {}", KNOWN.join(", ")),
                ));
            }
            if cols[..i].contains(c) {
                return Err(at(1, Some(c), "named twice".into()));
            }
        }
        if let Some(missing) = REQUIRED.iter().find(|r| !cols.contains(r)) {
            return Err(at(
                1,
                None,
                format!(
                    "no `{missing}` column; a trace needs {} (and may add {})",
                    REQUIRED.join(", "),
                    KNOWN[REQUIRED.len()..].join(", ")
                ),
            ));
        }
        let index = |c: &str| cols.iter().position(|x| *x == c);
        let idx = Columns {
            id: index("id"),
            arrival: index("arrival_s"),
            gpus: index("gpus"),
            duration: index("duration_s"),
            name: index("name"),
            project: index("project"),
            user: index("user"),
            priority: index("priority"),
            gpu_mem: index("gpu_mem"),
            estimate: index("estimate_s"),
            power: index("power_w"),
            temp: index("temp_c"),
            preemptible: index("preemptible"),
            checkpoint: index("checkpoint_s"),
        };
        let mut strings = Interner::default();
        let mut ids = HashSet::new();
        let mut jobs = Vec::new();
        let mut record = csv::StringRecord::new();
        // The header's line; an error without a position (reading failed)
        // is on the line after the last one read.
        let mut line = 1;
        loop {
            match rdr.read_record(&mut record) {
                Ok(false) => break,
                Ok(true) => {}
                Err(e) => {
                    let line = e.position().map_or(line + 1, |p| p.line());
                    return Err(at(line, None, format!("{e}")));
                }
            }
            line = record.position().map_or(line + 1, |p| p.line());
            if jobs.len() == MAX_JOBS {
                return Err(at(
                    line,
                    None,
                    format!("more than {MAX_JOBS} jobs; split the trace into shorter periods"),
                ));
            }
            let row = Row {
                record: &record,
                line,
                at: &at,
            };
            let job = row.job(&idx, &mut strings)?;
            if !ids.insert(job.id) {
                return Err(at(
                    line,
                    Some("id"),
                    format!("id {} is used twice; each job needs its own", job.id),
                ));
            }
            jobs.push(job);
        }
        Ok(Trace { jobs })
    }
}

#[cfg(test)]
#[path = "trace_tests.rs"]
mod tests;
