//! A node's GPU samples read while its run goes on (SLURM): at each of the
//! executor's polls, what the node's sampler appended since the last poll,
//! through a monitor of the run's own. So `nightjar gpus` shows a node's
//! GPUs as their last round read them, and a run whose GPUs sit idle while
//! its logs stand still is marked stalled after `[gpu] stall_after`, as a
//! local run is. The run's GPU records, series and energy are still read
//! once, whole, at its end ([`super::node::read`]).

use std::io::{BufRead, Read, Seek, SeekFrom};
use std::path::Path;

use super::monitor::{Monitor, MonitorConfig, RunOnGpus};
use super::node::{Line, SAMPLES};
use super::{GpuInfo, GpuReading};

/// The most read at one poll. A reader further behind (a daemon restarted
/// beside a run of days) reads the file's first line and its last `STEP`
/// bytes: the monitor needs the GPUs and the recent rounds, not the past.
const STEP: u64 = 4 << 20;

/// The last round a node's sampler wrote for a run.
#[derive(Debug, Clone, PartialEq)]
pub struct LastRound {
    /// When, on the node's clock (ms since the epoch).
    pub at: i64,
    /// Each of the run's GPUs (its index on the node) and its reading
    /// (`None`: its read failed that round).
    pub gpus: Vec<(GpuInfo, Option<GpuReading>)>,
}

/// One running run's samples, read as they grow.
pub struct Live {
    run: i64,
    cfg: MonitorConfig,
    /// The bytes of the samples file read so far (whole lines).
    offset: u64,
    monitor: Option<Monitor>,
    gpus: Vec<GpuInfo>,
    /// Whether the run is stalled, as last said.
    stalled: bool,
    /// The last round read, if any.
    pub last: Option<LastRound>,
}

impl Live {
    /// Nothing read yet of run `run`'s samples; stall marks by `cfg`.
    pub fn new(run: i64, cfg: MonitorConfig) -> Live {
        Live {
            run,
            cfg,
            offset: 0,
            monitor: None,
            gpus: Vec::new(),
            stalled: false,
            last: None,
        }
    }

    /// Reads what the sampler appended to the samples file in the run
    /// folder `dir` since the last call (whole lines; the file only as a
    /// plain file of its folder, which may be the run's owner's), the
    /// run's logs being `log_bytes` long now; whether the run became
    /// stalled (`Some(true)`) or active again (`Some(false)`).
    pub fn read(&mut self, dir: &Path, log_bytes: u64) -> Option<bool> {
        let was = self.stalled;
        for line in self.new_lines(&dir.join(SAMPLES)) {
            if let Some(stalled) = self.apply(&line, log_bytes) {
                self.stalled = stalled;
            }
        }
        (self.stalled != was).then_some(self.stalled)
    }

    /// The whole lines appended since the last call.
    fn new_lines(&mut self, path: &Path) -> Vec<String> {
        let Ok(mut file) = nightjar_core::plain_file::open(path) else {
            return Vec::new();
        };
        let Ok(len) = file.metadata().map(|m| m.len()) else {
            return Vec::new();
        };
        let mut lines = Vec::new();
        if len < self.offset {
            // Rewritten (the owner's file): read afresh (a stall mark
            // stands until a round says otherwise).
            let stalled = self.stalled;
            *self = Live::new(self.run, self.cfg.clone());
            self.stalled = stalled;
        }
        let mut reader = std::io::BufReader::new(&mut file);
        if len - self.offset > STEP {
            if self.monitor.is_none() {
                let mut first = Vec::new();
                let _ = reader.by_ref().take(1 << 20).read_until(b'\n', &mut first);
                lines.push(String::from_utf8_lossy(&first).into_owned());
            }
            let from = len - STEP;
            let mut partial = Vec::new();
            // No further than the length just read: the owner may be
            // growing the file (sparse, with no newline) as it is read.
            if reader.seek(SeekFrom::Start(from)).is_err()
                || (reader.by_ref().take(STEP))
                    .read_until(b'\n', &mut partial)
                    .is_err()
            {
                return lines;
            }
            self.offset = from + partial.len() as u64;
        } else if reader.seek(SeekFrom::Start(self.offset)).is_err() {
            return lines;
        }
        let mut rest = Vec::new();
        if reader
            .take(len - self.offset)
            .read_to_end(&mut rest)
            .is_err()
        {
            return lines;
        }
        // Only whole lines: the sampler may be writing the next one.
        let whole = rest.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
        self.offset += whole as u64;
        lines.extend(
            rest[..whole]
                .split(|&b| b == b'\n')
                .filter(|l| !l.is_empty())
                .map(|l| String::from_utf8_lossy(l).into_owned()),
        );
        lines
    }

    /// Applies one line; the stall change it made, if any.
    fn apply(&mut self, line: &str, log_bytes: u64) -> Option<bool> {
        match serde_json::from_str::<Line>(line).ok()? {
            Line::Gpus { gpus } if self.monitor.is_none() => {
                self.monitor = Some(Monitor::new(&gpus, self.cfg.clone()));
                self.gpus = gpus;
                None
            }
            Line::Round {
                at,
                readings,
                mine,
                failed,
            } => {
                let m = self.monitor.as_mut()?;
                let run = self.run;
                self.last = Some(LastRound {
                    at,
                    gpus: (self.gpus.iter())
                        .map(|g| {
                            let r = readings.iter().find(|(i, _)| *i == g.index);
                            (g.clone(), r.map(|(_, r)| r.clone()))
                        })
                        .collect(),
                });
                let on = RunOnGpus {
                    run,
                    gpus: self.gpus.iter().map(|g| g.index).collect(),
                    session: 0,
                    log_bytes,
                };
                let owner = |pid: u32| mine.contains(&pid).then_some(run);
                let readings = (readings.into_iter())
                    .map(|(i, r)| (i, Ok(r)))
                    .chain(failed.into_iter().map(|(i, e)| (i, Err(e))))
                    .collect();
                let fx = m.apply(at, readings, std::slice::from_ref(&on), &owner, None);
                fx.stall_changes.last().map(|(_, stalled)| *stalled)
            }
            _ => None,
        }
    }
}

#[cfg(test)]
#[path = "node_live_tests.rs"]
mod tests;
