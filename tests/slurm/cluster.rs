//! The one-node cluster the SLURM tests share, and what they read of it:
//! started once for the suite (`scripts/slurm-dev`), taken shared by every
//! test and alone by those that stop its controller or its node, its two
//! GPUs taken alone by the tests that ask for GPUs; SLURM's own account of
//! a run's job (`squeue`, `scontrol`).

use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

use crate::harness::Nj;

/// The cluster's `SLURM_CONF`, the cluster started once for the suite.
pub(crate) fn cluster() -> &'static str {
    static CONF: OnceLock<String> = OnceLock::new();
    CONF.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/slurm-dev");
        let out = Command::new(&script).output().expect("run scripts/slurm-dev");
        if !out.status.success() {
            crate::harness::needs(
                "a one-node SLURM cluster",
                format!(
                    "scripts/slurm-dev failed (root and Debian's slurmctld, slurmd, slurm-client, munge, slurmdbd and mariadb-server): {}",
                    String::from_utf8_lossy(&out.stderr)
                ),
            );
        }
        let said = String::from_utf8_lossy(&out.stdout);
        let conf = said
            .lines()
            .find_map(|l| l.strip_prefix("export SLURM_CONF="))
            .map(str::to_string)
            .expect("scripts/slurm-dev prints SLURM_CONF");
        // Jobs an earlier, failed run of the suite left behind would hold
        // the cluster's GPUs.
        let _ = Command::new("scancel")
            .arg("--partition=debug")
            .env("SLURM_CONF", &conf)
            .status();
        conf
    })
}

/// The executor's config, its runs under `shared`.
pub(crate) fn executor(shared: &Path) -> String {
    format!(
        "slots = 8\n[executor]\nkind = \"slurm\"\nshared_dir = \"{}\"\npoll = \"300ms\"\n",
        shared.display()
    )
}

/// Taken (shared) by every test here, and alone by the one that stops
/// slurmctld: the others' sbatch would meet a stopped controller.
pub(crate) static CONTROLLER: std::sync::RwLock<()> = std::sync::RwLock::new(());

pub(crate) fn shared_cluster() -> std::sync::RwLockReadGuard<'static, ()> {
    CONTROLLER.read().unwrap_or_else(|e| e.into_inner())
}

/// Taken by every test whose jobs ask for GPUs. The cluster has two: a
/// test that holds some outside nightjar (a [`Hog`]) needs them as it
/// left them, and a GPU test beside it would wait in SLURM past its
/// deadline (each failed that way when they ran at once).
static GPUS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The cluster shared, and its GPUs alone; released in that order's
/// reverse (the GPUs first).
pub(crate) struct GpuCluster {
    _gpus: std::sync::MutexGuard<'static, ()>,
    _cluster: std::sync::RwLockReadGuard<'static, ()>,
}

/// The cluster shared and its GPUs alone (the controller's lock first,
/// so a test waiting for the GPUs never holds them from one that stops
/// the controller).
pub(crate) fn gpu_cluster() -> GpuCluster {
    let cluster = shared_cluster();
    GpuCluster {
        _gpus: GPUS.lock().unwrap_or_else(|e| e.into_inner()),
        _cluster: cluster,
    }
}

/// A job outside nightjar that holds `gpus` GPUs for `secs` seconds;
/// cancelled when dropped, so a failing test leaves nothing in SLURM for
/// the tests after it.
pub(crate) struct Hog(pub(crate) String);

impl Hog {
    pub(crate) fn start(gpus: u32, secs: u32) -> Hog {
        let id = slurm(
            "sbatch",
            &[
                "--parsable",
                &format!("--gres=gpu:{gpus}"),
                "--wrap",
                &format!("sleep {secs}"),
                "-o",
                "/dev/null",
            ],
        );
        let id = id.trim().to_string();
        assert!(!id.is_empty(), "sbatch gave the hog no job id");
        Hog(id)
    }

    /// Ends it now (again when dropped, which SLURM ignores).
    pub(crate) fn cancel(&self) {
        slurm("scancel", &[&self.0]);
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        self.cancel();
    }
}

/// A daemon on the cluster, started with `env` more in its environment.
pub(crate) fn world_with(extra: &str, env: &[(&str, String)]) -> Nj {
    let conf = cluster();
    let mut nj = Nj::new("");
    let shared = nj.path("shared");
    nj.set_config(&format!("{}{extra}", executor(&shared)));
    nj.env.push(("SLURM_CONF".into(), conf.into()));
    nj.env
        .extend(env.iter().map(|(k, v)| (k.to_string(), v.clone())));
    nj.start();
    nj
}

pub(crate) fn world(extra: &str) -> Nj {
    world_with(extra, &[])
}

/// A SLURM command's stdout, on the test cluster.
pub(crate) fn slurm(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd)
        .args(args)
        .env("SLURM_CONF", cluster())
        .output()
        .unwrap_or_else(|e| panic!("run {cmd}: {e}"));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The SLURM job of task `id`'s last run, as scancel and scontrol take
/// it (`812`, or `812_3` for an element of a job array), as the run's
/// note in `show` names it.
pub(crate) fn job_of(nj: &Nj, id: i64) -> String {
    let job = |show: &serde_json::Value| {
        let runs = show["runs"].as_array()?;
        let note = runs.last()?["sandbox_note"].as_str()?;
        let (_, job) = note.rsplit_once("SLURM job ")?;
        Some(job.split([';', ' ']).next()?.to_string())
    };
    nj.until("the run has its SLURM job", || job(&nj.show(id)).is_some());
    job(&nj.show(id)).expect("a SLURM job")
}

/// A `sleep 300` task whose job, once SLURM runs it, is cancelled by hand
/// (`scancel`, outside nightjar): its job and its run as `show` has it.
pub(crate) fn cancelled_by_hand(nj: &Nj) -> (String, serde_json::Value) {
    let id = nj.submit(&["--", "sleep", "300"]);
    let job = job_of(nj, id);
    nj.until("SLURM runs it", || {
        job_field(&job, "JobState").as_deref() == Some("RUNNING")
    });
    slurm("scancel", &[&job]);
    nj.wait(id);
    let run = nj.show(id)["runs"][0].clone();
    (job, run)
}

/// The comments of every job (each element of a job array) SLURM keeps
/// whose comment starts with that of `job` up to its run or batch (the
/// jobs of the same daemon).
pub(crate) fn jobs_like(job: &str) -> Vec<String> {
    let comment = job_field(job, "Comment").expect("the job has a comment");
    let tag = comment
        .rsplit_once(":run:")
        .or_else(|| comment.rsplit_once(":batch:"))
        .expect("nightjar's comment")
        .0
        .to_string();
    slurm("squeue", &["-h", "-r", "-t", "all", "-o", "%k"])
        .lines()
        .filter(|c| {
            c.starts_with(&format!("{tag}:run:")) || c.starts_with(&format!("{tag}:batch:"))
        })
        .map(str::to_string)
        .collect()
}

/// `scontrol show job`'s `Key=Value` for `key`.
pub(crate) fn job_field(job: &str, key: &str) -> Option<String> {
    let out = slurm("scontrol", &["show", "job", job]);
    out.split_whitespace()
        .find_map(|kv| kv.strip_prefix(&format!("{key}=")).map(str::to_string))
}

/// A wrapper `sbatch` in `nj`'s `bin/` that runs `before` (shell lines,
/// given the gate folder `nj`'s `gate/`) and then the cluster's own
/// `sbatch`; the `PATH` that puts it first, and the gate folder.
pub(crate) fn wrapped_sbatch(
    nj: &Nj,
    before: impl Fn(&Path) -> String,
) -> (String, std::path::PathBuf) {
    let (bin, gate) = (nj.path("bin"), nj.path("gate"));
    let real = String::from_utf8_lossy(
        &Command::new("sh")
            .args(["-c", "command -v sbatch"])
            .output()
            .unwrap()
            .stdout,
    )
    .trim()
    .to_string();
    std::fs::write(
        bin.join("sbatch"),
        format!("#!/bin/sh\n{}\nexec {real} \"$@\"\n", before(&gate)),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(bin.join("sbatch"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    (path, gate)
}
