//! `wait`: reply once every task named has ended (or is blocked); and
//! `wait-progress`: how far those tasks are, for `wait`'s progress line.

use std::sync::Arc;

use crate::api::WaitResult;
use crate::daemon::Daemon;
use crate::store::{TaskKind, TaskState};

/// The tasks an id stands for when waiting: the task, or a sweep's members.
fn wait_targets(d: &Daemon, id: i64) -> anyhow::Result<Vec<i64>> {
    let task = d.store().task(id)?;
    match task.kind {
        TaskKind::Sweep => Ok(d.store().show(id)?.members.iter().map(|m| m.id).collect()),
        TaskKind::Recurring => anyhow::bail!(
            "task {id} is a recurring template: it never ends; wait for one of its instances"
        ),
        TaskKind::Task => Ok(vec![id]),
    }
}

/// Tasks looked up per hold of the store lock: a wait on many tasks yields
/// between chunks, so `ls` and run recording never queue behind it.
const WAIT_CHUNK: usize = 256;

impl super::Handler for crate::api::Wait {
    async fn handle(
        self,
        d: &Arc<Daemon>,
        _: &crate::access::Caller,
    ) -> anyhow::Result<Vec<WaitResult>> {
        wait(d, &self.ids).await
    }
}

impl super::Handler for crate::api::WaitProgress {
    async fn handle(
        self,
        d: &Arc<Daemon>,
        _: &crate::access::Caller,
    ) -> anyhow::Result<Vec<crate::api::StateCount>> {
        progress(d, &self.ids).await
    }
}

/// Each task `ids` stand for (as [`wait`] counts them: once each), by
/// state; states none is in are left out. A sweep's members are read in
/// one statement on the reader's connection (`nightjar wait`'s live line
/// asks this every second).
async fn progress(d: &Arc<Daemon>, ids: &[i64]) -> anyhow::Result<Vec<crate::api::StateCount>> {
    let mut asked = std::collections::HashSet::new();
    let mut seen = std::collections::HashSet::new();
    let mut counts: std::collections::BTreeMap<&'static str, (TaskState, u32)> =
        std::collections::BTreeMap::new();
    for (i, &id) in ids.iter().enumerate() {
        if !asked.insert(id) {
            continue;
        }
        let states = {
            let store = d.reader();
            let task = store.task(id)?;
            match task.kind {
                TaskKind::Sweep => store.member_states(id)?,
                TaskKind::Recurring => anyhow::bail!(
                    "task {id} is a recurring template: it never ends; wait for one of its instances"
                ),
                TaskKind::Task => vec![(id, task.state)],
            }
        };
        for (member, state) in states {
            if seen.insert(member) {
                counts.entry(state.as_str()).or_insert((state, 0)).1 += 1;
            }
        }
        if i % WAIT_CHUNK == WAIT_CHUNK - 1 {
            tokio::task::yield_now().await;
        }
    }
    Ok(counts
        .into_values()
        .map(|(state, count)| crate::api::StateCount { state, count })
        .collect())
}

/// The tasks `ids` stand for, each once however often it is named
/// (directly or through its sweep), in the order named.
async fn targets(d: &Arc<Daemon>, ids: &[i64]) -> anyhow::Result<Vec<i64>> {
    let mut asked = std::collections::HashSet::new();
    let mut seen = std::collections::HashSet::new();
    let mut targets = Vec::new();
    for (i, &id) in ids.iter().enumerate() {
        if asked.insert(id) {
            targets.extend(wait_targets(d, id)?.into_iter().filter(|t| seen.insert(*t)));
        }
        if i % WAIT_CHUNK == WAIT_CHUNK - 1 {
            tokio::task::yield_now().await;
        }
    }
    Ok(targets)
}

/// The tasks `ids` stand for, once each has ended or is blocked.
async fn wait(d: &Arc<Daemon>, ids: &[i64]) -> anyhow::Result<Vec<WaitResult>> {
    let targets = targets(d, ids).await?;
    let mut rx = d.changes.subscribe();
    // Tasks are checked in order and dropped once ended, so a long wait costs
    // each change only the tasks still pending at the front.
    let mut pending = targets.iter().copied().peekable();
    loop {
        let mut checked = 0;
        {
            let store = d.store();
            while let Some(&id) = pending.peek() {
                let state = store.task(id)?.state;
                if !(state.is_final() || state == TaskState::Blocked) {
                    break;
                }
                pending.next();
                checked += 1;
                if checked == WAIT_CHUNK {
                    break;
                }
            }
        }
        if pending.peek().is_none() {
            break;
        }
        if checked == WAIT_CHUNK {
            tokio::task::yield_now().await;
            continue;
        }
        if rx.changed().await.is_err() {
            anyhow::bail!("the daemon is stopping");
        }
    }
    let mut results = Vec::with_capacity(targets.len());
    for chunk in targets.chunks(WAIT_CHUNK) {
        {
            let store = d.store();
            for &id in chunk {
                let t = store.task(id)?;
                let run = store.latest_run(id)?;
                results.push(WaitResult {
                    id,
                    state: t.state,
                    class: run.as_ref().and_then(|r| r.class),
                    exit_code: run.as_ref().and_then(|r| r.exit_code),
                    signal: run.as_ref().and_then(|r| r.signal),
                });
            }
        }
        tokio::task::yield_now().await;
    }
    Ok(results)
}
