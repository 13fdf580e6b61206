//! `forecast` (`nightjar estimate`, `submit --dry-run`): when waiting
//! tasks, or a submission not queued, are expected to start and end.
//! Anyone may ask about any task (as anyone may `show` it); a submission
//! is checked as `submit` checks it, as the caller, and never stored.

use crate::access::Caller;
use crate::api::forecast::{ForecastReport, TaskForecast};
use crate::api::wire::{TaskKind, TaskState};
use crate::daemon::Daemon;
use crate::task::model::{DepKind, DepTarget, NewEntry, TaskSpec};

/// How long a brief forecast (`show`'s, `why`'s, `ls --wide`'s) waits for
/// its turn behind others.
const BRIEF_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

impl super::Handler for crate::api::Forecast {
    async fn handle(
        self,
        d: &std::sync::Arc<Daemon>,
        caller: &Caller,
    ) -> anyhow::Result<ForecastReport> {
        // One at a time; the turn ends with the forecast's thread (a caller
        // that hangs up does not end it). A brief one waits a moment at most.
        let turn = if self.brief {
            tokio::time::timeout(BRIEF_WAIT, d.forecast_turn())
                .await
                .map_err(|_| {
                    crate::api::ApiError::new(
                        crate::api::ErrorKind::Other,
                        "forecasts are busy (another is being made): try `nightjar estimate`",
                    )
                })?
        } else {
            d.forecast_turn().await
        };
        let (d, who) = (std::sync::Arc::clone(d), caller.clone());
        super::blocking("forecast", move || {
            let _turn = turn;
            // Neither ids nor a submission: every waiting task.
            let every = self.ids.is_empty() && self.entries.is_empty();
            let (extra, aside) = dry_run(&d, &who, self.entries)?;
            let limit = if self.brief {
                Daemon::BRIEF_FORECAST_LIMIT
            } else {
                Daemon::FORECAST_LIMIT
            };
            let mut report = d.forecast(&self.ids, extra, every, limit)?;
            report.tasks.extend(aside);
            Ok(report)
        })
        .await
    }
}

/// A dry run's members: those that would wait in the queue at once, and
/// rows for those that would not (held, after dependencies, recurring).
fn dry_run(
    d: &Daemon,
    caller: &Caller,
    entries: Vec<NewEntry>,
) -> anyhow::Result<(Vec<TaskSpec>, Vec<TaskForecast>)> {
    if entries.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let mut entries = super::submit::expanded(entries)?;
    super::submit::check_submission(d, caller, &mut entries)?;
    let (mut queued, mut aside) = (Vec::new(), Vec::new());
    for e in entries {
        let why = if e.held {
            Some("it would be held: `nightjar release` lets it start".to_string())
        } else if let Some(why) = waits_for(d, &e.deps)? {
            Some(why)
        } else {
            (e.schedule.as_ref())
                .map(|s| format!("recurring ({s}): each firing queues a task of its own"))
        };
        match why {
            None => queued.extend(e.members),
            Some(why) => {
                for m in &e.members {
                    aside.push(TaskForecast {
                        id: None,
                        name: m.name.clone(),
                        state: "not queued".into(),
                        start: None,
                        end: None,
                        gpus: Vec::new(),
                        estimate: d.estimate(m),
                        power: d.expected_power(&m.name, &m.project, m.resources.gpus)?,
                        energy_kwh: None,
                        cost: None,
                        currency: None,
                        unknown: Some(why.clone()),
                    });
                }
            }
        }
    }
    Ok((queued, aside))
}

/// Why a submission with `deps` would not wait in the queue at once: a
/// dependency not yet ended as it needs, or one that failed (submit blocks
/// it); `None` when every one is met. A dependency that does not exist, or
/// a recurring template, is refused as submit refuses it.
fn waits_for(d: &Daemon, deps: &[(DepTarget, DepKind)]) -> anyhow::Result<Option<String>> {
    let mut waits = false;
    for &(target, kind) in deps {
        let id = match target {
            // Another entry of the same submission: not run yet.
            DepTarget::Local(_) => {
                waits = true;
                continue;
            }
            DepTarget::Existing(id) => id,
        };
        let unknown = || {
            crate::api::ApiError::new(
                crate::api::ErrorKind::Invalid,
                format!("unknown dependency: there is no task with id {id}"),
            )
        };
        let dep = match d.reader().show(id) {
            Err(crate::store::StoreError::NotFound(_)) => return Err(unknown().into()),
            r => r?,
        };
        if dep.task.kind == TaskKind::Recurring {
            return Err(crate::api::ApiError::new(
                crate::api::ErrorKind::Invalid,
                format!(
                    "task {id} is a recurring template; depend on one of its instances instead"
                ),
            )
            .into());
        }
        let targets: Vec<(i64, String, TaskState)> = if dep.members.is_empty() {
            vec![(id, dep.task.name.clone(), dep.task.state)]
        } else {
            (dep.members.iter())
                .map(|m| (m.id, m.name.clone(), m.state))
                .collect()
        };
        for (tid, name, state) in targets {
            let failed = matches!(
                state,
                TaskState::Failed | TaskState::Cancelled | TaskState::Blocked
            );
            if kind == DepKind::AfterOk && failed {
                return Ok(Some(format!(
                    "it would be blocked: dependency {tid} ({name}) did not succeed; `nightjar retry {tid}` unblocks"
                )));
            }
            let met = match kind {
                DepKind::AfterOk => state == TaskState::Succeeded,
                DepKind::AfterAny => state.is_final(),
            };
            waits |= !met;
        }
    }
    Ok(waits.then(|| "it would wait for its dependencies; their ends are not forecast".into()))
}
