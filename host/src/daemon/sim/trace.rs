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
#[path = "trace_csv.rs"]
mod bytes;
use bytes::Capped;

/// Most jobs a trace may hold (a month of a busy lab is tens of thousands).
pub const MAX_JOBS: usize = 1_000_000;

/// Most text a trace may hold: 128 MiB (a million rows of every column
/// with short names is about 70 MiB).
pub const MAX_BYTES: u64 = 128 << 20;

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
        // Values are trimmed here, once their line ends are counted.
        let mut rdr = csv::ReaderBuilder::new()
            .comment(Some(b'#'))
            .from_reader(Capped::new(input));
        let at = |line: u64, col: Option<&str>, msg: String| {
            let col = col.map(|c| format!(", column {c}")).unwrap_or_default();
            TraceError(format!("trace {name}, line {line}{col}: {msg}"))
        };
        let mut header = match rdr.headers() {
            Ok(h) => h.clone(),
            Err(e) => {
                let line = bytes::start_line(rdr.get_ref(), rdr.position().byte(), 0);
                return Err(at(line, None, bytes::problem(&e, &[]).1));
            }
        };
        // Comments and empty lines may come before it.
        let head = bytes::start_line(
            rdr.get_ref(),
            rdr.position().byte(),
            bytes::inner_ends(&header),
        );
        header.trim();
        let cols: Vec<&str> = header.iter().collect();
        for (i, c) in cols.iter().enumerate() {
            if !KNOWN.contains(c) {
                let lower = c.to_ascii_lowercase();
                let hint = if KNOWN.contains(&lower.as_str()) {
                    format!("; column names are lower case: write `{lower}`")
                } else {
                    String::new()
                };
                return Err(at(
                    head,
                    Some(c),
                    format!("unknown column; the columns are {}{hint}", KNOWN.join(", ")),
                ));
            }
            if cols[..i].contains(c) {
                return Err(at(head, Some(c), "named twice; keep one".into()));
            }
        }
        if let Some(missing) = REQUIRED.iter().find(|r| !cols.contains(r)) {
            return Err(at(
                head,
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
        // The last record's last value, if it spans lines: its column, its
        // line ends, and where the record ends (the file's end, if it is
        // left open).
        let mut spans: Option<(usize, u64, u64)> = None;
        loop {
            let read = rdr.read_record(&mut record);
            let end = rdr.position().byte();
            let line = match &read {
                // Reading failed: on the line being read.
                Err(e) if matches!(e.kind(), csv::ErrorKind::Io(_)) => rdr.get_ref().line_now(),
                _ => bytes::start_line(rdr.get_ref(), end, bytes::inner_ends(&record)),
            };
            match read {
                Ok(false) => break,
                Ok(true) => {}
                Err(e) => {
                    let (col, msg) = bytes::problem(&e, &cols);
                    return Err(at(line, col, msg));
                }
            }
            let last = record.len().saturating_sub(1);
            spans = (record.get(last))
                .filter(|v| v.contains(['\n', '\r']))
                .map(|_| (last, bytes::inner_ends(&record), end));
            record.trim();
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
        // Only a quoted value holds a line end; one left open holds the
        // rest of the file, whose rows would silently be lost.
        let read = rdr.get_ref();
        if let Some((i, inner, end)) = spans
            && end == read.read
            && read.last != b'"'
        {
            return Err(at(
                // Every line end to the file's end is the value's.
                read.line_at(end).saturating_sub(inner),
                cols.get(i).copied(),
                "a quoted value opened here is never closed, so it holds every line after it; close it with `\"` (and write a `\"` inside a quoted value as `\"\"`)".into(),
            ));
        }
        Ok(Trace { jobs })
    }
}

#[cfg(test)]
#[path = "trace_tests.rs"]
mod tests;
