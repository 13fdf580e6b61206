//! `squeue`'s listing as the poller reads it: which lines are this
//! daemon's jobs, whatever other users' jobs and their comments hold.

use super::*;

#[test]
fn squeue_lines_of_other_daemons_and_users_are_skipped_and_the_newest_job_of_a_run_kept() {
    let tag = "nightjar:vm-1a2b";
    let out = "\
12|PENDING|Resources||0|nightjar:vm-1a2b:run:42
13|RUNNING|None|n1|0|nightjar:vm-ffff:run:42
14|COMPLETED|None|n1|0|(null)
15|RUNNING|None|n2|0|nightjar:vm-1a2b:run:43
11|CANCELLED|None|n2|0|nightjar:vm-1a2b:run:43
garbage
16|PENDING|Priority||0|nightjar:vm-1a2b:run:x
17|RUNNING|None|n1|0|a|b|c
";
    let l = parse_squeue(out, tag, &|_, uid| uid == 0, &|_| None, &|_, _| None);
    assert_eq!(l.len(), 2, "{l:?}");
    assert_eq!(
        (l[0].run, l[0].job, l[0].reason.as_str()),
        (42, 12, "Resources")
    );
    assert!(waiting(&l[0].state) && !l[0].ended());
    assert_eq!(
        (l[1].run, l[1].job, l[1].state.as_str()),
        (43, 15, "RUNNING")
    );
    assert_eq!(parse_job_id("77;cluster\n"), Some(77));
    assert_eq!(parse_job_id("sbatch: error"), None);
}

#[test]
fn another_users_job_never_passes_for_a_run_by_copying_its_comment() {
    let tag = "nightjar:vm-1a2b";
    // 21 is the run's job; 22, newer, is another user's with the same comment.
    let out = "\
21|RUNNING|None|n1|0|nightjar:vm-1a2b:run:42
22|COMPLETED|None|n1|1000|nightjar:vm-1a2b:run:42
23|PENDING|None||1000|nightjar:vm-1a2b:run:43
";
    let l = parse_squeue(out, tag, &|_, uid| uid == 0, &|_| None, &|_, _| None);
    assert_eq!(l.len(), 1, "{l:?}");
    assert_eq!(
        (l[0].run, l[0].job, l[0].state.as_str()),
        (42, 21, "RUNNING")
    );
    // A root daemon whose run 43 is the job of its owner, uid 1000
    // (`job_user = "owner"`): that owner's job is the run's, another
    // user's with the same comment is not.
    let owner_of = |run: i64| if run == 43 { 1000 } else { 0 };
    let may_own = |run: i64, uid: u32| uid == 0 || uid == owner_of(run);
    let l = parse_squeue(out, tag, &may_own, &|_| None, &|_, _| None);
    assert_eq!(
        l.iter().map(|l| (l.run, l.job)).collect::<Vec<_>>(),
        [(42, 21), (43, 23)]
    );
    let other = "24|RUNNING|None|n1|1001|nightjar:vm-1a2b:run:43\n";
    assert!(parse_squeue(other, tag, &may_own, &|_| None, &|_, _| None).is_empty());
    // A job the daemon knows by its id stays its run's when its owner
    // changes its comment (`scontrol update JobId=23 Comment=...`).
    let renamed = "23|RUNNING|None|n1|1000|mine now\n";
    let known = |id: JobId| (id == JobId::one(23)).then_some(43);
    let l = parse_squeue(renamed, tag, &may_own, &known, &|_, _| None);
    assert_eq!(
        l.iter().map(|l| (l.run, l.job)).collect::<Vec<_>>(),
        [(43, 23)]
    );
    // Not when another user's job has that id's line: SLURM's user decides.
    let theirs = "23|RUNNING|None|n1|1001|mine now\n";
    assert!(parse_squeue(theirs, tag, &may_own, &known, &|_, _| None).is_empty());
    // The user's own daemon sees only its own, hidden partitions included.
    assert_eq!(
        parse_squeue(out, tag, &|_, uid| uid == 1000, &|_| None, &|_, _| None).len(),
        2
    );
    let (args, _) = squeue_call("e0");
    assert!(args.iter().any(|a| a == "-a") && args.iter().any(|a| a == "all"));
    assert!(
        !args
            .iter()
            .any(|a| a.starts_with("-u") || a.starts_with("--user")),
        "an unknown user makes squeue list nothing with exit 0"
    );
}

#[test]
fn a_comment_with_a_newline_stays_in_its_jobs_line_and_forges_no_line_of_its_own() {
    let tag = "nightjar:vm-1a2b";
    let end = fresh_mark().unwrap();
    assert_eq!(end.len(), 32);
    assert_ne!(end, fresh_mark().unwrap());
    // The mark is in squeue's environment, its own user's to read, never
    // in its arguments, which any user reads in /proc/<pid>/cmdline.
    let (args, env) = squeue_call(&end);
    assert!(args.iter().all(|a| !a.contains(&end)), "{args:?}");
    assert!(
        args.iter()
            .all(|a| !a.starts_with("-o") && !a.starts_with("-O"))
    );
    let [("SQUEUE_FORMAT", format)] = &env[..] else {
        panic!("{env:?}");
    };
    assert!(format.ends_with(&format!("|{end}")), "{format}");
    // Run 42's job, then nobody's whose comment ends its line and writes
    // another: a job of the daemon's user (uid 0) with run 42's comment,
    // newer, ended. Then a listing cut short.
    let out = format!(
        "21|RUNNING|None|n1|0|nightjar:vm-1a2b:run:42|{end}\n\
         22|RUNNING|None|n1|65534|x\n99|COMPLETED|None|n1|0|nightjar:vm-1a2b:run:42\r|{end}\n\
         23|RUNNING|None|n1|0|nightjar:vm-1a2b:run:43|{end}\n\
         24|PENDING|None||0|nightjar:vm-1a2b:run:44"
    );
    let lines = squeue_lines(&out, &end);
    assert_eq!(
        lines,
        "21|RUNNING|None|n1|0|nightjar:vm-1a2b:run:42\n\
         22|RUNNING|None|n1|65534|x 99|COMPLETED|None|n1|0|nightjar:vm-1a2b:run:42 \n\
         23|RUNNING|None|n1|0|nightjar:vm-1a2b:run:43\n"
    );
    let l = parse_squeue(&lines, tag, &|_, uid| uid == 0, &|_| None, &|_, _| None);
    assert_eq!(
        l.iter()
            .map(|l| (l.run, l.job, l.state.as_str()))
            .collect::<Vec<_>>(),
        [(42, 21, "RUNNING"), (43, 23, "RUNNING")]
    );
    // A mark guessed wrong ends no line.
    assert_eq!(squeue_lines(&out, "0123"), "");
}
