//! The result cache's key: one SHA-256 over everything nightjar can see
//! that decides a run's result. Two runs with the same key ran the same
//! command, in the same folder, on the same inputs (by content), at the
//! same clean git commit, in the same environment, with the same settings,
//! for the same user.
//!
//! What goes in: the task's spec without the fields that only say how it is
//! queued (name and project, unless the command reads them through
//! `${TASK_NAME}`/`${PROJECT}`; priority, retry, preemptible, the cache flag
//! itself): command, workdir, env, inputs' paths, output, resources,
//! sweep parameters, checkpoint, validators, seed and environment. Then the
//! variables the daemon passes from its own environment (`sandbox.env_allow`,
//! and a venv's or conda environment's activation), each input's kind and
//! SHA-256, the git repository and commit, the Python environment's package
//! list the manifest found, a container's image id and digest, and the
//! owner's uid.
//!
//! What keeps a run out of the cache (`Err`, with the reason): a git tree
//! with uncommitted changes to tracked files, a repository git could not
//! read, an input that is missing, unreadable or not hashed, a container
//! image whose id the runtime did not give (apptainer images have none).

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

use crate::daemon::run::runenv::uses_var;
use crate::task::model::TaskSpec;
use nightjar_core::api::manifest::{EnvironmentRecord, Manifest};

/// The format of the hashed document, raised when what goes in changes.
const FORMAT: &str = "nightjar.cache.v1";

/// The cache key of a run of `spec` for user `uid`, from the manifest `m`
/// captured before its start and the daemon-side environment `env`.
pub fn key(
    spec: &TaskSpec,
    m: &Manifest,
    env: &BTreeMap<String, String>,
    environment: Option<&EnvironmentRecord>,
    uid: u32,
) -> Result<String, String> {
    if let Some(e) = environment
        && e.kind == "container"
        && e.image_id.is_none()
    {
        return Err(format!(
            "the id of container image {} is not known ({}), so a changed image could not be told",
            e.image.as_deref().unwrap_or("?"),
            e.notes
                .first()
                .map(String::as_str)
                .unwrap_or("the runtime gave none")
        ));
    }
    let git = &m.git;
    if let Some(repo) = &git.repo {
        let repo = repo.display();
        match (git.dirty, &git.commit) {
            (Some(false), Some(_)) => {}
            (Some(true), _) => {
                return Err(format!(
                    "the git tree {repo} has uncommitted changes (commit them to use the cache)"
                ));
            }
            (_, None) if git.note.is_none() => {
                return Err(format!("the git repository {repo} has no commit yet"));
            }
            _ => {
                return Err(format!(
                    "git could not tell whether {repo} is clean: {}",
                    git.note.as_deref().unwrap_or("no answer")
                ));
            }
        }
    }
    let mut inputs = Vec::with_capacity(m.inputs.len());
    for i in &m.inputs {
        let Some(sha) = i.sha256.as_deref().filter(|_| i.kind != "missing") else {
            return Err(format!(
                "input {} is {} and was not hashed",
                i.path.display(),
                i.kind
            ));
        };
        inputs.push(serde_json::json!([i.path, i.kind, sha]));
    }
    let mut shown = serde_json::to_value(spec).map_err(|e| e.to_string())?;
    if let Some(o) = shown.as_object_mut() {
        for field in ["priority", "retry", "preemptible", "owner", "cache"] {
            o.remove(field);
        }
        if !uses_var(spec, "TASK_NAME") {
            o.remove("name");
        }
        if !uses_var(spec, "PROJECT") {
            o.remove("project");
        }
    }
    // The daemon's own variables only: the task's are in its spec.
    let daemon_env: BTreeMap<&String, &String> = env
        .iter()
        .filter(|(k, _)| !spec.env.contains_key(*k))
        .collect();
    let doc = serde_json::json!({
        "format": FORMAT,
        "uid": uid,
        "spec": shown,
        "daemon_env": daemon_env,
        "inputs": inputs,
        "git": git.repo.as_ref().map(|r| serde_json::json!([r, git.commit])),
        "python": m.python.as_ref().map(|p| serde_json::json!([p.kind, p.prefix, p.packages])),
        "environment": environment.map(|e| serde_json::json!([e.kind, e.prefix, e.runtime, e.image, e.image_id, e.image_digest])),
    });
    let mut h = Sha256::new();
    h.update(doc.to_string().as_bytes());
    Ok(format!("{:x}", h.finalize()))
}

#[cfg(test)]
#[path = "cache_key_tests.rs"]
mod tests;
