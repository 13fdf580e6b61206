use super::GpuFit;
use super::*;

fn report() -> WhyReport {
    WhyReport {
        id: 7,
        name: "train".into(),
        state: "queued".into(),
        submitted_at: 0,
        reason: None,
        waiting_for: vec![],
        fit: Some(Fit {
            slots_free: 1,
            gpus_wanted: 2,
            gpus: vec![
                GpuFit {
                    index: 0,
                    unusable: None,
                },
                GpuFit {
                    index: 1,
                    unusable: Some(Unusable::ClosedByPolicy {
                        reason: "closed by thermal: GPU 1 at 91°C".into(),
                    }),
                },
            ],
            cpus_wanted: 0,
            cpus_free: 2,
        }),
        slots: 2,
        next_firing: None,
        run: None,
        verdicts: vec![],
        refused_preemption: None,
        members: None,
    }
}

#[test]
fn a_report_names_each_gpu_that_stands_in_the_way() {
    let lines = report().lines(1_000);
    assert_eq!(lines[0], "task 7 (train) is queued");
    assert_eq!(lines[1], "waiting for GPUs: needs 2, 1 open and free now");
    assert_eq!(lines[2], "  GPU 1: closed by thermal: GPU 1 at 91°C");
}

#[test]
fn a_deferred_task_shows_its_reason_and_every_policys_verdict_in_chain_order() {
    let mut r = report();
    r.fit = None;
    r.reason = Some("deferred by hostile: held by the hostile test plugin".into());
    r.verdicts = vec![
        PolicyVerdict {
            plugin: "priority".into(),
            verdict: "allow".into(),
            reason: "score 100".into(),
            since: 0,
        },
        PolicyVerdict {
            plugin: "hostile".into(),
            verdict: "defer".into(),
            reason: "held by the hostile test plugin".into(),
            since: 0,
        },
    ];
    let lines = r.lines(1_000);
    assert_eq!(
        lines[1],
        "waiting: deferred by hostile: held by the hostile test plugin"
    );
    let verdicts: Vec<&String> = lines.iter().filter(|l| l.contains(") since ")).collect();
    assert_eq!(verdicts.len(), 2, "{lines:?}");
    assert!(
        verdicts[0].starts_with("  priority: allow (score 100) since "),
        "{lines:?}"
    );
    assert!(
        verdicts[1].starts_with("  hostile: defer (held by the hostile test plugin) since "),
        "{lines:?}"
    );
}

#[test]
fn a_task_waiting_for_dependencies_names_them_before_any_reason() {
    let mut r = report();
    r.fit = None;
    r.reason = Some("deferred by hostile".into());
    r.waiting_for = vec![WaitingDep {
        id: 3,
        name: "prep".into(),
        state: "queued".into(),
    }];
    let lines = r.lines(1_000);
    assert_eq!(lines[1], "waiting for dependencies: 3 (prep, queued)");
    assert!(
        !lines.iter().any(|l| l.starts_with("waiting: ")),
        "{lines:?}"
    );
}

#[test]
fn a_started_task_says_why_it_started_then() {
    let mut r = report();
    r.fit = None;
    r.state = "running".into();
    r.run = Some(RunWhy {
        id: 12,
        started_at: 0,
        gpus: Some("0,1".into()),
        because: "score 200 = priority 200".into(),
        waited_ms: 2_000,
        class: None,
        message: None,
        executor: Some("SLURM job 7: PENDING (Resources)".into()),
    });
    let lines = r.lines(1_000);
    assert!(
        lines.iter().any(|l| l.starts_with("run 12 started ")
            && l.ends_with(" on GPU 0,1: score 200 = priority 200")),
        "{lines:?}"
    );
    assert!(
        lines.contains(&"  SLURM job 7: PENDING (Resources)".to_string()),
        "the executor's side follows ours: {lines:?}"
    );
}

#[test]
fn the_report_survives_the_wire() {
    let r = report();
    let wire = serde_json::to_string(&r).unwrap();
    assert_eq!(serde_json::from_str::<WhyReport>(&wire).unwrap(), r);
    assert!(wire.contains("\"kind\":\"closed-by-policy\""), "{wire}");
}
