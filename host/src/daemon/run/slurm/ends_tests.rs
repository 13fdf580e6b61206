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
    judge(over, now, &|_| None).ended
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
        Some(HashMap::from([(
            a,
            accounted(a, "CANCELLED", Some(0), (0, None)),
        )]))
    };
    let listing = [listed(1, a, "CANCELLED"), listed(2, b, "COMPLETED")];
    let over = over(&mut jobs, &listing, 9, crate::users::euid());
    let judged = judge(over, 9, &acct).ended;
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
        Some(HashMap::from([(
            id,
            accounted(id, "CANCELLED", Some(1001), (0, Some(9))),
        )]))
    };
    let mut judged = Vec::new();
    for now in [10_000, 11_000] {
        let over = over(&mut jobs, &[], now, crate::users::euid());
        judged = judge(over, now, &acct).ended;
    }
    assert_eq!(judged.len(), 1, "over after its patience");
    let out = &judged[0].1;
    assert_eq!(out.class, RunClass::Cancelled, "{out:?}");
    assert_eq!(out.finished_at, 2_000, "SLURM's own end time");
    assert!(
        out.message
            .as_deref()
            .unwrap_or_default()
            .contains("SLURM job 60 ended CANCELLED"),
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

#[test]
fn an_end_accounting_does_not_have_yet_waits_a_while_for_it_and_no_longer() {
    let dir = tempfile::tempdir().unwrap();
    let id = JobId::one(70);
    exited(dir.path(), 143);
    let mut jobs = HashMap::from([(4, Job::new(id, dir.path().to_path_buf(), None))]);
    let listing = [listed(4, id, "CANCELLED")];
    // slurmctld has not told slurmdbd yet: accounting has it running, or
    // (a job array's element) not at all.
    let running = |_: &[JobId]| {
        Some(HashMap::from([(
            id,
            accounted(id, "RUNNING", None, (0, None)),
        )]))
    };
    let absent = |_: &[JobId]| Some(HashMap::new());
    type Accounting<'a> = &'a dyn Fn(&[JobId]) -> acct::Said;
    let lagging: [Accounting; 2] = [&running, &absent];
    for acct in lagging {
        jobs.get_mut(&4).unwrap().accounting_since = None;
        for now in [10_000, 15_000, 19_999] {
            let over = over(&mut jobs, &listing, now, crate::users::euid());
            let judged = judge(over, now, acct);
            assert!(judged.ended.is_empty(), "at {now}");
            assert_eq!(judged.later, vec![4]);
            jobs.get_mut(&4)
                .unwrap()
                .accounting_since
                .get_or_insert(now);
        }
        // Then recorded without accounting's word, not held for ever.
        let over = over(&mut jobs, &listing, 20_000, crate::users::euid());
        let judged = judge(over, 20_000, acct);
        assert_eq!(judged.ended.len(), 1);
        let message = judged.ended[0].1.message.clone().unwrap_or_default();
        assert!(
            message.contains("(scancel by a user or an administrator)"),
            "{message}"
        );
    }
    // A cluster without accounting: no wait at all.
    let over = over(&mut jobs, &listing, 30_000, crate::users::euid());
    assert_eq!(judge(over, 30_000, &|_| None).ended.len(), 1);
}

#[test]
fn a_status_left_by_a_job_gone_from_squeue_is_read_with_accountings_word_on_the_job() {
    let dir = tempfile::tempdir().unwrap();
    let id = JobId::one(80);
    exited(dir.path(), 143);
    let o = |status| Over {
        run: 5,
        id,
        asked: false,
        reason: String::new(),
        seen: None,
        status,
        waiting_since: None,
    };
    let cancelled = |_: &[JobId]| {
        Some(HashMap::from([(
            id,
            accounted(id, "CANCELLED", Some(0), (0, Some(15))),
        )]))
    };
    let status = || crate::daemon::run::slurm::folder::status_in(dir.path());
    let judged = judge(vec![o(status())], 9, &cancelled).ended;
    let out = &judged[0].1;
    assert_eq!(out.class, RunClass::Cancelled, "{out:?}");
    assert!(
        (out.message.as_deref().unwrap_or_default())
            .contains("SLURM job 80 was cancelled outside nightjar by root (uid 0)"),
        "{out:?}"
    );
    // Without accounting: the supervisor's word as it is.
    let judged = judge(vec![o(status())], 9, &|_| None).ended;
    assert_eq!(judged[0].1.class, RunClass::AppError, "{:?}", judged[0].1);
}

#[test]
fn an_end_waits_no_longer_for_accounting_when_the_clock_stepped_back() {
    let dir = tempfile::tempdir().unwrap();
    let id = JobId::one(90);
    exited(dir.path(), 143);
    let mut jobs = HashMap::from([(6, Job::new(id, dir.path().to_path_buf(), None))]);
    let listing = [listed(6, id, "CANCELLED")];
    // Cancelled outside nightjar; accounting has no record of it (an
    // element cancelled while its array waited may never have one).
    let absent = |_: &[JobId]| Some(HashMap::new());
    jobs.get_mut(&6).unwrap().accounting_since = Some(3_600_000);
    // The wall clock stepped back an hour (NTP) since the wait began.
    let mut polls = Vec::new();
    for now in [7_000, 12_000, 17_000] {
        let over = over(&mut jobs, &listing, now, crate::users::euid());
        polls.push(judge(over, now, &absent).ended.len());
    }
    assert_eq!(
        polls,
        vec![1, 1, 1],
        "recorded, not held until the clock is back where the wait began"
    );
}
