//! The daemon's start: the heap set (`heap.rs`, by `nightjard` before
//! any thread), the state dir prepared and locked, the database
//! opened and checked against what the state dir proves, the GPUs opened,
//! the policy chain loaded, runs re-adopted, then every job started on its
//! thread (the scheduler thread's pipeline, the workers, the watches) and
//! the front ends it is given; it schedules until SIGTERM.

pub mod claims;
pub mod consistency;
mod evidence;
pub mod heap;
pub mod mend;
pub(in crate::daemon) mod prepare;
pub(in crate::daemon) mod private;
pub(in crate::daemon) mod startup;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use anyhow::{Context, Result, bail};
use tokio::signal::unix::{SignalKind, signal};

use self::prepare::prepare_state_dir;
use crate::config::{CgroupMode, Config};
use crate::daemon::given::Given;
use crate::daemon::pipeline::{chain, scheduler};
use crate::daemon::state::{Daemon, lock};
use crate::daemon::watch::gpus;
use crate::store::Store;

/// A front end, bound and ready to serve the daemon's verbs (the socket's
/// listener, the HTTP server): started on the daemon's runtime once the
/// daemon is ready.
pub type Server = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// Runs the daemon until SIGTERM or SIGINT, on the real clock, the
/// configured executor and the GPUs ([`Given::configured`]). Running tasks are left running; the next
/// daemon re-adopts them. `bind` binds the front ends once runs are adopted
/// (an error stops the start: a socket that cannot be bound); they serve
/// from when the daemon is ready. The daemon names none of them.
pub fn run<B, F>(cfg: Config, bind: B) -> Result<()>
where
    B: FnOnce(Arc<Daemon>) -> F,
    F: Future<Output = Result<Vec<Server>>>,
{
    run_with(cfg, Given::configured, bind)
}

/// Runs the daemon as [`run`] does, on the clock, executor and GPU source
/// `given` makes once the state dir is locked and the database checked.
pub fn run_with<G, B, F>(cfg: Config, given: G, bind: B) -> Result<()>
where
    G: FnOnce(&Config) -> Result<Given>,
    B: FnOnce(Arc<Daemon>) -> F,
    F: Future<Output = Result<Vec<Server>>>,
{
    // A cluster's cores and GPUs are what placement counts against.
    let cfg = crate::daemon::run::slurm::sized(cfg)?;
    let _lock = prepare_state_dir(&cfg)?;
    // The folder the daemon was started in is reachable as /proc/self/cwd
    // from every thread, an owner's too, past the permissions of the
    // folders above it: leave it for `/` once the paths are absolute.
    if cfg.state_dir.is_absolute()
        && let Err(e) = std::env::set_current_dir("/")
    {
        tracing::warn!("cannot leave the folder the daemon was started in for /: {e}");
    }
    let store = Store::open(&cfg.db_path())
        .with_context(|| format!("open database {}", cfg.db_path().display()))?;
    let findings = consistency::examine(&cfg, &store, crate::store::integrity::Depth::Quick)?;
    if !findings.sound() {
        bail!("{}", consistency::refusal(&cfg, &findings));
    }
    let cgroup = match cfg.sandbox.cgroup {
        _ if cfg.executor.kind == crate::config::ExecutorKind::Slurm => {
            Err("runs are SLURM jobs: the nodes' cgroups are SLURM's".to_string())
        }
        CgroupMode::Off => Err("disabled by sandbox.cgroup = \"off\"".to_string()),
        CgroupMode::Auto => {
            crate::sandbox::cgroup::detect(&cfg.sandbox.cgroup_root, &cgroup_name(&cfg))
        }
    };
    match &cgroup {
        Ok(b) => tracing::info!(
            "per-run cgroups under {} (memory limits: {})",
            b.dir.display(),
            b.memory
        ),
        Err(why) if cfg.executor.kind == crate::config::ExecutorKind::Slurm => {
            tracing::info!("no per-run cgroups here: {why}");
        }
        Err(why) => {
            tracing::warn!("no per-run cgroups: {why}; using process groups");
            // The orphans of a supervisor that dies (a task killed it) become
            // our children instead of init's, so they are found and killed.
            if let Err(e) = crate::sys::set_child_subreaper() {
                tracing::warn!("cannot become a child subreaper: {e}");
            }
        }
    }
    let exe = std::env::current_exe().context("find the nightjar binary for supervisors")?;
    // Plugin compiles run in a child of this binary, under their own memory bound.
    crate::plugins::compile::use_child(crate::plugins::compile::ChildCompiler {
        program: exe.clone(),
        memory: cfg.plugins.compile_memory.as_u64(),
        timeout: crate::plugins::limits::DEFAULT_COMPILE_TIMEOUT,
    });
    let Given {
        clock,
        executor,
        gpus: backend,
    } = given(&cfg)?;
    let mut gpu = gpus::setup(&cfg, backend)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        // Blocking work removes and walks trees a task made: removal is
        // iterative and walks are bounded in depth; the big stack (reserved,
        // not committed) is a margin.
        .thread_stack_size(crate::sys::BIG_STACK)
        .build()
        .context("start the async runtime")?;
    let chain = load_chain(&cfg)?;
    let result = rt.block_on(async move {
        let (commands, command_rx) = std::sync::mpsc::channel();
        let backend = gpu.backend.take();
        let daemon = Daemon::new(cfg, store, cgroup, gpu, commands, clock, executor)?;
        audit_start(&daemon);
        // The marks' copy is written from here on (and checked at the next start).
        if daemon.durable()
            && let Err(e) = daemon.store().set_copy_kept()
        {
            tracing::warn!("cannot note that the ids copy is kept: {e}");
        }
        tokio::spawn(Arc::clone(&daemon).watch_database());
        tokio::spawn(Arc::clone(&daemon).watchdog_loop());
        daemon.adopt()?;
        daemon.start_notifications()?;
        daemon.start_archiver()?;
        daemon.start_collector()?;
        if let Some(c) = &chain {
            lock(&daemon.pipeline.chain_status).views = c.views();
        }
        if let Some(mut backend) = backend {
            // The first sweep before anything is placed, so GPUs start open or closed truthfully.
            let indices: Vec<u32> = backend.inventory().iter().map(|g| g.index).collect();
            let readings = gpus::read_all(backend.as_mut(), &indices);
            daemon.apply_readings(readings);
            tokio::spawn(Arc::clone(&daemon).sample_loop(backend));
        }
        let servers = bind(Arc::clone(&daemon)).await?;
        tracing::info!(
            "nightjar daemon {} ready: socket {}, state {}",
            std::process::id(),
            daemon.cfg.socket.display(),
            daemon.cfg.state_dir.display()
        );
        match daemon.store().fire_reboot(daemon.now_ms()) {
            Ok(fired) if !fired.is_empty() => {
                tracing::info!("@reboot: created tasks {fired:?}");
            }
            Ok(_) => {}
            Err(e) => tracing::error!("@reboot templates: {e}"),
        }
        for s in servers {
            tokio::spawn(s);
        }
        tokio::spawn(Arc::clone(&daemon).disk_hold_loop());
        if let Some(expr) = &daemon.cfg.notify.digest {
            // Checked with the config: a bad expression never gets here.
            match crate::task::schedule::parse(expr) {
                Ok(s) if !daemon.cfg.notifier.is_empty() => {
                    tokio::spawn(Arc::clone(&daemon).digest_loop(s));
                }
                Ok(_) => tracing::warn!("[notify] digest is set, but there is no notifier to send it"),
                Err(e) => tracing::warn!("[notify] digest: {e}"),
            }
        }
        tokio::spawn(Arc::clone(&daemon).disk_low_loop());
        // Policies load and passes run on a thread of their own: the socket is
        // open and answering before any plugin is compiled or configured.
        let (d, handle) = (Arc::clone(&daemon), tokio::runtime::Handle::current());
        std::thread::Builder::new()
            .name("nightjar-scheduler".into())
            .spawn(move || scheduler::run(d, handle, chain, command_rx))
            .context("start the scheduler thread")?;
        let mut hup = signal(SignalKind::hangup())?;
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        loop {
            tokio::select! {
                _ = hup.recv() => {
                    tracing::info!("SIGHUP: reloading plugins");
                    audit_self(&daemon, "plugins-reload", "on SIGHUP (its sender is not known)".into());
                    daemon.request_reload(None);
                }
                _ = term.recv() => break,
                _ = int.recv() => break,
            }
        }
        daemon.draining.store(true, Ordering::SeqCst);
        daemon.kick.notify();
        let _ = std::fs::remove_file(&daemon.cfg.socket);
        let _ = std::fs::remove_file(daemon.cfg.state_dir.join("http.addr"));
        daemon.daemon_event("daemon-stopped", crate::store::outbox::Severity::Warning);
        daemon.flush_notifications().await;
        tracing::info!("nightjar daemon stopping; running tasks keep running and are re-adopted at the next start");
        Ok(())
    });
    // Whatever a plugin thread or a blocking wait is doing, the daemon ends now.
    rt.shutdown_background();
    result
}

/// Writes to the audit log as the daemon itself.
fn audit_self(d: &Daemon, action: &str, detail: String) {
    let uid = crate::users::euid();
    let user = crate::users::name_of(uid);
    let entry = crate::store::AuditEntry {
        uid,
        user: &user,
        action,
        task: None,
        detail,
    };
    if let Err(e) = d.store().audit(crate::time::now_ms(), &entry) {
        tracing::error!("cannot append to the audit log: {e}");
    }
}

/// The configuration a start took, in the audit log: its file and hash
/// (a changed config shows as a new hash; the config is read at start only).
fn audit_start(d: &Daemon) {
    use sha2::Digest;
    let detail = match &d.cfg.origin {
        Some((path, text)) => format!(
            "{} (sha256 {:x})",
            path.display(),
            sha2::Sha256::digest(text.as_bytes())
        ),
        None => "embedded defaults".to_string(),
    };
    audit_self(d, "config-loaded", detail);
}

/// Loads the policy chain before the daemon serves anything: each plugin on
/// its worker thread behind the watchdog, so this is bounded whatever a
/// plugin does. A chain name that is nothing, or a plugin config the plugin
/// rejects, stops the start with the file, line and key.
fn load_chain(cfg: &Config) -> Result<Option<chain::Chain>> {
    if cfg.plugins.chain.is_empty() {
        return Ok(None);
    }
    let engine = crate::plugins::engine::PluginEngine::new(Some(cfg.plugin_cache_dir()))?;
    let chain = chain::Chain::load(cfg, Some(&engine));
    let problems = chain.startup_problems();
    if !problems.is_empty() {
        bail!("{}", problems.join("\n"));
    }
    Ok(Some(chain))
}

/// A cgroup name unique to this state dir.
fn cgroup_name(cfg: &Config) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    cfg.state_dir.hash(&mut h);
    format!("nightjar-{:08x}", h.finish() as u32)
}
