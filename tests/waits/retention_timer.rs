//! The hourly collection (`[retention] every`) runs on a thread of its own:
//! while it deletes a big output tree, tasks still start and end. It ran
//! between the scheduler's passes before, so nothing started until it was
//! done (minutes, for a big tree).

use std::time::{Duration, Instant};

use crate::harness::Nj;

/// Files in the failed task's output: enough that deleting them takes the
/// collection seconds, far longer than starting and ending `true` (80,000:
/// 240,000 took 96 s of system time to make and delete on this VM's disk,
/// the waits target's longest CPU).
const DIRS: u32 = 20;
const FILES_PER_DIR: u32 = 4000;

#[test]
fn a_task_starts_and_ends_while_the_timers_collection_deletes_a_big_tree() {
    // The tree is made under a daemon whose collection is an hour away
    // (making it takes seconds alone, minutes on a busy machine).
    let config = |every: &str| {
        format!("slots = 2\n[retention]\noutputs_failed = \"0s\"\nevery = \"{every}\"\n")
    };
    let mut nj = Nj::new(&config("1h"));
    nj.start();
    let make = format!(
        "mkdir -p \"${{OUTPUT_PATH}}\" && cd \"${{OUTPUT_PATH}}\" || exit 2; \
         perl -e 'for my $d (1..{DIRS}) {{ mkdir \"d$d\" or die; \
         for my $f (1..{FILES_PER_DIR}) {{ open(my $h, \">\", \"d$d/$f\") or die; close $h }} }}' || exit 2; exit 1"
    );
    let big = nj.submit(&["--", "sh", "-c", &make]);
    assert_eq!(nj.wait_within(big, Duration::from_secs(600)), 1);
    let output = nj.show(big)["runs"][0]["run_dir"]
        .as_str()
        .map(|d| std::path::Path::new(d).join("output"))
        .expect("the run's folder");
    assert!(output.join(format!("d{DIRS}/{FILES_PER_DIR}")).is_file());
    assert!(
        !nj.daemon_log().contains("retention: collecting"),
        "no collection an hour away"
    );

    // Restarted with `every` = 1m (its least): the collection begins (its
    // log line) about a minute after the start.
    nj.term();
    nj.set_config(&config("1m"));
    nj.start();
    let t0 = Instant::now();
    while !nj.daemon_log().contains("retention: collecting") {
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "no collection 2 minutes after `every` = 1m\n{}",
            nj.daemon_log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // While it deletes: a task starts and ends.
    let quick = nj.submit(&["--", "true"]);
    assert_eq!(nj.wait_within(quick, Duration::from_secs(60)), 0);
    let log = nj.daemon_log();
    assert!(
        !log.contains("gc: "),
        "the collection ended before the task did: the task waited for it (as when it ran \
         between the scheduler's passes), or the tree is too small to outlast a start\n{log}"
    );
    assert!(output.exists(), "the tree is still being deleted");

    // A dry run meanwhile counts the tree still being deleted: it does not
    // wait for the collection (which would leave nothing to count).
    let dry = nj.json(&["gc", "--dry-run"]);
    assert_eq!(dry["outputs"], 1, "{dry}");

    // And the collection finishes its work, once.
    nj.until_slow("the collection removes the tree", || !output.exists());
    nj.until_slow("the collection marks the outputs removed", || {
        nj.json(&["gc", "--dry-run"])["outputs"] == 0
    });
    let after = nj.json(&["gc"]);
    assert_eq!(after["outputs"], 0, "nothing left to remove twice: {after}");
}
