//! `nightjar simulate` against what a hostile user or plugin hands it: a
//! policy that loops, allocates without end or answers nonsense stops the
//! simulation naming it (the plugin limits end each call), and an output
//! that would overwrite the trace or a config, or cannot be a file, is
//! refused before anything is simulated. (Hostile traces are the unit
//! tests': `host/src/daemon/sim/trace_tests.rs`.)

use crate::harness::Nj;

const HOSTILE: &str = env!("NIGHTJAR_TEST_PLUGIN_HOSTILE");

const TRACE: &str = "id,arrival_s,gpus,duration_s\n1,0,1,10\n2,5,1,10\n";

/// A world whose chain is the hostile test plugin in `mode`. Only `loop`
/// is meant to meet the call's time limit (the default, 100 ms); the other
/// modes get 30 s, so that what ends their call is their own failure (the
/// memory limit, a trap, a bad answer), not a debug build on a busy machine
/// running out of time first.
fn hostile(mode: &str) -> Nj {
    let timeout = if mode == "loop" { "100ms" } else { "30s" };
    let nj = Nj::new(&format!(
        "[plugins]\nchain = [\"hostile\"]\nevaluate_timeout = \"{timeout}\"\n[plugin.hostile.config]\nmode = \"{mode}\"\n"
    ));
    let dir = nj.state.join("plugins");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(HOSTILE, dir.join("hostile.wasm")).unwrap();
    std::fs::write(nj.path("work").join("t.csv"), TRACE).unwrap();
    nj
}

#[test]
fn a_policy_that_loops_allocates_or_answers_nonsense_stops_the_simulation_naming_it() {
    for (mode, cause) in [
        ("loop", "policy hostile failed (timeout): timed out"),
        (
            "alloc",
            "policy hostile failed (memory): exceeded its memory limit",
        ),
        ("recurse", "policy hostile failed (trap)"),
        ("unknown-gpu", "policy hostile failed (invalid-answer)"),
    ] {
        let nj = hostile(mode);
        // Alone, and compared with itself.
        for args in [
            &["simulate", "t.csv", "--gpus", "2"][..],
            &["simulate", "t.csv", "--gpus", "2", "--compare"][..],
        ] {
            let mut args = args.to_vec();
            let config = nj.config.to_str().unwrap();
            if args.ends_with(&["--compare"]) {
                args.push(config);
            }
            let out = nj.cli(&args);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{mode} {args:?}: {err}");
            assert!(out.stdout.is_empty(), "{mode}: nothing is printed");
            assert!(
                err.contains(cause)
                    && err.contains("at second 0 of the trace; nothing is simulated")
                    && err.contains("take it out of plugins.chain"),
                "{mode} {args:?}: {err}"
            );
        }
    }
}

#[test]
fn an_output_over_an_input_or_a_folder_is_refused_before_simulating() {
    let nj = Nj::new("[plugins]\nchain = []\n");
    let work = nj.path("work");
    std::fs::write(work.join("t.csv"), TRACE).unwrap();
    std::os::unix::fs::symlink("t.csv", work.join("link.csv")).unwrap();
    std::fs::create_dir(work.join("out")).unwrap();
    let config = nj.config.to_str().unwrap().to_string();
    for (flags, want) in [
        (
            vec!["--schedule", "t.csv"],
            "--schedule t.csv: is the trace, which writing it would overwrite; give another file",
        ),
        (
            vec!["--html", "link.csv"],
            "--html link.csv: is the trace, which writing it would overwrite",
        ),
        (
            vec!["--schedule", &config],
            "is the config, which writing it",
        ),
        (
            vec!["--schedule", "s.csv", "--html", "./s.csv"],
            "--html ./s.csv: is --schedule's file",
        ),
        (
            vec!["--html", "out"],
            "--html out: is a folder; give a file's name",
        ),
        (
            vec!["--schedule", "no/s.csv"],
            "--schedule no/s.csv: there is no folder no; create it",
        ),
    ] {
        let mut args = vec!["simulate", "t.csv", "--gpus", "2"];
        args.extend(&flags);
        let out = nj.cli(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{flags:?}: {err}");
        assert!(err.contains(want), "{flags:?}: {err}");
        assert!(out.stdout.is_empty(), "{flags:?}: nothing is simulated");
    }
    assert_eq!(std::fs::read_to_string(work.join("t.csv")).unwrap(), TRACE);
    assert!(!work.join("s.csv").exists());
    // A file of its own is written.
    nj.ok(&[
        "simulate",
        "t.csv",
        "--gpus",
        "2",
        "--schedule",
        "out/s.csv",
    ]);
    assert!(
        std::fs::read_to_string(work.join("out/s.csv"))
            .unwrap()
            .starts_with("id,start_s")
    );
}
