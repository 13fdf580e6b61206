//! A chain whose members' calls are split between the caller's thread and
//! a helper's at each pass (`Chain::share_work`, what `simulate` does)
//! plays the schedule a chain on one thread plays, start for start.

use super::kept_tests::{busy_trace, opts_on};
use super::*;

/// The four policies of the benchmark's chain, with preemption by fair
/// share, on a busy trace: every pass asks all four.
fn config() -> Config {
    let text = "timezone = \"Asia/Shanghai\"\n\
        [plugins]\nchain = [\"priority\", \"offpeak-tariff\", \"fair-share\", \"thermal\"]\n\
        preempt_min_runtime = \"5m\"\n\
        [tariff]\ncurrency = \"CNY\"\nprice = 1.2\n\
        [[tariff.windows]]\nfrom = \"23:00\"\nto = \"07:00\"\nprice = 0.35\n\
        [plugin.offpeak-tariff.config]\nmax_wait = \"2h\"\n\
        [plugin.fair-share.config]\npreempt_below = 0.9\n\
        [plugin.fair-share.config.shares]\nvision = 3\nbio = 1\nnlp = 1\n";
    Config::parse(text, Path::new("/sim-test.toml")).unwrap()
}

fn opts() -> Options {
    opts_on(4)
}

#[test]
fn a_chain_sharing_its_calls_with_a_helper_thread_plays_the_schedule_of_one_that_does_not() {
    let cfg = config();
    let t = busy_trace(120, 4);
    let engine = PluginEngine::new(None).unwrap();
    let mut alone = Chain::load_here(&cfg, Some(&engine));
    let one = Sim::new(&cfg, &t.jobs, opts(), Some(&mut alone))
        .refusing_failures()
        .run()
        .unwrap();
    let mut sharing = Chain::load_here(&cfg, Some(&engine));
    sharing.share_work();
    // Split by the members' measured costs at every pass, however fast
    // this machine runs them (a real run splits passes of 20 us or more).
    Chain::share_every_pass_in_tests(true);
    let two = Sim::new(&cfg, &t.jobs, opts(), Some(&mut sharing))
        .refusing_failures()
        .run();
    Chain::share_every_pass_in_tests(false);
    let two = two.unwrap();
    assert_eq!(alone.calls_handed(), 0);
    if std::thread::available_parallelism().is_ok_and(|n| n.get() > 1) {
        // Every pass but the first (no costs measured yet: all stay here)
        // hands the helper one member or more.
        assert!(
            sharing.calls_handed() >= one.chain_passes - 1,
            "the helper ran {} calls in {} passes",
            sharing.calls_handed(),
            one.chain_passes
        );
    }
    assert!(one.preemptions > 0, "nothing preempted");
    assert!(one.chain_passes > 120, "{} passes", one.chain_passes);
    assert_eq!(one.runs, two.runs);
    assert_eq!(one.never, two.never);
    assert_eq!(
        (one.passes, one.chain_passes, one.preemptions),
        (two.passes, two.chain_passes, two.preemptions)
    );
}
