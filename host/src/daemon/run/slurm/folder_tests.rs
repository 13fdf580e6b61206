//! A batch's script, run by a real `sh` as SLURM runs an array's element.

use super::*;

/// Runs `script` as element `index` of its array, with nothing of the
/// environment but SLURM's variable (`--export=NIL`: no PATH); its stdout
/// and stderr.
fn run_element(script: &Path, index: &str) -> (String, String, bool) {
    let out = std::process::Command::new("/bin/sh")
        .arg(script)
        .env_clear()
        .env("SLURM_ARRAY_TASK_ID", index)
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.success(),
    )
}

#[test]
fn each_element_of_a_batchs_array_execs_the_supervisor_on_its_own_run_folder() {
    let shared = tempfile::tempdir().unwrap();
    // Folders with a space and a quote: the script quotes what it reads.
    let runs: Vec<PathBuf> = ["7", "8 it's", "12"]
        .iter()
        .map(|n| shared.path().join("runs").join(n))
        .collect();
    for r in &runs {
        std::fs::create_dir_all(r).unwrap();
        std::fs::write(r.join(SPEC), format!("spec of {}\n", r.display())).unwrap();
    }
    // A stand-in supervisor that shows its argument and the spec on its stdin.
    let supervisor = SupervisorCmd {
        program: shared.path().join("show"),
        prefix: vec!["supervise".into()],
    };
    std::fs::write(
        &supervisor.program,
        "#!/bin/sh\necho \"$1|$2|$(while IFS= read -r l; do echo \"$l\"; done)\"\n",
    )
    .unwrap();
    std::fs::set_permissions(
        &supervisor.program,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let dir = shared.path().join("batches").join("7");
    let dirs: Vec<&Path> = runs.iter().map(PathBuf::as_path).collect();
    let script = batch_script(&supervisor, None, &dir, 7, &dirs).unwrap();
    for (i, r) in runs.iter().enumerate() {
        let (out, err, ok) = run_element(&script, &i.to_string());
        assert!(ok, "element {i}: {err}");
        assert_eq!(
            out.trim(),
            format!("supervise|{}|spec of {}", r.display(), r.display()),
            "element {i}"
        );
    }
    // An index the batch does not have runs nothing, and says why.
    let (out, err, ok) = run_element(&script, "3");
    assert!(!ok && out.is_empty(), "{out}");
    assert!(err.contains("no run folder for array index 3"), "{err}");
    // Only the daemon's user reads what the node runs.
    use std::os::unix::fs::MetadataExt;
    for f in [&script, &dir.join(INDEX)] {
        assert_eq!(
            std::fs::metadata(f).unwrap().mode() & 0o077,
            0,
            "{}",
            f.display()
        );
    }
}

#[test]
fn a_runs_spec_names_the_array_element_that_runs_it_and_only_then() {
    let dir = tempfile::tempdir().unwrap();
    let batches = tempfile::tempdir().unwrap();
    let element_of =
        |d: &std::path::Path| crate::daemon::run::slurm::owner::element_of(d, batches.path());
    // What the supervisor reads, with the daemon's mark in it.
    std::fs::write(
        dir.path().join(SPEC),
        r#"{"run_id":12,"task_id":3,"array_element":[7,2],"env":{"A":"]"}}"#,
    )
    .unwrap();
    assert_eq!(element_of(dir.path()), Some((7, 2)));
    std::fs::write(dir.path().join(SPEC), r#"{"run_id":12,"task_id":3}"#).unwrap();
    assert_eq!(element_of(dir.path()), None, "a job of its own");
    std::fs::write(dir.path().join(SPEC), "not json").unwrap();
    assert_eq!(element_of(dir.path()), None);
    std::fs::remove_file(dir.path().join(SPEC)).unwrap();
    assert_eq!(element_of(dir.path()), None, "no spec: never prepared");
}

#[test]
fn an_element_an_owners_spec_claims_counts_only_where_the_batchs_index_lists_its_folder() {
    assert_eq!(
        crate::users::euid(),
        0,
        "this test hands a folder to another user: run it as root (CI does)"
    );
    let runs = tempfile::tempdir().unwrap();
    let batches = tempfile::tempdir().unwrap();
    let (mine, other) = (runs.path().join("12"), runs.path().join("13"));
    for (dir, claim) in [(&mine, "[7,1]"), (&other, "[7,0]")] {
        std::fs::create_dir(dir).unwrap();
        std::fs::write(
            dir.join(SPEC),
            format!(r#"{{"run_id":12,"task_id":3,"array_element":{claim}}}"#),
        )
        .unwrap();
        crate::daemon::run::slurm::owner::hand_over(dir, (4242, 4242)).unwrap();
    }
    let b7 = batches.path().join("7");
    std::fs::create_dir(&b7).unwrap();
    std::fs::write(
        b7.join(INDEX),
        format!("{}\n{}\n", other.display(), mine.display()),
    )
    .unwrap();
    let element_of =
        |d: &std::path::Path| crate::daemon::run::slurm::owner::element_of(d, batches.path());
    assert_eq!(
        element_of(&mine),
        Some((7, 1)),
        "listed there by the daemon"
    );
    assert_eq!(element_of(&other), Some((7, 0)));
    // The owner rewrites their spec to claim another run's element.
    std::fs::write(
        mine.join(SPEC),
        r#"{"run_id":12,"task_id":3,"array_element":[7,0]}"#,
    )
    .unwrap();
    assert_eq!(element_of(&mine), None, "a claim the index does not back");
    // Or makes the spec a link to another run's.
    std::fs::remove_file(mine.join(SPEC)).unwrap();
    std::os::unix::fs::symlink(other.join(SPEC), mine.join(SPEC)).unwrap();
    assert_eq!(element_of(&mine), None, "never read through a link");
    assert_eq!(crate::daemon::run::slurm::owner::owner_of(&mine), 4242);
}

#[test]
fn a_batch_has_ended_only_once_every_run_its_index_names_has() {
    let shared = tempfile::tempdir().unwrap();
    let runs: Vec<PathBuf> = ["1", "2", "3"]
        .iter()
        .map(|n| shared.path().join("runs").join(n))
        .collect();
    for r in &runs {
        std::fs::create_dir_all(r).unwrap();
    }
    let supervisor = SupervisorCmd {
        program: "/bin/true".into(),
        prefix: Vec::new(),
    };
    let dir = shared.path().join("batches").join("1");
    let dirs: Vec<&Path> = runs.iter().map(PathBuf::as_path).collect();
    batch_script(&supervisor, None, &dir, 1, &dirs).unwrap();
    assert!(!all_ended(&dir), "none ended");
    std::fs::write(runs[0].join(files::STATUS), "{}").unwrap();
    // The second's folder removed (retention), the third still waiting:
    // a restarted daemon may not have adopted it yet.
    std::fs::remove_dir_all(&runs[1]).unwrap();
    assert!(!all_ended(&dir), "the third has not ended");
    tombstone(&runs[2], "sbatch failed");
    assert!(all_ended(&dir));
    let other = shared.path().join("batches").join("9");
    assert!(!all_ended(&other), "no index: being made");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join(INDEX), "").unwrap();
    assert!(!all_ended(&other), "an index not yet written");
}

#[test]
fn the_daemons_status_of_an_end_without_one_reads_lost_and_never_replaces_a_status() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("run");
    std::fs::create_dir(&dir).unwrap();
    ended_without_status(&dir);
    let out = status_in(&dir).expect("a status");
    assert_eq!(out.class, crate::store::RunClass::Lost);
    assert!(
        !dir.join(".status.daemon.tmp").exists(),
        "nothing left aside"
    );
    // A status already there (its supervisor's, late) is kept as it is.
    let other = root.path().join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join(files::STATUS), b"{\"kept\": true}").unwrap();
    ended_without_status(&other);
    assert_eq!(
        std::fs::read(other.join(files::STATUS)).unwrap(),
        b"{\"kept\": true}"
    );
    // No folder: none is made.
    let gone = root.path().join("gone");
    ended_without_status(&gone);
    assert!(!gone.exists());
}
