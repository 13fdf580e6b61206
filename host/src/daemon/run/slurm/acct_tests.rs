//! Reading SLURM's accounting: `sacct`'s lines as the cluster prints them.

use super::*;

#[test]
fn sacct_lines_give_each_jobs_state_who_cancelled_it_its_exit_and_its_end() {
    // As `SLURM_TIME_FORMAT=%s sacct -n -P -X -j ... -o` SACCT_FORMAT
    // printed them on the test cluster.
    let out = "2018|CANCELLED by 0|0:0|None|1764960740|1764960741\n\
               2019|FAILED|3:0|None|1764960741|1764960741\n\
               2020_0|FAILED|0:9|None|1764960741|1764960742\n\
               2021|RUNNING|0:0|None|1764960741|Unknown\n\
               2022_[3-9]|PENDING|0:0|Priority|1764960741|Unknown\n";
    let jobs = parse_sacct(out);
    assert_eq!(jobs.len(), 4, "the pending range is no one job: {jobs:?}");
    let cancelled = &jobs[&JobId::one(2018)];
    assert_eq!(cancelled.state, "CANCELLED");
    assert_eq!(cancelled.by, Some(0));
    assert_eq!(cancelled.end_ms, Some(1_764_960_741_000));
    assert!(cancelled.ended());
    let failed = &jobs[&JobId::one(2019)];
    assert_eq!(
        (failed.exit_code, failed.signal, failed.by),
        (3, None, None)
    );
    assert_eq!(failed.step_end(), "exit code 3");
    let killed = &jobs[&JobId {
        job: 2020,
        index: Some(0),
    }];
    assert_eq!(killed.signal, Some(9));
    assert_eq!(killed.step_end(), "killed by signal 9");
    let running = &jobs[&JobId::one(2021)];
    assert!(!running.ended());
    assert_eq!(running.end_ms, None);
}

#[test]
fn where_slurm_reused_a_job_id_the_newest_record_is_the_jobs() {
    // A cluster whose state was cleared numbers its jobs from 1 again;
    // its accounting keeps both.
    let out = "7|COMPLETED|0:0|None|1700000000|1700000100\n\
               7|NODE_FAIL|0:0|None|1764960741|1764960800\n\
               7|TIMEOUT|0:15|None|1600000000|1600000100\n";
    let jobs = parse_sacct(out);
    assert_eq!(jobs[&JobId::one(7)].state, "NODE_FAIL");
}

#[test]
fn lines_that_are_not_sacct_records_are_skipped() {
    let out = "\nnot|enough\n|||||\nx|FAILED|1:0|None|1|2\n3|FAILED|1:0|None|1|2|extra\n";
    assert!(parse_sacct(out).is_empty());
}

#[test]
fn a_cluster_without_accounting_is_told_from_sacct_failing_otherwise() {
    // sacct's words on a cluster with AccountingStorageType=accounting_storage/none.
    assert!(disabled(
        "`sacct -n -P -X -j 5 -o JobID` failed (exit status: 1): Slurm accounting storage is disabled"
    ));
    assert!(!disabled(
        "`sacct ...` failed (exit status: 1): sacct: error: Problem talking to the database: Connection refused"
    ));
}

#[test]
fn who_cancelled_is_named_by_user_and_uid_where_accounting_says() {
    assert_eq!(cancelled_by(Some(0)), "by root (uid 0)");
    assert_eq!(cancelled_by(Some(4_000_000_000)), "by uid 4000000000");
    assert_eq!(
        cancelled_by(None),
        "(scancel by a user or an administrator)"
    );
}

#[test]
fn sacct_is_asked_for_each_job_and_element_by_id() {
    let args = sacct_args(&[
        JobId::one(5),
        JobId {
            job: 6,
            index: Some(2),
        },
    ]);
    let j = args.iter().position(|a| a == "-j").expect("-j");
    assert_eq!(args[j + 1], "5,6_2");
    assert!(args.iter().any(|a| a == "-X"), "allocations, not steps");
}
