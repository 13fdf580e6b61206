//! What a run folder proves to `nightjar daemon recover`: its manifest's
//! task, attempt and spec (refused when the folder's owner could have
//! rewritten it for another user), a live supervisor, the start time.

use std::path::Path;

use crate::sandbox::files;
use crate::store::adopt::Evidence;

/// What run `id`'s folder proves: its manifest's task, attempt and spec,
/// a live supervisor, the start time.
pub(super) fn evidence(
    id: i64,
    dir: &Path,
    supervisors: &[(i32, Vec<Vec<u8>>)],
) -> std::result::Result<Evidence, String> {
    let name = nightjar_core::api::manifest::FILE;
    /// The run folder's file: what was asked at submit, what ran at start.
    #[derive(serde::Deserialize)]
    struct Pair {
        start: nightjar_core::api::manifest::Manifest,
    }
    let manifest = files::read_json::<Pair>(dir, name)
        .map_err(|e| format!("cannot read its {name}: {e}"))?
        .ok_or_else(|| format!("it has no {name}"))?
        .start;
    let task = manifest
        .task
        .ok_or_else(|| format!("its {name} names no task"))?;
    let spec = manifest
        .spec
        .clone()
        .ok_or_else(|| format!("its {name} holds no task spec"))?;
    owned_by_its_owner(dir, &spec, crate::users::euid())?;
    let supervisor = supervisors
        .iter()
        // Its run folder exactly (runs/1 is not runs/12).
        .find(|(_, args)| crate::sandbox::liveness::supervises(args, dir))
        .map(|(pid, _)| i64::from(*pid));
    Ok(Evidence {
        run: id,
        task,
        attempt: manifest.attempt.unwrap_or(1),
        spec,
        dir: dir.to_string_lossy().into_owned(),
        supervisor,
        started_at: manifest.captured_at,
    })
}

/// Refuses the manifest of a run folder that is not the daemon's user's
/// (`ours`) unless its task is the folder's owner's: only root hands a run
/// folder to a task's owner (SLURM, `job_user = "owner"`), who can then
/// rewrite its manifest, and must not recreate a task as another user's or
/// the daemon's.
fn owned_by_its_owner(
    dir: &Path,
    spec: &crate::task::model::TaskSpec,
    ours: u32,
) -> std::result::Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let folder = std::fs::symlink_metadata(dir)
        .map_err(|e| format!("cannot read its folder: {e}"))?
        .uid();
    let claimed = spec.owner.as_ref().map(|o| o.uid);
    if folder == ours || claimed == Some(folder) {
        return Ok(());
    }
    Err(format!(
        "its folder is uid {folder}'s, who can rewrite its manifest, which names {} as the task's owner",
        claimed.map_or_else(|| "no user".to_string(), |u| format!("uid {u}"))
    ))
}

/// The uid that owns the folder `dir` (not followed), if it can be read.
pub(super) fn folder_uid(dir: &Path) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(dir).ok().map(|m| m.uid())
}

/// Every live supervisor's pid and arguments, read from /proc once.
pub(super) fn supervisor_commands() -> Vec<(i32, Vec<Vec<u8>>)> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| Some((pid, crate::sandbox::liveness::arguments(pid)?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::owned_by_its_owner;
    use std::os::unix::fs::MetadataExt;

    fn spec(owner: Option<u32>) -> crate::task::model::TaskSpec {
        let mut s: crate::task::model::TaskSpec = serde_json::from_value(serde_json::json!({
            "name": "t", "project": "p", "command": {"shell": "true"},
            "workdir": "/w", "env": {}, "inputs": [], "output": null,
            "priority": "normal", "resources": {}, "retry": {}, "params": {}
        }))
        .unwrap();
        s.owner = owner.map(|uid| crate::task::model::Owner {
            uid,
            name: format!("u{uid}"),
        });
        s
    }

    #[test]
    fn recover_refuses_a_handed_over_folder_whose_manifest_names_another_owner() {
        let d = tempfile::tempdir().unwrap();
        let folder = std::fs::metadata(d.path()).unwrap().uid();
        // The daemon's own folder (local runs, job_user = "daemon"): as before.
        assert!(owned_by_its_owner(d.path(), &spec(Some(folder + 1)), folder).is_ok());
        assert!(owned_by_its_owner(d.path(), &spec(None), folder).is_ok());
        // A folder handed to its task's owner (here: not the daemon's user).
        let ours = folder + 1;
        assert!(owned_by_its_owner(d.path(), &spec(Some(folder)), ours).is_ok());
        let why = owned_by_its_owner(d.path(), &spec(Some(ours)), ours).unwrap_err();
        assert!(why.contains("can rewrite its manifest"), "{why}");
        let why = owned_by_its_owner(d.path(), &spec(None), ours).unwrap_err();
        assert!(why.contains("names no user"), "{why}");
    }
}
