//! The queue a simulation keeps from one chain pass to the next
//! (`queue.rs`) against one made afresh: `chain_order` checks every pass's
//! queue, under test, against the waiting jobs' head made task by task, so
//! these simulations fail on the first pass whose edited queue differs.
//! They play out what edits it: arrivals, starts, preemptions queuing jobs
//! again in their old places, a `plugins.max_queue` that cuts the head
//! short, and ages that are not the arrivals. The GPU views, kept with the
//! queue, are checked the same way against views made afresh.

use super::*;

/// A pseudo-random trace of `n` jobs: three projects, every priority,
/// preemptible jobs with checkpoints, arrivals bunched so the queue grows
/// past the cut and shrinks again.
pub(super) fn busy_trace(n: i64, seed: u64) -> Trace {
    let mut state = seed;
    let mut next = |below: u64| {
        state = (state.wrapping_mul(6364136223846793005)).wrapping_add(1442695040888963407);
        (state >> 33) % below
    };
    let mut csv =
        String::from("id,arrival_s,gpus,duration_s,project,priority,preemptible,checkpoint_s\n");
    let mut arrival = 0;
    for id in 1..=n {
        arrival += next(4) * next(120);
        let project = ["vision", "bio", "nlp"][next(3) as usize];
        let priority = ["low", "normal", "normal", "high", "urgent"][next(5) as usize];
        let preemptible = next(2) == 0;
        let checkpoint = if preemptible { "300" } else { "" };
        let (gpus, duration) = (1 + next(2), 200 + next(3000));
        csv.push_str(&format!(
            "{id},{arrival},{gpus},{duration},{project},{priority},{preemptible},{checkpoint}\n"
        ));
    }
    Trace::parse("t.csv", csv.as_bytes()).unwrap()
}

fn config() -> Config {
    let text = "[plugins]\nchain = [\"fair-share\", \"priority\"]\nmax_queue = 6\n\
        preempt_min_runtime = \"5m\"\n[plugin.fair-share.config]\npreempt_below = 0.9\n\
        [plugin.fair-share.config.shares]\nvision = 3\nbio = 1\nnlp = 1\n";
    Config::parse(text, Path::new("/sim-test.toml")).unwrap()
}

fn opts() -> Options {
    opts_on(3)
}

/// A machine of `gpus` whole GPUs and no other limit, EASY backfill, from
/// second 0.
pub(super) fn opts_on(gpus: u32) -> Options {
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

#[test]
fn a_kept_queue_is_the_waiting_head_every_pass_through_preemptions_and_a_cut_queue() {
    for seed in [1, 2, 3] {
        let t = busy_trace(60, seed);
        let s = simulate(&config(), &t, opts()).unwrap();
        assert!(s.summary.preemptions > 0, "seed {seed}: nothing preempted");
        assert!(
            s.summary.chain_passes > 60,
            "seed {seed}: {} passes",
            s.summary.chain_passes
        );
        assert_eq!(s.summary.started, 60, "seed {seed}: all started");
    }
}

#[test]
fn a_kept_queue_is_the_waiting_head_every_pass_when_jobs_rank_by_ages_not_arrivals() {
    let cfg = config();
    let t = busy_trace(50, 9);
    // A forecast's ages: some jobs rank as if submitted long before they
    // arrive (a retry's backoff), so a job can arrive ahead of those waiting.
    let ages: Vec<i64> = (t.jobs.iter().enumerate())
        .map(|(i, j)| if i % 3 == 0 { j.arrival / 4 } else { j.arrival })
        .collect();
    let engine = PluginEngine::new(None).unwrap();
    let mut chain = Chain::load_here(&cfg, Some(&engine));
    let out = Sim::new(&cfg, &t.jobs, opts(), Some(&mut chain))
        .with_ages(ages)
        .run()
        .unwrap();
    assert!(out.preemptions > 0, "nothing preempted");
    assert!(out.chain_passes > 50, "{} passes", out.chain_passes);
    assert!(out.never.is_empty(), "{:?}", out.never);
}

#[test]
fn kept_gpu_views_are_fresh_ones_on_a_pool_numbered_out_of_order_as_gpus_close_and_reopen() {
    // `chain_order` checks every pass's GPU views, under test, against
    // views made afresh. A forecast plays on the live pool, whose indices
    // need be neither 0..N nor in order; hot jobs make the thermal policy
    // close GPUs and reopen them as they cool, so `closed_by` changes.
    let cfg = Config::parse(
        "[plugins]\nchain = [\"thermal\", \"fair-share\", \"priority\"]\nmax_queue = 6\n\
         [plugin.thermal.config]\nclose_above = 85\nreopen_below = 75\n",
        Path::new("/sim-test.toml"),
    )
    .unwrap();
    let mut t = busy_trace(50, 5);
    for (i, j) in t.jobs.iter_mut().enumerate() {
        j.temp_c = [Some(90.0), None, Some(70.4), Some(86.6)][i % 4];
        j.power_w = Some(100.0 + i as f64);
    }
    let mut pool = Sim::new(&cfg, &t.jobs, opts(), None).pool;
    pool.gpus = [7, 2, 4].map(crate::scheduler::PoolGpu::unmonitored).into();
    let engine = PluginEngine::new(None).unwrap();
    let mut chain = Chain::load_here(&cfg, Some(&engine));
    let out = Sim::new(&cfg, &t.jobs, opts(), Some(&mut chain))
        .on_pool(pool)
        .run()
        .unwrap();
    assert!(out.chain_passes > 50, "{} passes", out.chain_passes);
    assert!(out.never.is_empty(), "{:?}", out.never);
    let on = |g: u32| out.runs.iter().any(|r| r.gpus.contains(&g));
    assert!(on(7) && on(2) && on(4), "every GPU ran a job");
}
