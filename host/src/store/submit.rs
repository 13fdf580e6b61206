//! Inserting a checked submission in one transaction.

use rusqlite::{Transaction, params};

use super::{Result, Store, StoreError, TaskKind, TaskState, event, exec, state_of};
use crate::task::model::{DepTarget, NewEntry, TaskSpec};
use nightjar_core::api::manifest::Manifest;

impl Store {
    /// Inserts every entry of a submission, all or nothing. Returns one id per
    /// entry (the task, the sweep or the recurring template). `next_fire`
    /// gives the first firing of a recurring entry.
    pub fn submit(
        &mut self,
        entries: &[NewEntry],
        now: i64,
        next_fire: impl Fn(&str) -> Option<i64>,
    ) -> Result<Vec<i64>> {
        self.submit_with_manifests(entries, &[], now, next_fire)
    }

    /// [`Store::submit`], with each entry's submit manifest (by index; a
    /// missing one is none) stored in the same transaction.
    pub fn submit_with_manifests(
        &mut self,
        entries: &[NewEntry],
        manifests: &[Option<Manifest>],
        now: i64,
        next_fire: impl Fn(&str) -> Option<i64>,
    ) -> Result<Vec<i64>> {
        let tx = self.conn.transaction()?;
        // Ids of the members of each entry, for local dependencies.
        let mut members: Vec<Vec<i64>> = Vec::with_capacity(entries.len());
        let mut ids = Vec::with_capacity(entries.len());
        for (i, entry) in entries.iter().enumerate() {
            let manifest = manifests.get(i).and_then(Option::as_ref);
            let rerun = manifest.and_then(|m| m.rerun_of.as_ref()).map(|r| {
                let changed = match r.inputs_changed.len() {
                    0 => String::new(),
                    n => format!(", {n} input(s) changed since (--allow-changed)"),
                };
                format!("; rerun of run {} (task {}){changed}", r.run, r.task)
            });
            let (id, member_ids) =
                insert_entry(&tx, entry, now, &next_fire, rerun.as_deref().unwrap_or(""))?;
            if let Some(m) = manifest {
                // Once per entry: a sweep's members and a template's
                // instances read it from their parent.
                exec(
                    &tx,
                    "UPDATE tasks SET manifest = ?1 WHERE id = ?2",
                    params![serde_json::to_string(m)?, id],
                )?;
            }
            if entry.no_cache {
                for m in &member_ids {
                    exec(&tx, "UPDATE tasks SET cache_bypass = 1 WHERE id = ?1", [m])?;
                }
            }
            ids.push(id);
            members.push(member_ids);
        }
        for (i, entry) in entries.iter().enumerate() {
            for &(target, kind) in &entry.deps {
                let targets = match target {
                    DepTarget::Local(j) => members.get(j).cloned().ok_or_else(|| {
                        StoreError::Invalid(format!("dependency index {j} out of range"))
                    })?,
                    DepTarget::Existing(id) => existing_targets(&tx, id)?,
                };
                for &task in &members[i] {
                    for &dep in &targets {
                        exec(
                            &tx,
                            "INSERT OR REPLACE INTO deps (task_id, dep_id, kind) VALUES (?1, ?2, ?3)",
                            params![task, dep, kind.as_str()],
                        )?;
                    }
                }
            }
        }
        for m in members.iter().flatten() {
            super::deps::block_if_dependency_failed(&tx, *m, now)?;
        }
        tx.commit()?;
        Ok(ids)
    }
}

/// The tasks a dependency on an existing id stands for: the task, or every member of a sweep.
fn existing_targets(tx: &Transaction, id: i64) -> Result<Vec<i64>> {
    let (_, kind) = state_of(tx, id).map_err(|_| {
        StoreError::Invalid(format!("unknown dependency: there is no task with id {id}"))
    })?;
    match kind {
        TaskKind::Sweep => {
            let mut stmt =
                tx.prepare_cached("SELECT id FROM tasks WHERE parent_id = ?1 ORDER BY id")?;
            let ids = stmt
                .query_map([id], |r| r.get(0))?
                .collect::<rusqlite::Result<Vec<i64>>>()?;
            Ok(ids)
        }
        TaskKind::Recurring => Err(StoreError::Invalid(format!(
            "task {id} is a recurring template; depend on one of its instances instead"
        ))),
        TaskKind::Task => Ok(vec![id]),
    }
}

fn insert_task(
    tx: &Transaction,
    kind: TaskKind,
    parent: Option<i64>,
    spec: &TaskSpec,
    state: TaskState,
    now: i64,
) -> Result<i64> {
    let id = super::marks::issue(tx, super::marks::Issue::Task)?;
    tx.prepare_cached(
        "INSERT INTO tasks (id, kind, parent_id, name, project, priority, state, spec, submitted_at,
                            owner_uid, owner)
         VALUES (?11, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?
    .execute(params![
        kind.as_str(),
        parent,
        spec.name,
        spec.project,
        spec.priority.rank(),
        state.as_str(),
        serde_json::to_string(spec)?,
        now,
        spec.owner.as_ref().map(|o| o.uid),
        spec.owner.as_ref().map(|o| &o.name),
        id,
    ])?;
    Ok(id)
}

/// Inserts one entry; `note` is appended to a plain task's `submitted` event.
fn insert_entry(
    tx: &Transaction,
    entry: &NewEntry,
    now: i64,
    next_fire: &impl Fn(&str) -> Option<i64>,
    note: &str,
) -> Result<(i64, Vec<i64>)> {
    let first = entry
        .members
        .first()
        .ok_or_else(|| StoreError::Invalid(format!("entry `{}` has no members", entry.name)))?;
    let initial = if entry.held {
        TaskState::Held
    } else {
        TaskState::Queued
    };
    if let Some(expr) = &entry.schedule {
        // `@reboot` has no time: it fires when the daemon starts (fire_reboot).
        let fire = if crate::task::schedule::is_reboot(expr) {
            None
        } else {
            Some(
                next_fire(expr)
                    .ok_or_else(|| StoreError::Invalid(format!("schedule `{expr}` never fires")))?,
            )
        };
        let id = insert_task(
            tx,
            TaskKind::Recurring,
            None,
            first,
            TaskState::Scheduled,
            now,
        )?;
        exec(
            tx,
            "UPDATE tasks SET schedule = ?1, next_fire_at = ?2 WHERE id = ?3",
            params![expr, fire, id],
        )?;
        event(
            tx,
            now,
            Some(id),
            None,
            "submitted",
            &format!("recurring `{expr}`"),
        )?;
        return Ok((id, Vec::new()));
    }
    if !entry.is_sweep {
        let id = insert_task(tx, TaskKind::Task, None, first, initial, now)?;
        let message = format!("{}{note}", initial.as_str());
        event(tx, now, Some(id), None, "submitted", &message)?;
        return Ok((id, vec![id]));
    }
    let mut group = first.clone();
    group.name = entry.name.clone();
    let sweep = insert_task(tx, TaskKind::Sweep, None, &group, TaskState::Sweep, now)?;
    let mut ids = Vec::with_capacity(entry.members.len());
    for m in &entry.members {
        ids.push(insert_task(
            tx,
            TaskKind::Task,
            Some(sweep),
            m,
            initial,
            now,
        )?);
    }
    event(
        tx,
        now,
        Some(sweep),
        None,
        "submitted",
        &format!("sweep of {} members", ids.len()),
    )?;
    Ok((sweep, ids))
}
