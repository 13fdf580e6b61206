//! `submit`: the checks every submission passes (a rerun's too), then the
//! queue. The owner of every task is the caller, whatever the entries say.

use crate::access::Caller;
use crate::daemon::Daemon;
use crate::task::model::NewEntry;

impl super::Handler for crate::api::Submit {
    async fn handle(self, d: &std::sync::Arc<Daemon>, caller: &Caller) -> anyhow::Result<Vec<i64>> {
        let now = d.now_ms();
        let (d, who) = (std::sync::Arc::clone(d), caller.clone());
        super::blocking("submission", move || {
            submit(&d, &who, self.entries, self.verify, now)
        })
        .await
    }
}

/// Checks and queues a submission by `caller`; one id per entry.
fn submit(
    d: &Daemon,
    caller: &Caller,
    entries: Vec<NewEntry>,
    verify: bool,
    now: i64,
) -> anyhow::Result<Vec<i64>> {
    // A sweep sent as its grid is expanded here, then checked as any is.
    let mut entries = expanded(entries)?;
    check_submission(d, caller, &mut entries)?;
    let manifests = d.capture_submit(&entries, verify);
    // Queued once captured: the wait before a start does not count the capture.
    let now = now.max(d.now_ms());
    let tz = d.cfg.tz();
    let ids = insert(d, caller, &entries, &manifests, now, |expr| {
        crate::task::schedule::parse(expr)
            .ok()
            .and_then(|s| s.next_after(crate::time::to_utc(now), tz))
            .map(|t| t.timestamp_millis())
    })?;
    d.changed();
    d.warm_validators(&entries);
    Ok(ids)
}

/// `entries` with every sweep sent as its grid expanded into its members
/// (a bad grid is the caller's error, naming the sweep).
pub(super) fn expanded(entries: Vec<NewEntry>) -> Result<Vec<NewEntry>, crate::api::ApiError> {
    entries
        .into_iter()
        .map(|e| {
            let name = e.name.clone();
            e.expand().map_err(|why| {
                crate::api::ApiError::new(
                    crate::api::ErrorKind::BadRequest,
                    format!("sweep `{name}`: {why}"),
                )
            })
        })
        .collect()
}

/// Stores checked entries, counting the caller's waiting tasks against
/// their `queued` quota under the same lock of the store as the insert,
/// so parallel submissions cannot all pass one check.
pub(super) fn insert(
    d: &Daemon,
    caller: &Caller,
    entries: &[NewEntry],
    manifests: &[Option<nightjar_core::api::manifest::Manifest>],
    now: i64,
    next_fire: impl Fn(&str) -> Option<i64>,
) -> anyhow::Result<Vec<i64>> {
    let adding = entries.iter().map(|e| e.members.len()).sum();
    let mut store = d.store();
    d.check_queued_quota(&store, caller, adding)?;
    Ok(store.submit_with_manifests(entries, manifests, now, next_fire)?)
}

/// The checks every submission passes (a rerun's too): names, commands,
/// dependencies, output folders, what this machine can place, and, on a
/// system daemon, that the caller can reach the folders the task uses.
/// Every member becomes the caller's.
pub(super) fn check_submission(
    d: &Daemon,
    caller: &Caller,
    entries: &mut [NewEntry],
) -> anyhow::Result<()> {
    for m in entries.iter_mut().flat_map(|e| &mut e.members) {
        m.owner = Some(caller.owner());
    }
    crate::task::check::check_entries(entries).map_err(anyhow::Error::msg)?;
    // Said before the inputs are hashed; counted again when stored.
    let adding = entries.iter().map(|e| e.members.len()).sum();
    d.check_queued_quota(&d.store(), caller, adding)?;
    // As the caller, on a thread acting as them: what a check finds (or
    // its error) is what they could find themselves, never a root-only
    // folder's contents or a link's target there.
    let who = crate::privsep::identity(Some(&caller.owner())).map_err(anyhow::Error::msg)?;
    // A SLURM job that is its owner's has its run folder, and the default
    // output folder in it, handed to them.
    let owned_run_folder = d.cfg.executor.jobs_are_owners();
    crate::privsep::as_owner(who.as_ref(), |_| {
        check_reach(caller, entries, owned_run_folder)?;
        check_environments(d, entries)
    })
    .map_err(anyhow::Error::msg)??;
    check_outputs(d, entries)?;
    check_fits(d, entries)
}

/// On a system daemon, a task runs as its owner: refuse at submit a workdir
/// the owner cannot enter and read, or an input they cannot read (the run
/// would fail as them anyway; this says so before it queues).
/// `owned_run_folder`: the run folder is handed to the task's owner (SLURM,
/// `job_user = "owner"`), so the default output folder in it is theirs.
fn check_reach(
    caller: &Caller,
    entries: &[NewEntry],
    owned_run_folder: bool,
) -> anyhow::Result<()> {
    if caller.uid == crate::users::euid() || caller.uid == 0 {
        return Ok(());
    }
    let Some(account) = crate::users::by_uid(caller.uid) else {
        anyhow::bail!(
            "uid {} has no entry in the user database, so no task can run as it",
            caller.uid
        );
    };
    let groups = crate::users::groups_of(&account);
    for m in entries.iter().flat_map(|e| &e.members) {
        // Scratch and the default output folder live in the daemon's
        // state dir, which is root's alone: say so now, not at the start.
        let state_folder = if crate::daemon::uses_var(m, "SCRATCH") {
            Some("${SCRATCH}")
        } else if m.output.is_none()
            && !owned_run_folder
            && crate::daemon::uses_var(m, "OUTPUT_PATH")
        {
            Some("the default ${OUTPUT_PATH}")
        } else {
            None
        };
        if let Some(what) = state_folder {
            anyhow::bail!(
                "task `{}` uses {what}, a folder in the daemon's state dir, which tasks that run as {} cannot reach: give it an `output` folder of yours (`--output DIR`, or `output` in the task file) and use that instead",
                m.name.escape_debug(),
                caller.name
            );
        }
        crate::users::perm::check(&m.workdir, &account, &groups, crate::users::perm::Want::Dir)
            .map_err(|e| anyhow::anyhow!("task `{}`: workdir {e}", m.name.escape_debug()))?;
        for input in &m.inputs {
            crate::users::perm::check(input, &account, &groups, crate::users::perm::Want::Read)
                .map_err(|e| anyhow::anyhow!("task `{}`: input {e}", m.name.escape_debug()))?;
        }
    }
    Ok(())
}

/// Checks each task's environment on this machine (it exists, its runtime
/// is installed and has the image), once per distinct environment, and
/// fills in the container runtime from the config.
fn check_environments(d: &Daemon, entries: &mut [NewEntry]) -> anyhow::Result<()> {
    use crate::daemon::environment::{check, owner_as};
    use crate::task::environment::Environment;
    // (as given, as checked, whose): a sweep's members share one check.
    let mut checked: Vec<(Environment, Environment, Option<u32>)> = Vec::new();
    for m in entries.iter_mut().flat_map(|e| &mut e.members) {
        let who = owner_as(m);
        let uid = who.map(|w| w.uid);
        let Some(env) = m.environment.as_deref_mut() else {
            continue;
        };
        if let Some((_, done, _)) = checked
            .iter()
            .find(|(given, _, u)| *u == uid && given == env)
        {
            *env = done.clone();
            continue;
        }
        let given = env.clone();
        check(&d.cfg, env, who)
            .map_err(|e| anyhow::anyhow!("task `{}`: {e}", m.name.escape_debug()))?;
        checked.push((given, env.clone(), uid));
    }
    Ok(())
}

/// Rejects an output folder outside `output_roots` (when set), with the
/// values known at submit filled in (ids as `0`: a digit string is one path
/// component like any id). The supervisor checks the real path again.
fn check_outputs(d: &Daemon, entries: &[NewEntry]) -> anyhow::Result<()> {
    use crate::task::vars::{Subst, expand};
    if d.cfg.output_roots.is_empty() {
        return Ok(());
    }
    for m in entries.iter().flat_map(|e| &e.members) {
        let Some(t) = &m.output else { continue };
        let inputs: Vec<String> = m.inputs.iter().map(|p| p.display().to_string()).collect();
        let path = expand(t, true, |n| {
            Some(Subst::Value(match n {
                "TASK_ID" | "RUN_ID" => "0".into(),
                "WORKDIR" => m.workdir.display().to_string(),
                "TASK_NAME" => m.name.clone(),
                "PROJECT" => m.project.clone(),
                "INPUT_PATH" => inputs.first().cloned().unwrap_or_default(),
                "INPUTS" => inputs.join(" "),
                "SCRATCH" => d.cfg.scratch_dir().join("0").display().to_string(),
                _ => String::new(),
            }))
        })?;
        crate::sandbox::paths::check_within(&m.workdir.join(path), &d.cfg.output_roots)
            .map_err(|e| anyhow::anyhow!("task `{}`: {e}", m.name.escape_debug()))?;
    }
    Ok(())
}

/// Rejects tasks that could never be placed on this machine.
fn check_fits(d: &Daemon, entries: &[NewEntry]) -> anyhow::Result<()> {
    let cpus = d.cpu_total;
    let (gpus, largest) = d.gpu_capacity();
    for m in entries.iter().flat_map(|e| &e.members) {
        let r = &m.resources;
        if r.gpus as usize > gpus {
            anyhow::bail!(
                "task `{}` asks for {} GPU(s) but this daemon has {gpus} (`nightjar gpus` lists them; `gpus` and `gpu.backend` in the config choose them)",
                m.name,
                r.gpus,
            );
        }
        if let (Some(want), Some(max)) = (r.gpu_mem, largest)
            && r.gpus > 0
            && want.as_u64() > max
        {
            anyhow::bail!(
                "task `{}` asks for gpu_mem {want} per GPU but the largest GPU here has {}",
                m.name,
                bytesize::ByteSize::b(max)
            );
        }
        if r.cpus.unwrap_or(0) > cpus {
            anyhow::bail!(
                "task `{}` asks for {} CPUs but only {cpus} can be pinned",
                m.name,
                r.cpus.unwrap_or(0)
            );
        }
    }
    Ok(())
}
