//! A round's runs held for `flush`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::*;
use crate::config::{ExecutorConfig, ExecutorKind};
use crate::daemon::run::executor::Executor;
use crate::daemon::testkit::Fixture;

/// Run `run`, its folder `dir`, as `start` hands it over.
fn launch(run: i64, dir: PathBuf) -> Launch {
    let spec = serde_json::from_value(serde_json::json!({
        "run_id": run, "task_id": 1, "argv": ["true"], "env": [], "workdir": "/",
        "timeout_ms": null, "grace_ms": 1000, "log_cap": 1024, "cpus": [],
        "mem_limit": null, "cgroup": null, "lock_file": "/nonexistent",
    }))
    .expect("a run spec");
    Launch {
        run,
        dir,
        spec,
        resources: Default::default(),
        started_at: 0,
        steady: std::time::Instant::now(),
    }
}

#[test]
fn a_held_runs_folder_is_not_made_before_the_rounds_claims_are_on_disk() {
    let f = Fixture::new(1);
    let shared = tempfile::tempdir().unwrap();
    let cfg = ExecutorConfig {
        kind: ExecutorKind::Slurm,
        shared_dir: shared.path().to_path_buf(),
        ..ExecutorConfig::default()
    };
    let exec = SlurmExecutor::new(
        &cfg,
        Path::new("/nonexistent/nightjard"),
        f.dir(),
        Duration::from_secs(1),
    );
    let dir = shared.path().join("runs").join("7");
    exec.launch(&f.daemon, launch(7, dir.clone()), Box::new(|_, _| {}))
        .unwrap();
    assert_eq!(lock(&exec.held).len(), 1, "held for the round's flush");
    // Its claim may still be only in the database's log: a power cut now
    // loses it, and a run folder the database does not know would stop
    // the next start.
    assert!(!dir.exists(), "{} made before flush", dir.display());
}

#[test]
fn the_clusters_largest_array_is_read_from_its_config() {
    let out = "Configuration data as of 2026-12-04T15:00:00\nMaxArraySize            = 1001\nMaxJobCount             = 10000\n";
    assert_eq!(parse_max_array(out), Some(1001));
    // Arrays off: each run a job of its own.
    assert_eq!(parse_max_array("MaxArraySize = 0\n"), Some(1));
    assert_eq!(parse_max_array("MaxJobCount = 10000\n"), None);
    assert_eq!(parse_max_array("MaxArraySize = lots\n"), None);
}
