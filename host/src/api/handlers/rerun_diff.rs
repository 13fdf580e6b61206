//! `rerun` and `diff` on the daemon's side. A rerun is a submission: the
//! same checks and the same submit capture, its inputs compared with the
//! digests the run rerun started with. `diff` only reads: both runs'
//! manifests go to the client, which compares them
//! (`nightjar_core::api::diff`).

use nightjar_core::api::diff::{RunPair, RunRecord};
use nightjar_core::api::manifest::{GitRecord, InputChange, Manifest, RerunOf};
use nightjar_core::api::{ApiError, ErrorKind, Rerun, Rerunning};

use crate::access::Caller;
use crate::daemon::Daemon;
use crate::store::TaskKind;
use crate::task::model::NewEntry;

/// Most changed inputs an error names (the rest are counted).
const NAMED: usize = 10;

fn invalid(message: String) -> anyhow::Error {
    ApiError::new(ErrorKind::Invalid, message).into()
}

/// Queues a new task from a run of task `r.id`. Blocking: hashes inputs.
pub(super) fn rerun(d: &Daemon, caller: &Caller, r: &Rerun) -> anyhow::Result<Rerunning> {
    // The new task copies the old one's environment: only who may read it may rerun it.
    let owner = d.store().task(r.id)?.owner_uid;
    if !d.access.may_read_private(caller, owner) {
        return Err(d.access.private_refused(caller, r.id, owner).into());
    }
    // An administrator's rerun of another user's task stays that user's: it
    // runs their command in their folder, which must never run as the
    // administrator (root). Anyone else's rerun (shared details) is theirs.
    let owner_uid = d.access.owner_uid(owner);
    let owner_caller;
    let caller = if caller.admin && caller.uid != owner_uid {
        owner_caller = d.access.caller(owner_uid)?;
        &owner_caller
    } else {
        caller
    };
    let (run, recorded) = pick_run(d, r)?;
    let mut spec = d.store().task_spec(r.id)?;
    if let Some(name) = &r.name {
        spec.name = name.clone();
    }
    // The run's seed, so the rerun draws the same random numbers.
    spec.seed = spec.seed.or(recorded.seed);
    let entry = NewEntry {
        name: spec.name.clone(),
        project: spec.project.clone(),
        members: vec![spec],
        is_sweep: false,
        schedule: None,
        deps: Vec::new(),
        held: false,
        // A rerun is asked for to run again: never completed from the cache.
        no_cache: true,
        grid: None,
    };
    let mut entries = [entry];
    super::submit::check_submission(d, caller, &mut entries)?;
    let spec = &entries[0].members[0];
    let mut m = d.capture_rerun(spec, &recorded);
    let changed = std::mem::take(&mut m.inputs_changed);
    if !changed.is_empty() && !r.allow_changed {
        return Err(invalid(refusal(r.id, run, &changed)));
    }
    let notes = code_notes(run, &recorded.git, &m.git);
    let rerun_of = RerunOf {
        task: r.id,
        run,
        inputs_changed: changed,
    };
    m.rerun_of = Some(rerun_of.clone());
    let now = d.now_ms();
    let ids = super::submit::insert(d, caller, &entries, &[Some(m)], now, |_| None)?;
    d.changed();
    Ok(Rerunning {
        id: ids[0],
        name: entries[0].name.clone(),
        rerun_of,
        notes,
    })
}

/// The run to rerun and its start manifest: `--run`, or the task's latest
/// run that has one. Sweeps and recurring templates have no runs of their
/// own: refused, naming a member to rerun instead.
fn pick_run(d: &Daemon, r: &Rerun) -> anyhow::Result<(i64, Manifest)> {
    let task = d.store().task(r.id)?;
    let what = match task.kind {
        TaskKind::Sweep => Some("a sweep: each member runs on its own"),
        TaskKind::Recurring => Some("a recurring template: each firing is a task of its own"),
        TaskKind::Task => None,
    };
    if let Some(what) = what {
        let members = d.store().show(r.id)?.members;
        let hint = match members.iter().rev().find(|m| m.attempts > 0) {
            Some(m) => format!(" (the latest that ran: `nightjar rerun {}`)", m.id),
            None => String::new(),
        };
        return Err(invalid(format!(
            "task {} is {what}; rerun one of them{hint}; `nightjar show {}` lists them",
            r.id, r.id
        )));
    }
    let run = match r.run {
        Some(run) => {
            let row = d.store().run(run)?;
            if row.task_id != r.id {
                return Err(invalid(format!(
                    "run {run} is a run of task {}, not of task {}: `nightjar rerun {} --run {run}`",
                    row.task_id, r.id, row.task_id
                )));
            }
            run
        }
        None => d.store().latest_run_with_manifest(r.id)?.ok_or_else(|| {
            let why = if task.attempts == 0 {
                "has not run yet: there is no run to rerun (it will run as it is)"
            } else {
                "has no run with a start manifest (its runs started before nightjar recorded manifests): nothing to check its inputs against; submit it again"
            };
            invalid(format!("task {} {why}", r.id))
        })?,
    };
    let manifest = d.store().run_manifest(run)?.ok_or_else(|| {
        invalid(format!(
            "run {run} has no start manifest (it started before nightjar recorded manifests): nothing to check its inputs against; submit the task again"
        ))
    })?;
    Ok((run, manifest))
}

/// A digest as an error names it.
fn short(sha: &Option<String>) -> String {
    match sha {
        Some(s) => s.chars().take(12).collect(),
        None => "none".into(),
    }
}

/// Why a rerun is refused: each input that differs, with both digests.
fn refusal(task: i64, run: i64, changed: &[InputChange]) -> String {
    let named: Vec<String> = changed
        .iter()
        .take(NAMED)
        .map(|c| {
            format!(
                "{} ({}: sha256 {} at run {run}, {} now)",
                c.path.display(),
                c.what,
                short(&c.before),
                short(&c.after)
            )
        })
        .collect();
    let more = match changed.len().saturating_sub(NAMED) {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    format!(
        "not submitted: {} input(s) differ from run {run} of task {task}: {}{more}; `nightjar rerun {task} --run {run} --allow-changed` submits it anyway, on the files as they are now",
        changed.len(),
        named.join(", "),
    )
}

/// How the workdir's code differs from the run's: said, not refused.
fn code_notes(run: i64, was: &GitRecord, now: &GitRecord) -> Vec<String> {
    let mut notes = Vec::new();
    if was.commit != now.commit {
        notes.push(format!(
            "code: the workdir is at commit {} now, it was at {} for run {run}",
            short(&now.commit),
            short(&was.commit)
        ));
    }
    let state = |g: &GitRecord| match (g.dirty, &g.diff_sha256) {
        (Some(true), sha) => format!("uncommitted changes (diff sha256 {})", short(sha)),
        (Some(false), _) => "no uncommitted changes".to_string(),
        (None, _) => "no git state known".to_string(),
    };
    if was.dirty != now.dirty || was.diff_sha256 != now.diff_sha256 {
        notes.push(format!(
            "code: the workdir has {} now; it had {} for run {run}",
            state(now),
            state(was)
        ));
    }
    notes
}

/// Both runs' start and output manifests, for `diff`.
pub(super) fn pair(d: &Daemon, caller: &Caller, a: i64, b: i64) -> anyhow::Result<RunPair> {
    Ok(RunPair {
        a: record(d, caller, a)?,
        b: record(d, caller, b)?,
    })
}

/// A run's record; its environment's values hidden from who may not read them.
fn record(d: &Daemon, caller: &Caller, run: i64) -> anyhow::Result<RunRecord> {
    let store = d.store();
    let row = store.run(run)?;
    let owner = store.task(row.task_id)?.owner_uid;
    let private = !d.access.may_read_private(caller, owner);
    let start = store.run_manifest(run)?.ok_or_else(|| {
        invalid(format!(
            "run {run} (task {}) has no start manifest: it started before nightjar recorded manifests, so there is nothing to compare",
            row.task_id
        ))
    })?;
    let mut start = start;
    if private {
        for v in start
            .env
            .values_mut()
            .chain(start.spec.iter_mut().flat_map(|s| s.env.values_mut()))
        {
            *v = super::show::PRIVATE.to_string();
        }
    }
    Ok(RunRecord {
        run,
        task: row.task_id,
        state: row.state,
        start,
        outputs: row.outputs.manifest,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_each_input_with_both_short_digests_and_the_way_out() {
        let c = |p: &str| InputChange {
            path: p.into(),
            before: Some("a".repeat(64)),
            after: None,
            what: "was a file, now missing".into(),
        };
        let changed: Vec<InputChange> = (0..12).map(|i| c(&format!("/d/{i}.csv"))).collect();
        let msg = refusal(4, 5, &changed);
        assert!(
            msg.contains(
                "/d/0.csv (was a file, now missing: sha256 aaaaaaaaaaaa at run 5, none now)"
            ),
            "{msg}"
        );
        assert!(
            msg.contains("12 input(s)") && msg.contains(" and 2 more"),
            "{msg}"
        );
        assert!(!msg.contains("/d/10.csv"), "{msg}");
        assert!(
            msg.contains("`nightjar rerun 4 --run 5 --allow-changed`"),
            "{msg}"
        );
    }

    #[test]
    fn code_notes_say_a_new_commit_and_new_uncommitted_changes_and_nothing_else() {
        let was = GitRecord {
            commit: Some("1".repeat(40)),
            dirty: Some(false),
            ..GitRecord::default()
        };
        assert!(code_notes(5, &was, &was).is_empty());
        let now = GitRecord {
            commit: Some("2".repeat(40)),
            dirty: Some(true),
            diff_sha256: Some("3".repeat(64)),
            ..GitRecord::default()
        };
        let notes = code_notes(5, &was, &now);
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(
            notes[0].contains("commit 222222222222 now")
                && notes[0].contains("111111111111 for run 5")
        );
        assert!(notes[1].contains("uncommitted changes (diff sha256 333333333333) now"));
    }
}
