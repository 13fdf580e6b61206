//! `nightjar wait`'s live line on a terminal: how many of the tasks waited
//! for have ended, failed, run and wait, the time since the wait began,
//! and when the last is expected to end (from the daemon's forecast, where
//! every task left has an estimate). Drawn on stderr by `indicatif`, only
//! when both stdout and stderr are terminals and `--json` is not given;
//! it asks the daemon on a connection of its own, so the wait itself is
//! the same call as without it.

use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use nightjar_core::api::forecast::ForecastReport;
use nightjar_core::api::wire::TaskState;
use nightjar_core::api::{self, StateCount};
use nightjar_core::client::Client;
use nightjar_core::time::{fmt_local, fmt_span};

/// How often the counts are asked for.
const COUNTS_EVERY: Duration = Duration::from_secs(1);
/// How often the expected end is asked for (a forecast simulates the queue).
const ETA_EVERY: Duration = Duration::from_secs(30);

/// The tasks waited for, by where they stand.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Succeeded.
    pub succeeded: u32,
    /// Failed or cancelled.
    pub failed: u32,
    /// Blocked by a failed dependency (`wait` counts it as ended).
    pub blocked: u32,
    /// Running.
    pub running: u32,
    /// Queued or held.
    pub waiting: u32,
}

impl Tally {
    /// The tally of `counts` (`wait-progress`'s reply).
    pub fn of(counts: &[StateCount]) -> Tally {
        let mut t = Tally::default();
        for c in counts {
            let slot = match c.state {
                TaskState::Succeeded => &mut t.succeeded,
                TaskState::Failed | TaskState::Cancelled => &mut t.failed,
                TaskState::Blocked => &mut t.blocked,
                TaskState::Running => &mut t.running,
                TaskState::Queued | TaskState::Held | TaskState::Sweep | TaskState::Scheduled => {
                    &mut t.waiting
                }
            };
            *slot = slot.saturating_add(c.count);
        }
        t
    }

    /// The tasks that have ended (as `wait` counts them).
    pub fn ended(&self) -> u32 {
        self.succeeded
            .saturating_add(self.failed)
            .saturating_add(self.blocked)
    }

    /// Every task waited for.
    pub fn total(&self) -> u32 {
        self.ended()
            .saturating_add(self.running)
            .saturating_add(self.waiting)
    }
}

/// When the last task waited for is expected to end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Eta {
    /// Not asked yet, or the daemon could not say (a busy forecast).
    NotYet,
    /// Expected at this moment (Unix ms).
    At(i64),
    /// Not known: this many tasks left have no expected end (no estimate,
    /// held, or waiting for a dependency).
    Unknown(usize),
}

impl Eta {
    /// The expected end of the tasks `report` forecasts that have not
    /// ended: the latest, where every one has one.
    pub fn of(report: &ForecastReport) -> Eta {
        let ended =
            |s: &str| TaskState::parse(s).is_some_and(|s| s.is_final() || s == TaskState::Blocked);
        let left: Vec<_> = report.tasks.iter().filter(|t| !ended(&t.state)).collect();
        let without = left.iter().filter(|t| t.end.is_none()).count();
        if without > 0 {
            return Eta::Unknown(without);
        }
        left.iter()
            .filter_map(|t| t.end)
            .max()
            .map_or(Eta::NotYet, Eta::At)
    }
}

/// The live line's text after the bar and the time elapsed: `3 failed ·
/// 2 running · 995 waiting · ETA in 1h02m (23:41)`, cut to the terminal's
/// width (the end goes first).
pub fn message(t: &Tally, eta: &Eta, now_ms: i64) -> String {
    let mut parts = Vec::new();
    if t.failed > 0 {
        parts.push(format!("{} failed", t.failed));
    }
    if t.blocked > 0 {
        parts.push(format!("{} blocked", t.blocked));
    }
    parts.push(format!("{} running", t.running));
    parts.push(format!("{} waiting", t.waiting));
    match eta {
        Eta::NotYet => {}
        Eta::At(at) => parts.push(format!(
            "ETA in {} ({})",
            fmt_span(at.saturating_sub(now_ms)),
            clock(*at, now_ms)
        )),
        Eta::Unknown(n) => parts.push(format!("ETA unknown ({n} without an estimate)")),
    }
    parts.join(" · ")
}

/// `at` on the local clock: `23:41` within a day of `now_ms`, else with its date.
fn clock(at: i64, now_ms: i64) -> String {
    use chrono::TimeZone;
    let Some(t) = chrono::Local.timestamp_millis_opt(at).single() else {
        return fmt_local(at);
    };
    if at.saturating_sub(now_ms) < 86_400_000 {
        t.format("%H:%M").to_string()
    } else {
        t.format("%Y-%m-%d %H:%M").to_string()
    }
}

/// The live line, drawn until [`Live::finish`].
pub struct Live {
    stop: Sender<()>,
    thread: JoinHandle<()>,
}

impl Live {
    /// Starts the line for `ids`, asking the daemon through `client`.
    pub fn start(client: Client, ids: &[i64]) -> Live {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template(
            "{spinner} {pos}/{len} ended [{bar:12}] {elapsed} · {wide_msg}",
        )
        .map(|s| s.progress_chars("=> "))
        .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        // Hidden until the daemon's first answer (no `0/0` line).
        bar.set_draw_target(ProgressDrawTarget::hidden());
        let (stop, stopped) = channel();
        let ids = ids.to_vec();
        let thread = std::thread::spawn(move || draw(client, &ids, &bar, &stopped));
        Live { stop, thread }
    }

    /// Clears the line (the results are printed after it).
    pub fn finish(self) {
        let _ = self.stop.send(());
        let _ = self.thread.join();
    }
}

/// Asks and draws until told to stop, or until the daemon cannot answer
/// (an older daemon without `wait-progress`: the line goes, the wait stays).
fn draw(mut client: Client, ids: &[i64], bar: &ProgressBar, stop: &Receiver<()>) {
    let mut eta = Eta::NotYet;
    let mut eta_asked: Option<Instant> = None;
    while let Ok(counts) = client.call(api::WaitProgress { ids: ids.to_vec() }) {
        let tally = Tally::of(&counts);
        // The forecast is minutes old at most: no more tasks lack an
        // estimate than are left.
        if let Eta::Unknown(n) = &mut eta {
            *n = (*n).min(tally.total().saturating_sub(tally.ended()) as usize);
        }
        if eta_asked.is_none_or(|at| at.elapsed() >= ETA_EVERY) && tally.ended() < tally.total() {
            eta_asked = Some(Instant::now());
            let asked = api::forecast::Forecast {
                ids: ids.to_vec(),
                entries: Vec::new(),
                brief: true,
            };
            // A busy forecast keeps the last expected end.
            if let Ok(report) = client.call(asked) {
                eta = Eta::of(&report);
            }
        }
        bar.set_length(u64::from(tally.total()));
        bar.set_position(u64::from(tally.ended()));
        bar.set_message(message(&tally, &eta, chrono::Utc::now().timestamp_millis()));
        if bar.is_hidden() {
            bar.set_draw_target(ProgressDrawTarget::stderr());
            bar.enable_steady_tick(Duration::from_millis(200));
        }
        match stop.recv_timeout(COUNTS_EVERY) {
            Err(RecvTimeoutError::Timeout) => {}
            Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    bar.finish_and_clear();
}

#[cfg(test)]
mod tests {
    use super::*;
    use nightjar_core::api::forecast::TaskForecast;

    fn count(state: TaskState, count: u32) -> StateCount {
        StateCount { state, count }
    }

    fn row(state: &str, end: Option<i64>) -> TaskForecast {
        TaskForecast {
            id: Some(1),
            name: "t".into(),
            state: state.into(),
            start: None,
            end,
            gpus: Vec::new(),
            estimate: None,
            power: None,
            energy_kwh: None,
            cost: None,
            currency: None,
            unknown: None,
        }
    }

    fn report(tasks: Vec<TaskForecast>) -> ForecastReport {
        ForecastReport {
            now: 0,
            order: "priority".into(),
            not_modelled: Vec::new(),
            tasks,
            passes: 0,
            chain_passes: 0,
        }
    }

    #[test]
    fn the_tally_puts_cancelled_with_failed_and_held_with_waiting() {
        let t = Tally::of(&[
            count(TaskState::Succeeded, 5),
            count(TaskState::Failed, 1),
            count(TaskState::Cancelled, 2),
            count(TaskState::Blocked, 1),
            count(TaskState::Running, 2),
            count(TaskState::Queued, 3),
            count(TaskState::Held, 4),
        ]);
        assert_eq!(
            t,
            Tally {
                succeeded: 5,
                failed: 3,
                blocked: 1,
                running: 2,
                waiting: 7
            }
        );
        assert_eq!((t.ended(), t.total()), (9, 18));
    }

    #[test]
    fn the_eta_is_the_latest_end_of_the_tasks_left_and_unknown_if_one_has_none() {
        let ended_without = row("succeeded", None);
        let r = report(vec![
            ended_without.clone(),
            row("running", Some(5_000)),
            row("queued", Some(9_000)),
        ]);
        assert_eq!(
            Eta::of(&r),
            Eta::At(9_000),
            "an ended task's row does not count"
        );
        let r = report(vec![
            row("queued", Some(9_000)),
            row("held", None),
            row("queued", None),
        ]);
        assert_eq!(Eta::of(&r), Eta::Unknown(2));
        assert_eq!(Eta::of(&report(vec![ended_without])), Eta::NotYet);
    }

    #[test]
    fn the_message_says_failures_only_when_there_are_some_and_how_far_the_eta_is() {
        let t = Tally {
            succeeded: 1,
            failed: 0,
            blocked: 0,
            running: 2,
            waiting: 3,
        };
        assert_eq!(message(&t, &Eta::NotYet, 0), "2 running · 3 waiting");
        let t = Tally { failed: 4, ..t };
        let m = message(&t, &Eta::At(3_720_000), 0);
        assert!(
            m.starts_with("4 failed · 2 running · 3 waiting · ETA in 1h02m ("),
            "{m}"
        );
        let far = message(&t, &Eta::At(3 * 86_400_000), 0);
        assert!(
            far.contains("ETA in 3d00h (1970-01-0"),
            "a day or more away: the date too: {far}"
        );
        assert_eq!(
            message(&t, &Eta::Unknown(2), 0),
            "4 failed · 2 running · 3 waiting · ETA unknown (2 without an estimate)"
        );
    }
}
