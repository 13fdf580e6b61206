//! Reading SLURM's accounting: `sacct`'s lines as the cluster prints them.

use std::cell::RefCell;

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
    let jobs = parse_sacct(out, &[]);
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
    let jobs = parse_sacct(out, &[]);
    assert_eq!(jobs[&JobId::one(7)].state, "NODE_FAIL");
}

#[test]
fn lines_that_are_not_sacct_records_are_skipped() {
    let out = "\nnot|enough\n|||||\nx|FAILED|1:0|None|1|2\n3|FAILED|1:0|None|1|2|extra\n";
    assert!(parse_sacct(out, &[]).is_empty());
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
fn sacct_is_asked_for_each_job_and_each_elements_array_by_id() {
    let element = |i| JobId {
        job: 6,
        index: Some(i),
    };
    let args = sacct_args(&[JobId::one(5), element(2), element(3)]);
    let j = args.iter().position(|a| a == "-j").expect("-j");
    // `-j 6_2` has no record of an element cancelled while it waited
    // (its array's range has it): the array's id has both.
    assert_eq!(args[j + 1], "5,6");
    assert!(args.iter().any(|a| a == "-X"), "allocations, not steps");
}

/// What the test cluster's `sacct` printed for array 2, all six of whose
/// elements were cancelled (`scancel 2`) while they waited: one record of
/// the array's range, none of any element; `sacct -j 2_3` printed nothing.
const WAITING_ARRAY_CANCELLED: &str =
    "2_[0-5]|CANCELLED by 0|0:0|JobHeldUser|1796497653|1796497654\n";

#[test]
fn an_element_cancelled_while_its_array_waited_is_read_from_the_arrays_range_record() {
    let element = JobId {
        job: 2,
        index: Some(3),
    };
    let asked = RefCell::new(Vec::new());
    let sacct = |args: &[String]| {
        asked.borrow_mut().push(args.to_vec());
        let j = args.iter().position(|a| a == "-j").expect("-j");
        // As the cluster answers: the range only to the array's own id.
        Ok(match args[j + 1].split(',').any(|i| i == "2") {
            true => WAITING_ARRAY_CANCELLED.to_string(),
            false => String::new(),
        })
    };
    let off = AtomicI64::new(0);
    let said = lookup_with(&[element], &sacct, &|| 1, &off).expect("accounting answers");
    let job = said
        .get(&element)
        .expect("the element, from its array's range");
    assert_eq!((job.state.as_str(), job.by), ("CANCELLED", Some(0)));
    assert!(job.ended());
    assert_eq!(job.id, element);
    // Ranges as SLURM prints them: lists, a throttle; an index outside is none.
    let out = "9_[1,3-5%2]|CANCELLED by 1001|0:0|None|5|6\n9_4|COMPLETED|0:0|None|5|7\n";
    let ids = |i: &[u32]| -> Vec<JobId> {
        (i.iter())
            .map(|&i| JobId {
                job: 9,
                index: Some(i),
            })
            .collect()
    };
    let jobs = parse_sacct(out, &ids(&[0, 1, 2, 3, 4, 5, 6]));
    let found: Vec<u32> = {
        let mut f: Vec<u32> = jobs.keys().filter_map(|j| j.index).collect();
        f.sort_unstable();
        f
    };
    assert_eq!(found, vec![1, 3, 4, 5]);
    assert_eq!(jobs[&ids(&[5])[0]].by, Some(1001));
    assert_eq!(
        jobs[&ids(&[4])[0]].state,
        "COMPLETED",
        "an element's own record is its word"
    );
}

#[test]
fn thousands_of_ends_at_once_are_asked_in_calls_the_kernel_takes() {
    // Linux refuses one argument over 128 KiB (MAX_ARG_STRLEN): 12,000
    // ids of 8 digits on one `-j` did not start at all (E2BIG).
    let ids: Vec<JobId> = (0..20_000).map(|i| JobId::one(10_000_000 + i)).collect();
    let lists = RefCell::new(Vec::new());
    let sacct = |args: &[String]| {
        let j = args.iter().position(|a| a == "-j").expect("-j");
        lists.borrow_mut().push(args[j + 1].clone());
        Ok(String::new())
    };
    let off = AtomicI64::new(0);
    assert!(lookup_with(&ids, &sacct, &|| 1, &off).is_some());
    let lists = lists.into_inner();
    assert!(
        lists.iter().all(|l| l.len() < 64 << 10),
        "{:?}",
        lists.iter().map(String::len).collect::<Vec<_>>()
    );
    let asked: usize = lists.iter().map(|l| l.split(',').count()).sum();
    assert_eq!(asked, ids.len(), "every id asked once");
}

#[test]
fn sacct_failing_slowly_is_not_asked_again_for_a_minute_after_it_failed() {
    // A hung slurmdbd: sacct killed at the commands' limit, 30 s on.
    let clock = std::cell::Cell::new(0);
    let sacct = |_: &[String]| {
        clock.set(30_000);
        Err(anyhow::anyhow!("`sacct ...` took over 30s and was killed"))
    };
    let off = AtomicI64::new(0);
    assert!(lookup_with(&[JobId::one(5)], &sacct, &|| clock.get(), &off).is_none());
    assert_eq!(off.load(Ordering::Relaxed), 30_000 + FAILED_FOR_MS);
    // Meanwhile not asked at all.
    let never = |_: &[String]| -> anyhow::Result<String> { panic!("asked while off") };
    assert!(lookup_with(&[JobId::one(5)], &never, &|| 89_999, &off).is_none());
}
