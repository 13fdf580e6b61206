//! cgroup v2 per run: membership that a double fork cannot escape,
//! `cgroup.kill` for the whole tree, and `memory.max` where the memory
//! controller is delegated to us.

use std::path::{Path, PathBuf};

/// Where per-run cgroups are made, and what they can enforce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupBase {
    /// The folder under which `run-<id>` folders are made.
    pub dir: PathBuf,
    /// Whether `memory.max` works in the run cgroups.
    pub memory: bool,
}

/// Finds a writable cgroup v2 folder for this daemon: `configured` if given,
/// else our own cgroup in the unified hierarchy, with a child named `name`.
/// Returns why not when cgroups cannot be used.
pub fn detect(configured: &Path, name: &str) -> Result<CgroupBase, String> {
    let parent = if configured.as_os_str().is_empty() {
        own_cgroup()?
    } else {
        configured.to_path_buf()
    };
    let dir = parent.join(name);
    std::fs::create_dir_all(&dir)
        .map_err(|e| format!("cannot create cgroup {}: {e}", dir.display()))?;
    // cgroup.kill exists in non-root cgroups since Linux 5.14.
    if !dir.join("cgroup.kill").exists() {
        return Err(format!(
            "{} has no cgroup.kill (Linux 5.14+ needed)",
            dir.display()
        ));
    }
    let available = std::fs::read_to_string(parent.join("cgroup.controllers")).unwrap_or_default();
    let mut memory = false;
    if available.split_whitespace().any(|c| c == "memory") {
        // Enabling needs the controller in the parent's subtree_control too.
        let _ = std::fs::write(parent.join("cgroup.subtree_control"), "+memory");
        memory = std::fs::write(dir.join("cgroup.subtree_control"), "+memory").is_ok();
    }
    Ok(CgroupBase { dir, memory })
}

/// This process's cgroup folder in the unified (v2) hierarchy.
fn own_cgroup() -> Result<PathBuf, String> {
    let mount = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("cannot read /proc/self/mountinfo: {e}"))?
        .lines()
        .find_map(|l| {
            let (pre, post) = l.split_once(" - ")?;
            post.starts_with("cgroup2 ")
                .then(|| pre.split(' ').nth(4).map(PathBuf::from))?
        })
        .ok_or("no cgroup v2 hierarchy is mounted")?;
    let own = std::fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| format!("cannot read /proc/self/cgroup: {e}"))?
        .lines()
        .find_map(|l| l.strip_prefix("0::").map(str::to_string))
        .ok_or("this process has no cgroup v2 membership")?;
    Ok(mount.join(own.trim_start_matches('/')))
}

/// Processes in a cgroup.
pub fn procs(dir: &Path) -> Vec<i32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// SIGKILLs every process in the cgroup at once.
pub fn kill_all(dir: &Path) {
    let _ = std::fs::write(dir.join("cgroup.kill"), "1");
}

/// Removes run cgroups under `base` that no live run uses (left behind when
/// the kernel was still tearing one down as its supervisor exited, or by a
/// crash). A cgroup that still holds processes is left alone.
pub fn sweep(base: &Path, live: &[i64]) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(id) = name
            .to_str()
            .and_then(|n| n.strip_prefix("run-"))
            .and_then(|n| n.parse::<i64>().ok())
        else {
            continue;
        };
        if !live.contains(&id) {
            let _ = std::fs::remove_dir(e.path());
        }
    }
}

/// Makes the run's cgroup at `cg` with `mem` as its `memory.max`. A limit
/// that cannot be set is a warning (the cgroup still gives the kill path;
/// the daemon's sandbox note already says the limit is missing in `show`).
pub fn prepare(cg: &Path, mem: Option<u64>) -> std::io::Result<Option<String>> {
    std::fs::create_dir_all(cg)?;
    if let Some(bytes) = mem
        && let Err(e) = std::fs::write(cg.join("memory.max"), bytes.to_string())
    {
        return Ok(Some(format!(
            "memory limit not applied ({}): {e}",
            cg.join("memory.max").display()
        )));
    }
    Ok(None)
}
