//! A lab's own history replayed: `nightjar report --trace` writes the
//! daemon's finished runs as a trace, `nightjar simulate` reads it back
//! (its second 0 from the `# start:` line, the GPUs from the config's
//! backend), and `simulate --history` does both at once. (That the replay
//! starts each run when the daemon did is the in-process tier's:
//! `host/src/api/inproc/history.rs`.)

use crate::harness::Nj;

#[test]
fn report_trace_and_simulate_history_replay_the_daemons_own_runs() {
    let mut nj = Nj::new(
        "slots = 4\n[plugins]\nchain = []\n[gpu]\nbackend = \"sim:2xA100-80GB\"\nhost_mem_min_free = \"1MiB\"\n",
    );
    nj.start();
    let ids: Vec<i64> = [("2", "a"), ("1", "b"), ("1", "c")]
        .iter()
        .map(|(g, n)| {
            nj.submit(&[
                "--gpus",
                g,
                "--name",
                n,
                "--timeout",
                "1m",
                "--",
                "sleep",
                "0.2",
            ])
        })
        .collect();
    for id in &ids {
        assert_eq!(nj.wait(*id), 0);
    }
    let csv = nj.ok(&["report", "--trace", "--since", "1h"]);
    let mut lines = csv.lines();
    assert!(
        lines
            .next()
            .unwrap_or_default()
            .starts_with("# nightjar trace: 3 runs"),
        "{csv}"
    );
    assert!(
        lines.next().unwrap_or_default().starts_with("# start: "),
        "{csv}"
    );
    assert_eq!(
        lines.next(),
        Some(
            "id,arrival_s,gpus,duration_s,name,project,user,priority,gpu_mem,estimate_s,power_w,preemptible"
        )
    );
    assert_eq!(lines.count(), 3, "{csv}");
    std::fs::write(nj.path("work").join("t.csv"), &csv).unwrap();
    // No --gpus: the config's backend has two.
    let replay = nj.json(&["simulate", "t.csv"]);
    assert_eq!(
        (replay["jobs"].as_u64(), replay["started"].as_u64()),
        (Some(3), Some(3)),
        "{replay}"
    );
    let direct = nj.json(&["simulate", "--history", "1h"]);
    assert_eq!(direct["jobs"].as_u64(), Some(3), "{direct}");
    let both = nj.cli(&["simulate", "t.csv", "--history", "1h"]);
    assert_eq!(both.status.code(), Some(2), "a file or --history, not both");
    let json = nj.json(&["report", "--trace", "--since", "1h"]);
    assert_eq!(json["rows"].as_array().map(Vec::len), Some(3), "{json}");
}
