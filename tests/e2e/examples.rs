//! The example workloads in examples/tasks run as documented.

use std::path::Path;

use crate::harness::{Nj, read};

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

fn ids(v: &serde_json::Value) -> Vec<i64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_i64().unwrap())
        .collect()
}

#[test]
fn the_example_workloads_run_as_documented() {
    let mut nj = Nj::new("slots = 2");
    nj.start();
    let work = nj.path("work");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/tasks"),
        &work,
    );

    let train = ids(&nj.json(&["submit", "train/train.toml"]))[0];
    let sim = ids(&nj.json(&["submit", "hpc/sim.yaml"]));
    let pipe = ids(&nj.json(&["submit", "pipeline/pipeline.toml"]));
    let resumable = ids(&nj.json(&["submit", "resume/resume.toml"]))[0];

    // Training sweep: every member writes checkpoints and metrics.
    assert_eq!(nj.wait(train), 0, "{}", nj.daemon_log());
    for m in nj.show(train)["members"].as_array().unwrap() {
        let run = nj.show(m["id"].as_i64().unwrap())["runs"][0].clone();
        let out = Path::new(run["run_dir"].as_str().unwrap()).join("output");
        assert!(
            out.join("ckpt-epoch5.json").exists(),
            "checkpoint in {}",
            out.display()
        );
        let metrics: serde_json::Value =
            serde_json::from_str(&read(&out.join("metrics.json"))).unwrap();
        assert!(metrics["final_loss"].as_f64().unwrap().is_finite());
        // Judged by the outputs validator: everything required is there; a
        // loss over 0.01 is only a warning in the example.
        assert_eq!(run["class"], "ok", "{run}");
        let low = metrics["final_loss"].as_f64().unwrap() < 0.01;
        let warned = run["findings"].as_array().map_or(0, |f| {
            assert!(f.iter().all(|f| f["severity"] == "warning"), "{run}");
            f.len()
        });
        assert_eq!(warned, usize::from(!low), "{run}");
    }

    // Simulation, then post-processing of its output.
    assert_eq!(nj.wait(sim[0]), 0);
    assert_eq!(nj.wait(sim[1]), 0);
    let summary: serde_json::Value =
        serde_json::from_str(&read(&work.join("hpc/out/sim/summary.json"))).unwrap();
    assert!(
        (summary["total_heat"].as_f64().unwrap() - 100.0).abs() < 1e-3,
        "heat is conserved: {summary}"
    );

    // Resumable training: a first attempt starts at epoch 0 and leaves
    // complete (marked) checkpoints for a later one.
    assert_eq!(nj.wait(resumable), 0);
    let run = nj.show(resumable)["runs"][0].clone();
    let out = read(&Path::new(run["run_dir"].as_str().unwrap()).join("stdout.log"));
    assert!(out.starts_with("starting from epoch 0"), "{out}");
    assert!(work.join("resume/ckpt/epoch-0010.json.done").exists());

    // Pipeline: validate fails, report is blocked, cleanup runs anyway.
    let [fetch, clean, validate, report, cleanup] = pipe[..] else {
        panic!("5 steps")
    };
    assert_eq!(nj.wait(fetch), 0);
    assert_eq!(nj.wait(clean), 0);
    assert_eq!(nj.wait(validate), 2);
    assert_eq!(nj.wait(report), 69);
    assert_eq!(nj.wait(cleanup), 0);
    assert!(
        !work.join("pipeline/out/report.txt").exists(),
        "the chain stopped"
    );
    assert!(
        nj.ok(&["logs", "--stderr", &validate.to_string()])
            .contains("negative read count")
    );
}
