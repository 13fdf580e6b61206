//! One row of a trace read into a [`Job`]: each cell checked, and refused
//! with its line and column and what to write instead.

use std::collections::HashSet;
use std::sync::Arc;

use super::{Job, MAX_GPUS, MAX_SECONDS, TraceError};
use crate::task::model::Priority;

/// Where each column is (absent: not in the header).
pub(super) struct Columns {
    pub(super) id: Option<usize>,
    pub(super) arrival: Option<usize>,
    pub(super) gpus: Option<usize>,
    pub(super) duration: Option<usize>,
    pub(super) name: Option<usize>,
    pub(super) project: Option<usize>,
    pub(super) user: Option<usize>,
    pub(super) priority: Option<usize>,
    pub(super) gpu_mem: Option<usize>,
    pub(super) estimate: Option<usize>,
    pub(super) power: Option<usize>,
    pub(super) temp: Option<usize>,
    pub(super) preemptible: Option<usize>,
    pub(super) checkpoint: Option<usize>,
}

/// Names used many times (projects, users) kept once.
#[derive(Default)]
pub(super) struct Interner(HashSet<Arc<str>>);

impl Interner {
    pub(super) fn get(&mut self, s: &str) -> Arc<str> {
        if let Some(a) = self.0.get(s) {
            return Arc::clone(a);
        }
        let a: Arc<str> = Arc::from(s);
        // Bounded: a trace of a million distinct names keeps none of them twice anyway.
        if self.0.len() < 100_000 {
            self.0.insert(Arc::clone(&a));
        }
        a
    }
}

/// One record being read, for errors that name its line and column.
pub(super) struct Row<'a, F> {
    pub(super) record: &'a csv::StringRecord,
    pub(super) line: u64,
    pub(super) at: &'a F,
}

impl<F: Fn(u64, Option<&str>, String) -> TraceError> Row<'_, F> {
    fn err(&self, col: &str, msg: String) -> TraceError {
        (self.at)(self.line, Some(col), msg)
    }

    /// The cell of column `i`, empty cells as absent.
    fn cell(&self, i: Option<usize>) -> Option<&str> {
        i.and_then(|i| self.record.get(i)).filter(|s| !s.is_empty())
    }

    fn required<'s>(&'s self, i: Option<usize>, col: &str) -> Result<&'s str, TraceError> {
        self.cell(i)
            .ok_or_else(|| self.err(col, "is empty; every job needs it".into()))
    }

    /// Seconds as ms: finite, not negative, at most [`MAX_SECONDS`].
    fn seconds(&self, text: &str, col: &str) -> Result<i64, TraceError> {
        let s: f64 = text
            .parse()
            .map_err(|_| self.err(col, format!("`{text}` is not a number of seconds")))?;
        if !s.is_finite() || s < 0.0 {
            return Err(self.err(
                col,
                format!("`{text}` is not a time; give seconds, 0 or more"),
            ));
        }
        if s > MAX_SECONDS {
            return Err(self.err(
                col,
                format!("{text} s is more than ten years ({MAX_SECONDS} s), the longest a trace may name"),
            ));
        }
        Ok((s * 1000.0).round() as i64)
    }

    pub(super) fn job(&self, c: &Columns, strings: &mut Interner) -> Result<Job, TraceError> {
        let id_text = self.required(c.id, "id")?;
        let id: i64 = id_text
            .parse()
            .ok()
            .filter(|i| (1..=(1i64 << 53)).contains(i))
            .ok_or_else(|| {
                self.err(
                    "id",
                    format!("`{id_text}` is not an id; ids are whole numbers from 1"),
                )
            })?;
        let arrival = self.seconds(self.required(c.arrival, "arrival_s")?, "arrival_s")?;
        let gpus_text = self.required(c.gpus, "gpus")?;
        let gpus: u32 = gpus_text
            .parse()
            .ok()
            .filter(|g| *g <= MAX_GPUS)
            .ok_or_else(|| {
                self.err(
                    "gpus",
                    format!("`{gpus_text}` is not a number of GPUs (0 to {MAX_GPUS})"),
                )
            })?;
        let duration = self.seconds(self.required(c.duration, "duration_s")?, "duration_s")?;
        if duration == 0 {
            return Err(self.err("duration_s", "is 0; a job runs for some time".into()));
        }
        let estimate = match self.cell(c.estimate) {
            Some(t) => self.seconds(t, "estimate_s")?.max(1),
            None => duration,
        };
        let priority = match self.cell(c.priority) {
            None => Priority::Normal,
            Some(t) => t.parse::<Priority>().map_err(|_| {
                self.err(
                    "priority",
                    format!("`{t}` is not a priority; use low, normal, high or urgent"),
                )
            })?,
        };
        let gpu_mem = match self.cell(c.gpu_mem) {
            None => None,
            Some(t) => Some(parse_bytes(t).ok_or_else(|| {
                self.err(
                    "gpu_mem",
                    format!("`{t}` is not a size; write bytes or a size such as 20GiB"),
                )
            })?),
        };
        let temp_c = match self.cell(c.temp) {
            None => None,
            Some(t) => Some(
                (t.parse::<f64>().ok())
                    .filter(|d| d.is_finite() && (0.0..=150.0).contains(d))
                    .ok_or_else(|| {
                        self.err(
                            "temp_c",
                            format!("`{t}` is not a temperature (0 to 150 °C)"),
                        )
                    })?,
            ),
        };
        let power_w = match self.cell(c.power) {
            None => None,
            Some(t) => Some(
                t.parse::<f64>()
                    .ok()
                    .filter(|w| w.is_finite() && (0.0..=100_000.0).contains(w))
                    .ok_or_else(|| {
                        self.err(
                            "power_w",
                            format!("`{t}` is not a draw in watts (0 to 100000)"),
                        )
                    })?,
            ),
        };
        let preemptible = match self.cell(c.preemptible) {
            None => false,
            Some(t) => match t.to_ascii_lowercase().as_str() {
                "true" | "yes" | "1" => true,
                "false" | "no" | "0" => false,
                _ => {
                    return Err(self.err("preemptible", format!("`{t}` is not true or false")));
                }
            },
        };
        let checkpoint = match self.cell(c.checkpoint) {
            None => None,
            Some(t) => match self.seconds(t, "checkpoint_s")? {
                0 => {
                    return Err(self.err(
                        "checkpoint_s",
                        "is 0; leave it empty for a job that restarts".into(),
                    ));
                }
                ms => Some(ms),
            },
        };
        let name = match self.cell(c.name) {
            Some(n) => strings.get(n),
            None => Arc::from(format!("job-{id}")),
        };
        Ok(Job {
            id,
            name,
            project: strings.get(self.cell(c.project).unwrap_or("default")),
            user: strings.get(self.cell(c.user).unwrap_or("trace")),
            priority,
            arrival,
            gpus,
            gpu_mem,
            duration,
            estimate,
            power_w,
            temp_c,
            preemptible,
            checkpoint,
        })
    }
}

/// Bytes, or a size such as `20GiB` or `512 MB`.
fn parse_bytes(t: &str) -> Option<u64> {
    t.parse::<u64>()
        .ok()
        .or_else(|| t.parse::<bytesize::ByteSize>().ok().map(|b| b.as_u64()))
}
