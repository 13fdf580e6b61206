//! A batch's script, run by a real `sh` as SLURM runs an array's element,
//! and the run folders' end marks it leaves behind.

use super::super::folder::{
    all_ended, cancelled_before_its_job, ended_without_status, status_in, tombstone,
};
use super::*;
use crate::sandbox::files;

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

/// Run folders `names` made under `shared`'s `runs`.
fn run_folders(shared: &Path, names: &[&str]) -> Vec<PathBuf> {
    let runs: Vec<PathBuf> = names.iter().map(|n| shared.join("runs").join(n)).collect();
    for r in &runs {
        std::fs::create_dir_all(r).unwrap();
    }
    runs
}

#[test]
fn each_element_of_a_batchs_array_execs_the_supervisor_on_its_own_run_folder() {
    let shared = tempfile::tempdir().unwrap();
    // Folders with a space and a quote: the script quotes what it reads.
    let runs = run_folders(shared.path(), &["7", "8 it's", "12"]);
    // A stand-in supervisor that shows its arguments and the line of its
    // stdin the second names (the batch's specs, one a line).
    let supervisor = SupervisorCmd {
        program: shared.path().join("show"),
        prefix: vec!["supervise".into()],
    };
    std::fs::write(
        &supervisor.program,
        "#!/bin/sh\nn=0\nwhile IFS= read -r l; do [ \"$n\" = \"$3\" ] && echo \"$1|$2|$3|$l\"; n=$((n + 1)); done\n",
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
    let specs: String = runs
        .iter()
        .map(|r| format!("spec of {}\n", r.display()))
        .collect();
    std::fs::write(dir.join(SPECS), specs).unwrap();
    for (i, r) in runs.iter().enumerate() {
        let (out, err, ok) = run_element(&script, &i.to_string());
        assert!(ok, "element {i}: {err}");
        assert_eq!(
            out.trim(),
            format!("supervise|{}|{i}|spec of {}", r.display(), r.display()),
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
fn a_batch_has_ended_only_once_every_run_its_index_names_has() {
    let shared = tempfile::tempdir().unwrap();
    let runs = run_folders(shared.path(), &["1", "2", "3"]);
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

#[test]
fn a_run_cancelled_before_its_job_reads_cancelled_and_keeps_a_status_already_there() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("run");
    std::fs::create_dir(&dir).unwrap();
    cancelled_before_its_job(&dir);
    let out = status_in(&dir).expect("a status its supervisor will find");
    assert_eq!(out.class, crate::store::RunClass::Cancelled);
    // Its supervisor's status (the task ran after all) is never replaced.
    let ran = root.path().join("ran");
    std::fs::create_dir(&ran).unwrap();
    std::fs::write(ran.join(files::STATUS), b"{\"kept\": true}").unwrap();
    cancelled_before_its_job(&ran);
    assert_eq!(
        std::fs::read(ran.join(files::STATUS)).unwrap(),
        b"{\"kept\": true}"
    );
}
