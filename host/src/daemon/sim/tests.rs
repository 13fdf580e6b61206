//! The simulator on small traces whose schedules are worked out by hand.

use super::*;

/// A config without the default chain (its `priority` policy ages tasks),
/// so the built-in order decides, plus `text`.
fn cfg(text: &str) -> Config {
    let text = format!("{text}\n[plugins]\nchain = []\n");
    Config::parse(&text, Path::new("/sim-test.toml")).unwrap()
}

fn trace(csv: &str) -> Trace {
    Trace::parse("t.csv", csv.as_bytes()).unwrap()
}

fn opts(gpus: u32, order: Mode) -> Options {
    Options {
        machine: Machine {
            gpus,
            gpu_mem: None,
            slots: u32::MAX / 2,
            share: false,
        },
        order,
        start_ms: 0,
    }
}

/// (id, start s, end s) of every run, by id.
fn starts(t: &Trace, s: &Simulated) -> Vec<(i64, i64, i64)> {
    let mut v: Vec<_> = s
        .outcome
        .runs
        .iter()
        .map(|r| (t.jobs[r.job].id, r.start / 1000, r.end / 1000))
        .collect();
    v.sort();
    v
}

/// Two GPUs. Job 1 takes one for 10 s, job 2 wants both (arrives at 1),
/// job 3 wants one for 5 s (arrives at 2). Strict: 3 waits behind 2.
/// First fit: 3 starts at once on the free GPU. Backfill: 3 ends at 7, after
/// 2's reservation at 10? No: it ends by 7 <= 10, so it starts at 2.
const THREE: &str = "id,arrival_s,gpus,duration_s\n1,0,1,10\n2,1,2,4\n3,2,1,5\n";

#[test]
fn the_three_orders_treat_a_job_that_does_not_fit_as_documented() {
    let t = trace(THREE);
    let c = cfg("");
    let strict = simulate(&c, &t, opts(2, Mode::Strict)).unwrap();
    assert_eq!(starts(&t, &strict), [(1, 0, 10), (2, 10, 14), (3, 14, 19)]);
    let first_fit = simulate(&c, &t, opts(2, Mode::PassOver)).unwrap();
    assert_eq!(starts(&t, &first_fit), [(1, 0, 10), (2, 10, 14), (3, 2, 7)]);
    let easy = simulate(&c, &t, opts(2, Mode::Easy)).unwrap();
    assert_eq!(starts(&t, &easy), [(1, 0, 10), (2, 10, 14), (3, 2, 7)]);
}

#[test]
fn backfill_does_not_start_a_job_that_would_delay_the_head() {
    // As THREE, but job 3 runs 20 s: past job 2's reserved start at 10, and
    // on a GPU job 2 needs, so it waits; first fit starts it and delays 2.
    let t = trace("id,arrival_s,gpus,duration_s\n1,0,1,10\n2,1,2,4\n3,2,1,20\n");
    let c = cfg("");
    let easy = simulate(&c, &t, opts(2, Mode::Easy)).unwrap();
    assert_eq!(starts(&t, &easy), [(1, 0, 10), (2, 10, 14), (3, 14, 34)]);
    let first_fit = simulate(&c, &t, opts(2, Mode::PassOver)).unwrap();
    assert_eq!(
        starts(&t, &first_fit),
        [(1, 0, 10), (2, 22, 26), (3, 2, 22)]
    );
}

#[test]
fn figures_follow_their_definitions() {
    let t = trace(THREE);
    let s = simulate(&cfg(""), &t, opts(2, Mode::Strict))
        .unwrap()
        .summary;
    // Waits 0, 9, 12; completions 10, 13, 17; makespan 19 s.
    assert_eq!((s.jobs, s.started, s.never_started), (3, 3, 0));
    assert_eq!(s.wait_s.max, 12.0);
    assert_eq!(s.wait_s.p50, 9.0);
    assert_eq!(s.jct_s.mean, (10.0 + 13.0 + 17.0) / 3.0);
    assert_eq!(s.jct_s.p99, 17.0);
    assert_eq!(s.makespan_s, 19.0);
    assert_eq!(s.longest_wait_job, Some(3));
    // Busy: 10 + 2x4 + 5 = 23 GPU-s of 2 x 19.
    assert!(
        (s.utilisation - 23.0 / 38.0).abs() < 1e-9,
        "{}",
        s.utilisation
    );
}

#[test]
fn the_built_in_order_is_priority_then_age_then_id() {
    // One GPU held until 10; then 4 (high) before 2 and 3 (normal, by
    // arrival), and 5 before 6 (same arrival, by id).
    let t = trace(
        "id,arrival_s,gpus,duration_s,priority\n1,0,1,10,\n2,1,1,1,\n3,2,1,1,\n4,3,1,1,high\n6,4,1,1,\n5,4,1,1,\n",
    );
    let s = simulate(&cfg(""), &t, opts(1, Mode::Easy)).unwrap();
    let order: Vec<i64> = s.outcome.runs.iter().map(|r| t.jobs[r.job].id).collect();
    assert_eq!(order, [1, 4, 2, 3, 5, 6]);
}

#[test]
fn a_job_too_big_for_the_machine_never_starts_and_says_why() {
    let t = trace("id,arrival_s,gpus,duration_s,gpu_mem\n1,0,8,10,\n2,0,1,10,100GiB\n3,0,1,10,\n");
    let mut o = opts(4, Mode::Easy);
    o.machine.gpu_mem = Some(80 << 30);
    let s = simulate(&cfg(""), &t, o).unwrap();
    assert_eq!(s.outcome.runs.len(), 1);
    let never: Vec<(i64, &str)> = s
        .outcome
        .never
        .iter()
        .map(|(i, w)| (t.jobs[*i].id, w.as_str()))
        .collect();
    assert_eq!(never[0], (1, "needs 8 GPUs; the machine has 4"));
    assert!(
        never[1].1.starts_with("needs 100.0 GiB per GPU"),
        "{never:?}"
    );
}

#[test]
fn the_same_trace_gives_a_byte_identical_schedule() {
    let mut csv = String::from("id,arrival_s,gpus,duration_s,estimate_s\n");
    let mut x: u64 = 7;
    for i in 1..=2000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        csv += &format!(
            "{i},{},{},{},{}\n",
            i * 30,
            1 + x % 4,
            60 + x % 3600,
            60 + (x >> 8) % 3600
        );
    }
    let t = trace(&csv);
    let run = || {
        let s = simulate(&cfg(""), &t, opts(8, Mode::Easy)).unwrap();
        schedule_csv(&t.jobs, &s.outcome, 0)
    };
    let first = run();
    assert_eq!(first.lines().count(), 2001);
    assert_eq!(first, run());
}

#[test]
fn energy_is_priced_at_the_tariff_and_against_starting_on_arrival() {
    // 1 kW for an hour, from 00:00 (0.1/kWh) in both cases: the same cost.
    let c = cfg("[tariff]\nprice = 0.1\ncurrency = \"EUR\"\n");
    let t = trace("id,arrival_s,gpus,duration_s,power_w\n1,0,2,3600,500\n");
    let s = simulate(&c, &t, opts(2, Mode::Easy)).unwrap().summary;
    assert!((s.energy_kwh - 1.0).abs() < 1e-9, "{}", s.energy_kwh);
    assert!((s.cost - 0.1).abs() < 1e-9, "{}", s.cost);
    assert!((s.cost_at_arrival - 0.1).abs() < 1e-9);
    assert_eq!(s.currency, "EUR");
}

/// A config whose chain is `chain`, the hostile test plugin among them in
/// `mode`; the folder holding it lives as long as the second value.
fn with_hostile(chain: &[&str], mode: &str) -> (Config, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        env!("NIGHTJAR_TEST_PLUGIN_HOSTILE"),
        dir.path().join("hostile.wasm"),
    )
    .unwrap();
    let text = format!(
        "[plugins]\ndir = \"{}\"\nchain = {chain:?}\n[plugin.hostile.config]\nmode = \"{mode}\"\n",
        dir.path().display()
    );
    (Config::parse(&text, Path::new("/t.toml")).unwrap(), dir)
}

#[test]
fn a_policy_that_answers_one_snapshot_two_ways_is_refused_by_name() {
    let (c, _dir) = with_hostile(&["priority", "hostile"], "random");
    let e = simulate(&c, &trace(THREE), opts(2, Mode::Easy))
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.starts_with("policy hostile answered the same snapshot twice, differently"),
        "{e}"
    );
}

#[test]
fn a_policy_drawing_wasi_randomness_answers_each_snapshot_one_way_and_is_simulated() {
    // Its instance is kept between the two asks of one snapshot, and between
    // passes: each call's random stream starts from its snapshot again.
    let (c, _dir) = with_hostile(&["priority", "hostile"], "random-bytes");
    let s = simulate(&c, &trace(THREE), opts(2, Mode::Easy)).unwrap();
    assert!(s.summary.chain_passes >= 3, "{}", s.summary.chain_passes);
    assert_eq!(s.summary.started, 3);
}

#[test]
fn a_policy_that_does_not_load_is_named_and_nothing_is_simulated() {
    let c = Config::parse(
        "[plugins]\ndir = \"/nonexistent\"\nchain = [\"nosuch\"]\n",
        Path::new("/t.toml"),
    )
    .unwrap();
    let e = simulate(&c, &trace(THREE), opts(2, Mode::Easy))
        .err()
        .unwrap()
        .to_string();
    assert!(e.starts_with("policy nosuch did not load"), "{e}");
    assert!(e.contains("take it out of plugins.chain"), "{e}");
}

#[test]
fn the_default_chain_is_the_daemons_and_is_asked_every_pass() {
    let c = Config::parse("", Path::new("/t.toml")).unwrap();
    let s = simulate(&c, &trace(THREE), opts(2, Mode::Easy)).unwrap();
    assert_eq!(s.summary.passes, s.summary.chain_passes);
    assert!(s.summary.passes >= 3, "{}", s.summary.passes);
    assert_eq!(s.outcome.runs.len(), 3);
}

#[test]
fn a_policy_that_defers_for_ever_ends_the_simulation_and_names_the_jobs_it_held() {
    // `until-now` defers every job outside project `free`, asking to be
    // asked again at once (the host waits its minimum interval, 1 s).
    let (c, _dir) = with_hostile(&["hostile"], "until-now");
    let t = trace("id,arrival_s,gpus,duration_s,project\n1,0,1,10,free\n2,0,1,10,held\n");
    let s = simulate(&c, &t, opts(2, Mode::Easy)).unwrap();
    assert_eq!(s.outcome.runs.len(), 1, "the free job ran");
    assert_eq!(s.summary.never.len(), 1);
    assert_eq!(s.summary.never[0].id, 2);
    assert!(
        s.summary.never[0]
            .why
            .starts_with("still deferred by the policies")
    );
    // One a second while job 1 runs (10 s), then at most 10,000 that start nothing.
    assert!(s.summary.passes <= 10_012, "{}", s.summary.passes);
    assert!(
        s.summary
            .text()
            .contains("never        job 2: still deferred")
    );
}

#[test]
fn a_pass_that_could_start_nothing_is_not_made_and_the_schedule_is_unchanged() {
    // One GPU, job 1 holds it 0..100; jobs 2-5 (one GPU each) arrive while
    // it runs, when no pass could start them; job 6 wants no GPU.
    let t = trace(
        "id,arrival_s,gpus,duration_s\n1,0,1,100\n2,10,1,10\n3,20,1,10\n4,30,1,10\n5,40,1,10\n6,50,0,5\n",
    );
    let s = simulate(&cfg(""), &t, opts(1, Mode::Easy)).unwrap();
    assert_eq!(
        starts(&t, &s),
        [
            (1, 0, 100),
            (2, 100, 110),
            (3, 110, 120),
            (4, 120, 130),
            (5, 130, 140),
            (6, 50, 55)
        ]
    );
    // Passes at 0, 50 (job 6 needs no GPU), 100, 110, 120, 130; none at 10,
    // 20, 30, 40 or 55 (one GPU busy, every waiting job wants one).
    assert_eq!(s.outcome.passes, 6, "{:?}", s.outcome);
}

#[test]
fn ten_thousand_gpus_are_simulated_and_their_work_fits_as_it_should() {
    // 120 jobs of 1 to 9,000 GPUs on 10,000: every job runs, none overlaps
    // on a GPU, and the figures cover the whole machine.
    let mut csv = String::from("id,arrival_s,gpus,duration_s\n");
    for id in 1..=120u64 {
        let gpus = 1 + (id * 7_919) % 9_000;
        csv += &format!("{id},{},{gpus},{}\n", id * 30, 60 + (id * 131) % 3_600);
    }
    let t = trace(&csv);
    let s = simulate(&cfg(""), &t, opts(10_000, Mode::Easy)).unwrap();
    assert_eq!(s.outcome.runs.len(), 120);
    assert!(s.outcome.never.is_empty());
    let mut busy: Vec<Vec<(i64, i64)>> = vec![Vec::new(); 10_000];
    for r in &s.outcome.runs {
        assert_eq!(r.gpus.len() as u32, t.jobs[r.job].gpus);
        for &g in &r.gpus {
            busy[g as usize].push((r.start, r.end));
        }
    }
    for spans in &mut busy {
        spans.sort();
        assert!(spans.windows(2).all(|w| w[0].1 <= w[1].0), "{spans:?}");
    }
    assert!(s.summary.utilisation > 0.0 && s.summary.utilisation <= 1.0);
}

#[test]
fn a_policy_that_loops_or_sleeps_is_stopped_on_the_simulators_thread_and_named() {
    // The simulator runs its chain on its own thread, with no watchdog
    // thread: the epoch deadline stops a loop, and an import that would
    // block traps at once. Either way the call fails, and the simulation
    // ends naming the member and when: going on by its failure rule would
    // print the rest of the chain's figures as if they were the chain's.
    for (mode, cause) in [("loop", "timeout"), ("sleep-forever", "blocking-call")] {
        let (mut c, _dir) = with_hostile(&["priority", "hostile"], mode);
        c.plugins.evaluate_timeout = std::time::Duration::from_millis(200);
        let e = simulate(&c, &trace(THREE), opts(2, Mode::Easy))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.starts_with(&format!("policy hostile failed ({cause}): "))
                && e.contains(", at second 0 of the trace; nothing is simulated"),
            "{mode}: {e}"
        );
    }
}
