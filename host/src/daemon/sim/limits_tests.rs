//! What the daemon does besides ordering and placing, in the simulator:
//! `[quotas]` per user, `[gpu] stagger`, and reserved capacity (the
//! first-party `reserve` policy, run in the chain like any member).

use super::*;

fn cfg(text: &str) -> Config {
    Config::parse(text, Path::new("/sim-test.toml")).unwrap()
}

fn opts(gpus: u32) -> Options {
    Options {
        machine: Machine {
            gpus,
            gpu_mem: None,
            slots: u32::MAX / 2,
            share: false,
        },
        order: Mode::Easy,
        start_ms: 0,
    }
}

/// (id, start s) of every run, by id.
fn starts(t: &Trace, s: &Simulated) -> Vec<(i64, i64)> {
    let mut v: Vec<_> = (s.outcome.runs.iter())
        .map(|r| (t.jobs[r.job].id, r.start / 1000))
        .collect();
    v.sort();
    v
}

#[test]
fn a_user_at_their_quota_waits_while_others_start() {
    let t = Trace::parse(
        "t.csv",
        "id,arrival_s,gpus,duration_s,user\n1,0,1,10,ann\n2,0,1,10,ann\n3,0,1,10,bo\n4,0,1,10,ann\n"
            .as_bytes(),
    )
    .unwrap();
    let c = cfg("[plugins]\nchain = []\n[quotas]\nrunning = 1\n[quotas.user.bo]\nrunning = 5\n");
    let s = simulate(&c, &t, opts(4)).unwrap();
    assert_eq!(starts(&t, &s), [(1, 0), (2, 10), (3, 0), (4, 20)]);
    // By GPUs: ann may hold 2; her 2-GPU job waits while her 1-GPU one runs.
    let t = Trace::parse(
        "t.csv",
        "id,arrival_s,gpus,duration_s,user\n1,0,1,10,ann\n2,0,2,10,ann\n3,0,1,5,ann\n".as_bytes(),
    )
    .unwrap();
    let c = cfg("[plugins]\nchain = []\n[quotas]\ngpus = 2\n");
    let s = simulate(&c, &t, opts(4)).unwrap();
    assert_eq!(starts(&t, &s), [(1, 0), (2, 10), (3, 0)]);
}

#[test]
fn two_starts_on_one_gpu_are_a_stagger_apart() {
    // Job 1 holds GPU 0 from 0 to 5 s, job 2 GPU 1 from 0; job 3 waits for
    // a GPU, and GPU 0 (free at 5 s) had a start at 0: it starts at 10 s.
    let t = Trace::parse(
        "t.csv",
        "id,arrival_s,gpus,duration_s\n1,0,1,5\n2,0,1,60\n3,0,1,5\n".as_bytes(),
    )
    .unwrap();
    let c = cfg("[plugins]\nchain = []\n[gpu]\nstagger = \"10s\"\n");
    let s = simulate(&c, &t, opts(2)).unwrap();
    assert_eq!(starts(&t, &s), [(1, 0), (2, 0), (3, 10)]);
    let c = cfg("[plugins]\nchain = []\n");
    let s = simulate(&c, &t, opts(2)).unwrap();
    assert_eq!(starts(&t, &s)[2], (3, 5), "without a stagger: at 5 s");
}

#[test]
fn capacity_reserved_for_urgent_work_is_kept_free_for_it() {
    let t = Trace::parse(
        "t.csv",
        "id,arrival_s,gpus,duration_s,priority\n1,0,1,10,normal\n2,0,1,10,normal\n3,0,1,10,normal\n4,15,1,10,urgent\n"
            .as_bytes(),
    )
    .unwrap();
    let c = cfg(
        "[plugins]\nchain = [\"reserve\"]\n[plugin.reserve.config.urgent-day]\ngpus = 1\nfor_priorities = [\"urgent\"]\n",
    );
    let s = simulate(&c, &t, opts(2)).unwrap();
    // One GPU is kept: the normal jobs run one at a time; the urgent one
    // starts on the kept GPU when it arrives.
    assert_eq!(starts(&t, &s), [(1, 0), (2, 10), (3, 20), (4, 15)]);
}

#[test]
fn a_starved_project_preempts_a_long_run_which_resumes_from_its_checkpoint() {
    // One GPU. Vision's preemptible job (10,000 s, checkpoints every 600 s)
    // holds it; bio's job arrives at 100 s. Fair share asks at once; the
    // host honours it at 600 s (preempt_min_runtime), bio runs 600-700 s,
    // and vision resumes at 700 s for the 9,400 s left after its checkpoint.
    let t = Trace::parse(
        "t.csv",
        "id,arrival_s,gpus,duration_s,project,preemptible,checkpoint_s\n1,0,1,10000,vision,true,600\n2,100,1,100,bio,false,\n"
            .as_bytes(),
    )
    .unwrap();
    let c = cfg(
        "[plugins]\nchain = [\"fair-share\"]\npreempt_min_runtime = \"10m\"\n[plugin.fair-share.config]\npreempt_below = 0.5\n[plugin.fair-share.config.shares]\nvision = 1\nbio = 1\n",
    );
    let s = simulate(&c, &t, opts(1)).unwrap();
    let mut runs: Vec<_> = (s.outcome.runs.iter())
        .map(|r| (t.jobs[r.job].id, r.start / 1000, r.end / 1000, r.preempted))
        .collect();
    runs.sort_by_key(|r| (r.1, r.0));
    assert_eq!(
        runs,
        [
            (1, 0, 600, true),
            (2, 600, 700, false),
            (1, 700, 10_100, false)
        ]
    );
    assert_eq!((s.summary.preemptions, s.summary.started), (1, 2));
    // Waits count to the first start, completion to the last end.
    assert_eq!(
        (s.summary.wait_s.max, s.summary.jct_s.max),
        (500.0, 10_100.0)
    );
    assert!(s.summary.text().contains("preempted    1 runs"));
    let csv = schedule_csv(&t.jobs, &s.outcome, 0);
    assert!(csv.contains("\n1,0,600,1,\"0\",1\n"), "{csv}");
    // Not preemptible: nothing is stopped; bio waits for the whole run.
    let t2 = Trace::parse(
        "t.csv",
        "id,arrival_s,gpus,duration_s,project,preemptible\n1,0,1,10000,vision,false\n2,100,1,100,bio,false\n"
            .as_bytes(),
    )
    .unwrap();
    let s = simulate(&c, &t2, opts(1)).unwrap();
    assert_eq!(
        (s.summary.preemptions, starts(&t2, &s)),
        (0, vec![(1, 0), (2, 10_000)])
    );
}

#[test]
fn a_job_that_runs_hot_closes_its_gpu_to_sharing_through_the_thermal_policy() {
    // Shared GPUs of 80 GiB. Job 1 runs on GPU 0; job 2 arrives and would
    // share GPU 0 (the lowest-numbered with room), unless GPU 0 is hot.
    let trace = |temp: &str| {
        Trace::parse(
            "t.csv",
            format!(
                "id,arrival_s,gpus,duration_s,gpu_mem,temp_c\n1,0,1,100,10GiB,{temp}\n2,10,1,100,10GiB,\n"
            )
            .as_bytes(),
        )
        .unwrap()
    };
    let c = cfg(
        "[plugins]\nchain = [\"thermal\"]\n[plugin.thermal.config]\nclose_above = 85\nreopen_below = 75\n[gpu]\nshare = true\n",
    );
    let mut o = opts(2);
    o.machine.share = true;
    o.machine.gpu_mem = Some(80 << 30);
    let on = |t: &Trace, s: &Simulated| {
        let r = s
            .outcome
            .runs
            .iter()
            .find(|r| t.jobs[r.job].id == 2)
            .unwrap();
        r.gpus.clone()
    };
    let cool = trace("");
    assert_eq!(
        on(&cool, &simulate(&c, &cool, o.clone()).unwrap()),
        [0],
        "shares GPU 0"
    );
    let hot = trace("90");
    assert_eq!(
        on(&hot, &simulate(&c, &hot, o.clone()).unwrap()),
        [1],
        "GPU 0 is closed at 90 °C"
    );
    let bad = Trace::parse(
        "t.csv",
        "id,arrival_s,gpus,duration_s,temp_c\n1,0,1,1,900\n".as_bytes(),
    );
    let e = bad.unwrap_err().to_string();
    assert!(
        e.contains("line 2, column temp_c: `900` is not a temperature"),
        "{e}"
    );
}
