//! The daemon's side of EASY backfill and staggered starts: runtime
//! estimates (a task's timeout, else the median of its name's recent
//! successful runs, cached until a run succeeds), the runs in progress
//! with their expected ends, and the words `ls`, `show` and `why` say for a
//! task that waits for a reservation or a stagger. The rule itself is pure
//! (`scheduler::backfill`).

use std::collections::HashMap;

use chrono::TimeZone;
use nightjar_core::api::estimate::{Estimate, EstimateSource};

use crate::daemon::state::{Daemon, lock};
use crate::scheduler::backfill::{Backfilled, Behind, Easy, Mode, Reservation, RunningRun};
use crate::store::Recent;
use crate::task::model::TaskSpec;

/// Each (name, project)'s recent successful runs, newest first (by end,
/// then id: the order the store reads them in), at most
/// `scheduler.estimate_runs` of them; an empty list is cached too (no
/// history yet). Read from the store once per name, then kept up to date
/// as runs succeed ([`Daemon::learn_duration`]), so a burst of short runs
/// of one name does not read the name's whole history at each start.
#[derive(Default)]
pub(in crate::daemon) struct EstimateCache {
    /// Bumped by every success learnt and every forgetting: a history read
    /// from the store before one of them is used once, not kept (it may
    /// miss that run, or the run would be added twice).
    generation: u64,
    by_name: HashMap<(String, String), Vec<Recent>>,
    /// Entries kept in all, bounded by [`MAX_CACHED`].
    held: usize,
}

/// Most history entries cached in all (a queue of a million distinct names,
/// or `estimate_runs` at its largest, is not kept whole): 24 MB.
const MAX_CACHED: usize = 1_000_000;

/// A history's estimate: the median of its durations.
fn median(rows: &[Recent]) -> Option<Estimate> {
    Estimate::median(&rows.iter().map(|r| r.ms).collect::<Vec<_>>())
}

/// The scheduler's mode for `[scheduler] order`.
pub(crate) fn mode_of(order: crate::config::Order) -> Mode {
    match order {
        crate::config::Order::Backfill => Mode::Easy,
        crate::config::Order::FirstFit => Mode::PassOver,
        crate::config::Order::Strict => Mode::Strict,
    }
}

impl Daemon {
    /// How long `spec` is expected to run: its timeout, else the median of
    /// the last `scheduler.estimate_runs` successful runs of its name and
    /// project, else `None`.
    pub fn estimate(&self, spec: &TaskSpec) -> Option<Estimate> {
        if let Some(t) = spec.resources.timeout {
            return Some(Estimate {
                ms: i64::try_from(t.as_millis()).unwrap_or(i64::MAX),
                source: EstimateSource::Timeout,
                runs: 0,
            });
        }
        let key = (spec.name.clone(), spec.project.clone());
        let (cached, generation) = {
            let cache = lock(&self.pipeline.estimates);
            (cache.by_name.get(&key).map(|h| median(h)), cache.generation)
        };
        if let Some(found) = cached {
            return found;
        }
        let n = self.cfg.scheduler.estimate_runs;
        let history = match self.store().recent_runs(&key.0, &key.1, n) {
            Ok(h) => h,
            Err(e) => {
                tracing::warn!("cannot read the history of {} ({}): {e}", key.0, key.1);
                return None;
            }
        };
        let found = median(&history);
        let mut cache = lock(&self.pipeline.estimates);
        if cache.generation == generation {
            if cache.held + history.len() > MAX_CACHED {
                cache.by_name.clear();
                cache.held = 0;
            }
            cache.held += history.len();
            cache.by_name.insert(key, history);
        }
        found
    }

    /// Run `run` was recorded as succeeded, just now (once per run): it
    /// takes its place in its name's cached history, if that is cached
    /// (otherwise the history is read from the store when next asked).
    pub(in crate::daemon) fn learn_duration(&self, run: i64) {
        let found = self.store().ok_run(run);
        match found {
            Ok(Some((name, project, recent))) => {
                let n = self.cfg.scheduler.estimate_runs as usize;
                let mut cache = lock(&self.pipeline.estimates);
                cache.generation += 1;
                let Some(h) = cache.by_name.get_mut(&(name, project)) else {
                    return;
                };
                if h.iter().any(|r| r.run == recent.run) {
                    return;
                }
                let before = h.len();
                let at = h
                    .partition_point(|r| (r.finished_at, r.run) > (recent.finished_at, recent.run));
                h.insert(at, recent);
                h.truncate(n);
                let after = h.len();
                cache.held = cache.held + after - before;
            }
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(
                    "run {run}: cannot read its duration ({e}); estimates are read again"
                );
                self.forget_estimates();
            }
        }
    }

    /// Forgets every cached history (`gc` deleted runs, or a success could
    /// not be read).
    pub(in crate::daemon) fn forget_estimates(&self) {
        let mut cache = lock(&self.pipeline.estimates);
        cache.generation += 1;
        cache.by_name.clear();
        cache.held = 0;
    }

    /// This pass's backfill state: every run in progress with its expected end.
    pub(in crate::daemon) fn easy(&self, now: i64) -> Easy {
        let mode = mode_of(self.cfg.scheduler.order());
        let running = lock(&self.runs.placed)
            .iter()
            .map(|(&run, h)| RunningRun {
                run,
                placement: h.placement.clone(),
                end: h.estimate.map(|e| h.started_at.saturating_add(e)),
            })
            .collect();
        Easy::new(mode, now, running)
    }

    /// `at` as wall time in the daemon's zone: `03:12`, with the date when
    /// it is not today.
    fn clock(&self, at: i64, now: i64) -> String {
        let tz = self.cfg.tz();
        let local = |ms: i64| tz.from_utc_datetime(&crate::time::to_utc(ms).naive_utc());
        let (then, today) = (local(at), local(now));
        if then.date_naive() == today.date_naive() {
            then.format("%H:%M").to_string()
        } else {
            then.format("%Y-%m-%d %H:%M").to_string()
        }
    }

    /// Why the head waits: when it is expected to start, after which runs.
    pub(in crate::daemon) fn reserved_text(
        &self,
        r: &Reservation,
        wanted: u32,
        now: i64,
    ) -> String {
        let list = |v: &[i64]| {
            let ids: Vec<String> = v.iter().map(i64::to_string).collect();
            format!(
                "run{} {}",
                if v.len() == 1 { "" } else { "s" },
                ids.join(", ")
            )
        };
        let gpus = format!("{wanted} GPU{}", if wanted == 1 { "" } else { "s" });
        match r.start {
            Some(at) if r.after.is_empty() => format!(
                "waiting for {gpus}; expected to start at {} (backfill reservation)",
                self.clock(at, now)
            ),
            Some(at) => format!(
                "waiting for {gpus}; expected to start at {} when {} end{} (backfill reservation)",
                self.clock(at, now),
                list(&r.after),
                if r.after.len() == 1 { "s" } else { "" }
            ),
            None => format!(
                "waiting for {gpus}; start not known: {} {} no runtime estimate (backfill reservation: nothing starts that would delay it)",
                list(&r.unknown),
                if r.unknown.len() == 1 { "has" } else { "have" }
            ),
        }
    }

    /// Why a task that would fit waits behind the head.
    pub(in crate::daemon) fn behind_text(&self, b: &Behind, now: i64) -> String {
        let Behind::WouldDelay {
            head,
            start,
            estimate,
        } = b;
        let when = match start {
            Some(at) => format!("reserved to start at {}", self.clock(*at, now)),
            None => "reserved (its start is not known yet)".to_string(),
        };
        match estimate {
            Some(e) => format!(
                "backfill: task {head} is {when}; this one (estimated {}) would still run then on what it needs",
                nightjar_core::time::fmt_span(*e)
            ),
            None => format!(
                "backfill: task {head} is {when}; this one has no runtime estimate (no timeout, no successful run of its name yet) and would take what it needs"
            ),
        }
    }

    /// What a backfilled task's record says.
    pub(in crate::daemon) fn backfilled_text(&self, b: &Backfilled, now: i64) -> String {
        match b {
            Backfilled::EndsBefore { end, head, start } => format!(
                "backfilled: expected to end by {}, before task {head}'s reserved start at {}",
                self.clock(*end, now),
                self.clock(*start, now)
            ),
            Backfilled::Beside { head } => {
                format!("backfilled: uses nothing task {head} needs at its reserved start")
            }
        }
    }
}
