//! What a job's end means for its run, with and without SLURM's
//! accounting (given here as what `sacct` would have said).

use std::cell::RefCell;

use super::*;
use crate::sandbox::files;

/// Leaves in the run folder `dir` the status of a task that exited `code`.
fn exited(dir: &std::path::Path, code: i32) {
    let status = files::RunStatus {
        started_at: 1,
        finished_at: 3,
        exit_code: Some(code),
        signal: None,
        ended_by: files::EndedBy::Exited,
        message: None,
        log_dropped: 0,
        log_error: None,
        detected: None,
    };
    files::write_atomic(dir, files::STATUS, &status).unwrap();
}

/// The runs over at `now` given `listed`, with no accounting.
fn ended(jobs: &mut HashMap<i64, Job>, listed: &[Listed], now: i64) -> Vec<(i64, RunOutcome)> {
    let over = over(jobs, listed, now, crate::users::euid());
    judge(over, now, &|_| HashMap::new())
}

fn listed(run: i64, id: JobId, state: &str) -> Listed {
    Listed {
        run,
        job: id.job,
        index: id.index,
        state: state.into(),
        reason: "None".into(),
        nodes: "n1".into(),
    }
}

/// What accounting has of job `id`.
fn accounted(id: JobId, state: &str, by: Option<u32>, exit: (i32, Option<i32>)) -> Accounted {
    Accounted {
        id,
        state: state.into(),
        by,
        exit_code: exit.0,
        signal: exit.1,
        reason: "None".into(),
        submit: 1,
        end_ms: Some(2_000),
    }
}

#[test]
fn a_job_one_listing_missed_keeps_its_whole_patience_for_its_status() {
    let dir = tempfile::tempdir().unwrap();
    let mut jobs = HashMap::from([(7, Job::new(JobId::one(70), dir.path().to_path_buf(), None))]);
    let l = |state: &str| vec![listed(7, JobId::one(70), state)];
    // Listed before its sbatch returned: not in the listing.
    assert!(ended(&mut jobs, &[], 1).is_empty());
    assert!(ended(&mut jobs, &l("RUNNING"), 2).is_empty());
    // Over, its status not yet seen through the shared folder's cache.
    assert!(
        ended(&mut jobs, &l("COMPLETED"), 3).is_empty(),
        "one poll without its status is not yet a lost run"
    );
    exited(dir.path(), 0);
    let over = ended(&mut jobs, &l("COMPLETED"), 4);
    assert_eq!(over.len(), 1);
    assert_eq!(over[0].1.class, RunClass::Ok);
}

#[test]
fn a_hand_scancel_whose_shell_exited_143_is_a_cancel_not_the_tasks_failure() {
    let dir = tempfile::tempdir().unwrap();
    let id = JobId {
        job: 44,
        index: Some(1),
    };
    let mut jobs = HashMap::from([(7, Job::new(id, dir.path().to_path_buf(), Some((5, 1))))]);
    // `sh -c '...; sleep 300'`: SLURM's SIGTERM ends the shell with 143.
    exited(dir.path(), 143);
    let over = ended(&mut jobs, &[listed(7, id, "CANCELLED")], 4);
    assert_eq!(over.len(), 1);
    assert_eq!(over[0].1.class, RunClass::Cancelled);
    let message = over[0].1.message.clone().unwrap_or_default();
    assert!(
        message.contains(
            "SLURM job 44_1 was cancelled outside nightjar (scancel by a user or an administrator)"
        ),
        "{message}"
    );
    // One nightjar asked for keeps the supervisor's own account.
    let mut mine = Job::new(JobId::one(45), dir.path().to_path_buf(), None);
    mine.asked = true;
    let mut jobs = HashMap::from([(8, mine)]);
    let over = ended(&mut jobs, &[listed(8, JobId::one(45), "CANCELLED")], 5);
    let mine = over.iter().find(|(r, _)| *r == 8).expect("run 8 over");
    assert_eq!(mine.1.class, RunClass::AppError, "{:?}", mine.1);
}

#[test]
fn accounting_names_who_cancelled_a_job_outside_nightjar_and_is_asked_once_a_poll() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (JobId::one(50), JobId::one(51));
    let (da, db) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir_all(&da).unwrap();
    std::fs::create_dir_all(&db).unwrap();
    exited(&da, 143);
    exited(&db, 0);
    let mut jobs = HashMap::from([(1, Job::new(a, da, None)), (2, Job::new(b, db, None))]);
    let asked = RefCell::new(Vec::new());
    let acct = |ids: &[JobId]| {
        asked.borrow_mut().push(ids.to_vec());
        HashMap::from([(a, accounted(a, "CANCELLED", Some(0), (0, None)))])
    };
    let listing = [listed(1, a, "CANCELLED"), listed(2, b, "COMPLETED")];
    let over = over(&mut jobs, &listing, 9, crate::users::euid());
    let judged = judge(over, 9, &acct);
    assert_eq!(
        asked.borrow().clone(),
        vec![vec![a]],
        "one call, for the cancel only: a job that completed with its status needs none"
    );
    let (_, out) = judged.iter().find(|(r, _)| *r == 1).expect("run 1");
    assert_eq!(out.class, RunClass::Cancelled);
    let message = out.message.clone().unwrap_or_default();
    assert!(
        message.contains("SLURM job 50 was cancelled outside nightjar by root (uid 0)"),
        "{message}"
    );
}

#[test]
fn a_job_gone_from_squeue_without_a_status_ends_as_its_accounting_says() {
    let dir = tempfile::tempdir().unwrap();
    let id = JobId::one(60);
    let mut jobs = HashMap::from([(3, Job::new(id, dir.path().to_path_buf(), None))]);
    let acct = |_: &[JobId]| {
        HashMap::from([(id, accounted(id, "CANCELLED", Some(1001), (0, Some(9))))])
    };
    let mut judged = Vec::new();
    for now in [10_000, 11_000] {
        let over = over(&mut jobs, &[], now, crate::users::euid());
        judged = judge(over, now, &acct);
    }
    assert_eq!(judged.len(), 1, "over after its patience");
    let out = &judged[0].1;
    assert_eq!(out.class, RunClass::Cancelled, "{out:?}");
    assert_eq!(out.finished_at, 2_000, "SLURM's own end time");
    assert!(
        out.message.as_deref().unwrap_or_default().contains("SLURM job 60 ended CANCELLED"),
        "{out:?}"
    );
}

#[test]
fn a_gone_job_that_failed_is_lost_with_its_batch_steps_end_and_without_accounting_is_lost_unknown()
{
    let id = JobId::one(61);
    let failed = accounted(id, "FAILED", None, (0, Some(9)));
    let out = unreported(id, None, "", false, Some(&failed), 5_000);
    assert_eq!(out.class, RunClass::Lost);
    let message = out.message.unwrap_or_default();
    assert!(message.contains("SLURM job 61 ended FAILED"), "{message}");
    assert!(
        message.contains("its batch step ended with killed by signal 9 (SLURM's accounting)"),
        "{message}"
    );
    // Accounting that has it still running (its end not yet on record) or
    // none at all: SLURM no longer knows it.
    let running = accounted(id, "RUNNING", None, (0, None));
    for acct in [Some(&running), None] {
        let out = unreported(id, None, "", false, acct, 5_000);
        assert_eq!(out.class, RunClass::Lost);
        assert_eq!(out.finished_at, 5_000);
        assert!(
            (out.message.unwrap_or_default()).contains("is no longer known to SLURM"),
            "{acct:?}"
        );
    }
}
