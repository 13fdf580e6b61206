use super::*;
use crate::config::{ExecutorConfig, ExecutorKind};
use std::time::Duration;

fn ask() -> JobAsk {
    JobAsk {
        name: "nightjar-7".into(),
        comment: comment("nightjar:vm-1a2b", 42),
        array: None,
        gpus: 2,
        cpus: Some(4),
        mem: Some(3 * (1 << 30) + 1),
        timeout: Some(Duration::from_secs(3600)),
        grace: Duration::from_secs(30),
        owner: None,
    }
}

#[test]
fn a_run_becomes_sbatch_arguments_from_its_task_and_the_executor_keys() {
    let cfg = ExecutorConfig {
        kind: ExecutorKind::Slurm,
        partition: "gpu".into(),
        qos: "lab".into(),
        extra_args: vec!["--constraint=a100".into()],
        ..Default::default()
    };
    let a = sbatch_args(
        &cfg,
        &ask(),
        "/s/runs/42/job.sh".as_ref(),
        "/s/runs/42/slurm.out".as_ref(),
    );
    for want in [
        "--parsable",
        "--export=NIL",
        "--no-requeue",
        "--job-name=nightjar-7",
        "--comment=nightjar:vm-1a2b:run:42",
        "--gres=gpu:2",
        "--cpus-per-task=4",
        "--mem=3073M",
        // 1 h + 30 s grace + 1 min, rounded up to the minute.
        "--time=0-01:02:00",
        "--partition=gpu",
        "--qos=lab",
        "--constraint=a100",
        "--output=/s/runs/42/slurm.out",
    ] {
        assert!(a.iter().any(|x| x == want), "{want} missing from {a:?}");
    }
    assert!(
        !a.iter()
            .any(|x| x.starts_with("--account") || x.starts_with("--array")),
        "empty keys are left out, and one run is no array: {a:?}"
    );
    assert_eq!(
        a.last().map(String::as_str),
        Some("/s/runs/42/job.sh"),
        "the script comes last"
    );
    let cpu_only = JobAsk {
        gpus: 0,
        cpus: None,
        mem: None,
        timeout: None,
        ..ask()
    };
    let a = sbatch_args(
        &ExecutorConfig::default(),
        &cpu_only,
        "/j".as_ref(),
        "/o".as_ref(),
    );
    assert!(
        !a.iter()
            .any(|x| x.starts_with("--gres") || x.starts_with("--time") || x.starts_with("--mem")),
        "{a:?}"
    );
}

#[test]
fn time_limits_round_up_to_the_minute_and_carry_days() {
    assert_eq!(time_limit(Duration::from_secs(1)), "0-00:01:00");
    assert_eq!(time_limit(Duration::from_secs(61)), "0-00:02:00");
    assert_eq!(time_limit(Duration::from_secs(26 * 3600)), "1-02:00:00");
    // sbatch wraps 1491309 days to 21:52:00.
    assert_eq!(
        time_limit(Duration::from_secs(1_491_308 * 86400)),
        "1491308-00:00:00"
    );
    assert_eq!(
        time_limit(Duration::from_secs(1_491_309 * 86400)),
        "UNLIMITED"
    );
}

#[test]
fn a_timeout_too_long_for_any_clock_is_no_time_limit_not_a_panic() {
    // `nightjar submit --timeout 18446744073709551615s`: any user can.
    let ask = JobAsk {
        timeout: Some(Duration::MAX),
        ..ask()
    };
    let a = sbatch_args(
        &ExecutorConfig::default(),
        &ask,
        "/j".as_ref(),
        "/o".as_ref(),
    );
    assert!(a.iter().any(|x| x == "--time=UNLIMITED"), "{a:?}");
}

#[test]
fn cluster_totals_count_each_node_once_and_only_gpu_gres() {
    let out = "\
n1|64|gpu:a100:4(S:0-1)
n1|64|gpu:a100:4(S:0-1)
n2|32|gpu:2,mps:200
n3|16|(null)
";
    assert_eq!(parse_totals(out), (112, 6));
}

#[test]
fn a_job_that_ended_without_a_status_is_classed_by_what_slurm_says() {
    let o = unreported_end(JobId::one(5), Some("CANCELLED"), "None", false, None, 1);
    assert_eq!(o.class, RunClass::Cancelled);
    assert!(o.message.unwrap().contains("outside nightjar"));
    let o = unreported_end(JobId::one(5), Some("NODE_FAIL"), "NodeDown", false, None, 1);
    assert_eq!(o.class, RunClass::Lost);
    assert!(o.message.unwrap().contains("NODE_FAIL (NodeDown)"));
    assert_eq!(
        unreported_end(JobId::one(5), None, "", false, None, 1).class,
        RunClass::Lost
    );
    assert_eq!(
        unreported_end(JobId::one(5), Some("TIMEOUT"), "", false, None, 1).class,
        RunClass::Timeout
    );
}

#[test]
fn sbatch_failures_tell_a_silent_controller_from_a_refused_job() {
    assert!(transient(
        "sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)"
    ));
    assert!(transient(
        "`sbatch --parsable` took over 30s and was killed"
    ));
    assert!(!transient(
        "sbatch: error: Batch job submission failed: Invalid generic resource (gres) specification"
    ));
    assert!(!transient(
        "sbatch: error: invalid partition specified: nope"
    ));
}

#[test]
fn node_gpus_carry_their_model_allocation_and_the_nodes_state() {
    let out = "\
n1|gpu:a100:4(S:0-1)|gpu:a100:3(IDX:0,2-3)|mixed|none
n1|gpu:a100:4(S:0-1)|gpu:a100:3(IDX:0,2-3)|mixed|none
n2|gpu:2|gpu:0|drained|fan broken
n3|(null)|gpu:0|idle|none
";
    let g = parse_nodes(out);
    assert_eq!(g.len(), 6, "{g:?}");
    assert_eq!((g[0].node.as_str(), g[0].model.as_str()), ("n1", "a100"));
    let allocated: Vec<bool> = g[..4].iter().map(|x| x.allocated).collect();
    assert_eq!(allocated, [true, false, true, true]);
    assert!(g[0].usable());
    assert_eq!(
        (g[4].model.as_str(), g[4].reason.as_deref()),
        ("gpu", Some("fan broken"))
    );
    assert!(!g[4].usable(), "a drained node's GPUs are not usable");
}

#[test]
fn a_job_is_on_a_node_by_name_or_by_its_bracketed_range() {
    assert!(on_node("n1", "n1"));
    assert!(on_node("n1,n2", "n2"));
    assert!(on_node("n[1-3]", "n2"));
    assert!(!on_node("n1", "n10"));
    assert!(!on_node("", "n1"));
}

#[test]
fn a_failed_node_is_a_lost_run_whatever_else() {
    let o = unreported_end(JobId::one(9), Some("NODE_FAIL"), "None", false, None, 1);
    assert_eq!(o.class, RunClass::Lost);
    assert!(node_failed("BOOT_FAIL") && !node_failed("FAILED"));
}

#[test]
fn a_job_slurm_itself_ended_is_classed_by_slurm_though_its_supervisor_left_a_status() {
    // SLURM's SIGTERM at its time limit or a preemption reached the task
    // too: the supervisor saw it killed by signal 15.
    let killed = RunOutcome {
        class: RunClass::Killed,
        exit_code: None,
        signal: Some(15),
        finished_at: 9,
        message: None,
    };
    let o = ended_by_slurm(JobId::one(5), "PREEMPTED", "None", killed.clone());
    assert_eq!(o.class, RunClass::Preempted, "queued again, not failed");
    assert_eq!((o.signal, o.finished_at), (Some(15), 9));
    let o = ended_by_slurm(JobId::one(5), "TIMEOUT", "None", killed.clone());
    assert_eq!(o.class, RunClass::Timeout);
    assert!(o.message.unwrap().contains("SLURM's time limit"));
    assert_eq!(
        ended_by_slurm(JobId::one(5), "OUT_OF_MEMORY", "", killed.clone()).class,
        RunClass::HostOom
    );
    // Ended on its own, or by nightjar: the supervisor's word stands.
    assert_eq!(
        ended_by_slurm(JobId::one(5), "COMPLETED", "", killed.clone()),
        killed
    );
    assert_eq!(
        ended_by_slurm(JobId::one(5), "FAILED", "", killed.clone()),
        killed
    );
    let ok = RunOutcome {
        class: RunClass::Ok,
        exit_code: Some(0),
        signal: None,
        ..killed
    };
    assert_eq!(ended_by_slurm(JobId::one(5), "TIMEOUT", "", ok.clone()), ok);
}

#[test]
fn a_batch_becomes_one_job_array_whose_elements_are_its_runs_in_order() {
    let tag = "nightjar:vm-1a2b";
    let ask = JobAsk {
        name: "nightjar-batch-40".into(),
        comment: batch_comment(tag, 40),
        array: Some(3),
        ..ask()
    };
    let a = sbatch_args(
        &ExecutorConfig::default(),
        &ask,
        "/s/batches/40/job.sh".as_ref(),
        "/s/batches/40/slurm-%a.out".as_ref(),
    );
    for want in [
        "--array=0-2",
        "--job-name=nightjar-batch-40",
        "--comment=nightjar:vm-1a2b:batch:40",
        "--output=/s/batches/40/slurm-%a.out",
    ] {
        assert!(a.iter().any(|x| x == want), "{want} missing from {a:?}");
    }
    assert_eq!(
        mark_of(tag, "nightjar:vm-1a2b:batch:40"),
        Some(Mark::Batch(40))
    );
    assert_eq!(mark_of(tag, "nightjar:vm-1a2b:run:40"), Some(Mark::Run(40)));
    assert_eq!(mark_of(tag, "nightjar:vm-ffff:batch:40"), None);
    assert_eq!(mark_of(tag, "nightjar:vm-1a2b:batch:x"), None);
    // squeue -r: one line per element, `<array>_<index>`; the batch's
    // runs are 40, 41 and 45.
    let out = "\
90_0|RUNNING|None|n1|0|nightjar:vm-1a2b:batch:40
90_1|PENDING|Resources||0|nightjar:vm-1a2b:batch:40
90_2|CANCELLED|None|n1|0|nightjar:vm-1a2b:batch:40
90_7|PENDING|Resources||0|nightjar:vm-1a2b:batch:40
90_[3-5]|PENDING|Resources||0|nightjar:vm-1a2b:batch:40
91_0|PENDING|Resources||0|nightjar:vm-1a2b:batch:77
92_0|PENDING|Resources||0|nightjar:vm-1a2b:run:46
93|PENDING|Resources||0|nightjar:vm-1a2b:batch:40
";
    let runs = |batch: i64, index: u32| match (batch, index) {
        (40, 0) => Some(40),
        (40, 1) => Some(41),
        (40, 2) => Some(45),
        _ => None,
    };
    let l = parse_squeue(out, tag, &|_, uid| uid == 0, &|_| None, &runs);
    let seen: Vec<(i64, String, &str)> = l
        .iter()
        .map(|l| (l.run, l.id().to_string(), l.state.as_str()))
        .collect();
    assert_eq!(
        seen,
        vec![
            (40, "90_0".to_string(), "RUNNING"),
            (41, "90_1".to_string(), "PENDING"),
            (45, "90_2".to_string(), "CANCELLED"),
        ],
        "an index past the batch's runs, a range, another batch, a run's mark on an element and a batch's on a job are skipped"
    );
    assert_eq!(
        JobId::parse("90_2"),
        Some(JobId {
            job: 90,
            index: Some(2)
        })
    );
    assert_eq!(JobId::parse(" 90 "), Some(JobId::one(90)));
    assert_eq!(JobId::parse("90_[3-5]"), None);
    assert!(
        JobId {
            job: 90,
            index: Some(2)
        } > JobId {
            job: 90,
            index: Some(1)
        }
    );
    assert!(
        squeue_call("e0").0.iter().any(|a| a == "-r"),
        "pending elements one line each"
    );
}
