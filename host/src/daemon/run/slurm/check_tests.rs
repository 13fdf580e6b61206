//! The daemon's start's checks of the shared folder, on real folders
//! (the cluster's answer, which comes last, is not needed here).

use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;

use super::*;
use crate::config::ExecutorKind;

fn cfg(shared: &Path) -> ExecutorConfig {
    ExecutorConfig {
        kind: ExecutorKind::Slurm,
        shared_dir: shared.to_path_buf(),
        ..ExecutorConfig::default()
    }
}

#[test]
fn the_start_never_writes_through_a_link_planted_in_the_shared_folder() {
    let t = tempfile::tempdir().unwrap();
    let shared = t.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    // A sticky scratch folder: anyone may plant a name there first, the
    // probe's among them (the daemon's pid is no secret).
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let victim = t.path().join("shadow");
    std::fs::write(&victim, "root only").unwrap();
    let planted = shared.join(format!(".nightjar-probe-{}", std::process::id()));
    symlink(&victim, &planted).unwrap();
    let _ = SlurmExecutor::check(&cfg(&shared));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "root only");
}

#[test]
fn a_runs_folder_that_is_a_link_is_refused_and_nothing_is_changed_through_it() {
    let t = tempfile::tempdir().unwrap();
    let shared = t.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    // A folder that must stay closed (root's home, say).
    let closed = t.path().join("closed");
    std::fs::create_dir(&closed).unwrap();
    std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o700)).unwrap();
    symlink(&closed, shared.join(RUNS)).unwrap();
    let e = SlurmExecutor::check(&cfg(&shared)).unwrap_err();
    assert!(
        format!("{e:#}").contains("its runs folder is not a folder"),
        "{e:#}"
    );
    let mode = std::fs::metadata(&closed).unwrap().mode() & 0o7777;
    assert_eq!(mode, 0o700, "{mode:o}");
    assert!(std::fs::read_dir(&closed).unwrap().next().is_none());
}

#[test]
fn a_shared_folder_reached_past_a_part_not_there_yet_is_walked_once_made() {
    if crate::users::euid() != 0 {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let base = t.path().canonicalize().unwrap();
    // A folder of root's, reached through nobody's link: the first walk
    // ends at `missing`, which the daemon makes; `../link` after it is
    // nobody's to re-point once the daemon runs.
    std::fs::create_dir(base.join("real")).unwrap();
    symlink(base.join("real"), base.join("link")).unwrap();
    std::os::unix::fs::lchown(base.join("link"), Some(65534), Some(65534)).unwrap();
    let shared = base.join("missing/../link");
    let why = format!("{:#}", SlurmExecutor::check(&cfg(&shared)).unwrap_err());
    assert!(why.contains("symbolic link owned by uid 65534"), "{why}");
    assert!(!base.join("real/runs").exists(), "made through the link");
}
