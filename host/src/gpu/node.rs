//! GPUs read on a cluster node, for a run whose batch step runs there
//! (`[executor] kind = "slurm"`). The job script starts `nightjard
//! gpu-sample RUN_DIR SESSION` beside the supervisor: it opens NVML on the
//! node, reads the GPUs SLURM gave the job (`CUDA_VISIBLE_DEVICES`) every
//! `every_ms`, and appends each round to `gpu-samples.jsonl` in the run
//! folder, marking which processes are the run's (those in the
//! supervisor's session, `SESSION`). When the run ends, the daemon reads
//! the file back through the same [`Monitor`] local runs go through, so a
//! node's run gets the same GPU records, series and energy as a local one.

use std::collections::HashSet;
use std::io::{BufRead, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use super::monitor::{Monitor, MonitorConfig, RunGpuRecord, RunOnGpus, SeriesPoint};
use super::{BackendSpec, GpuInfo, GpuReading};

/// What the sampler is told, written by the daemon beside the job script.
pub const SPEC: &str = "gpu-sampler.json";
/// The rounds, one JSON line each.
pub const SAMPLES: &str = "gpu-samples.jsonl";
/// The sampler's own complaints (no NVML on the node, a bad GPU list).
pub const LOG: &str = "gpu-sampler.log";
/// The hidden `nightjard` verb the job script runs.
pub const VERB: &str = "gpu-sample";

/// The most the sampler writes: past half of it, it writes every other
/// round, past three quarters every fourth, and so on; the last round is
/// always written. A run of days keeps a bounded file with its first and
/// last rounds in it.
const BUDGET: u64 = 64 << 20;
/// The most of the samples file the daemon reads: its first line, and the
/// end of a longer file (one the sampler did not write).
const MAX_READ: u64 = BUDGET + (1 << 20);

/// The sampler's orders.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SamplerSpec {
    /// The backend on the node: `auto`, `nvml` or `nvml:/path`.
    pub backend: String,
    /// Between rounds, ms.
    pub every_ms: u64,
}

/// One line of the samples file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub(super) enum Line {
    /// The run's GPUs, first.
    Gpus { gpus: Vec<GpuInfo> },
    /// One reading of each, and which processes on them are the run's.
    Round {
        at: i64,
        readings: Vec<(u32, GpuReading)>,
        mine: Vec<u32>,
        /// GPUs whose reading failed this round, and why.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        failed: Vec<(u32, String)>,
    },
}

/// Whether the node's sampler should run for a backend named `backend`
/// (`[executor] node_gpus`): `none` turns it off.
pub fn wanted(backend: &str) -> bool {
    backend != "none"
}

/// Checks `[executor] node_gpus`: NVML or none (a node's GPUs are real).
pub fn check_backend(backend: &str) -> Result<()> {
    match backend.parse::<BackendSpec>() {
        Ok(BackendSpec::Auto | BackendSpec::Nvml(_) | BackendSpec::None) => Ok(()),
        Ok(BackendSpec::Sim(_)) => bail!(
            "key `executor.node_gpus` is `{backend}`: a node's GPUs are read through NVML; use auto, nvml, nvml:/path/to/libnvidia-ml.so or none"
        ),
        Err(e) => bail!("key `executor.node_gpus`: {e}"),
    }
}

/// `nightjard gpu-sample RUN_DIR SESSION`: samples until the supervisor
/// (`session`, the sampler's parent) is gone or `ended()` says the run's
/// status is written, then writes one last round.
pub fn sample_main(dir: &Path, session: u32, ended: &dyn Fn() -> bool) -> Result<()> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    // SLURM ends a job's processes with SIGTERM: the sampler takes it (and
    // any other ending signal, whatever disposition it inherited) as the
    // run's end and writes its last round.
    for sig in [
        libc::SIGTERM,
        libc::SIGINT,
        libc::SIGQUIT,
        libc::SIGHUP,
        libc::SIGUSR1,
        libc::SIGUSR2,
        libc::SIGALRM,
    ] {
        // SAFETY: the handler only stores to an atomic.
        unsafe { libc::signal(sig, on_term as *const () as libc::sighandler_t) };
    }
    let spec_path = dir.join(SPEC);
    let mut text = String::new();
    std::fs::File::open(&spec_path)
        .and_then(|f| f.take(64 << 10).read_to_string(&mut text))
        .with_context(|| format!("read {}", spec_path.display()))?;
    let spec: SamplerSpec = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a sampler spec", spec_path.display()))?;
    let backend_spec: BackendSpec = spec.backend.parse().map_err(anyhow::Error::msg)?;
    let (mut backend, note) = super::open(&backend_spec, None).map_err(anyhow::Error::msg)?;
    if let Some(note) = note {
        bail!("{note}: this run's GPUs are not sampled on this node");
    }
    let visible = std::env::var("CUDA_VISIBLE_DEVICES").unwrap_or_default();
    let gpus = job_gpus(backend.inventory(), &visible)?;
    if gpus.is_empty() {
        bail!("the job has no GPUs (CUDA_VISIBLE_DEVICES is `{visible}`): nothing to sample");
    }
    let path = dir.join(SAMPLES);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
        .with_context(|| format!("open {}", path.display()))?;
    let mut out = std::io::BufWriter::new(file);
    let mut budget = Budget::new(BUDGET);
    budget.spent(write_line(&mut out, &Line::Gpus { gpus: gpus.clone() })?);
    let indices: Vec<u32> = gpus.iter().map(|g| g.index).collect();
    let every = std::time::Duration::from_millis(spec.every_ms.clamp(50, 3_600_000));
    let mut round = 0u64;
    loop {
        let last = TERM.load(Ordering::Relaxed) || !alive(session) || ended();
        if last || budget.takes(round) {
            let (mut readings, mut failed) = (Vec::new(), Vec::new());
            for &i in &indices {
                match backend.read(i) {
                    Ok(r) => readings.push((i, r)),
                    Err(e) => failed.push((i, e)),
                }
            }
            let mine = readings
                .iter()
                .flat_map(|(_, r)| r.processes.iter().map(|p| p.pid))
                .filter(|&pid| in_session(pid, session) || descends_from(pid, session))
                .collect::<HashSet<_>>()
                .into_iter()
                .collect();
            let at = crate::time::now_ms();
            let line = Line::Round {
                at,
                readings,
                mine,
                failed,
            };
            budget.spent(write_line(&mut out, &line)?);
        }
        if last {
            return Ok(());
        }
        round += 1;
        let wake = std::time::Instant::now() + every;
        while !TERM.load(Ordering::Relaxed) && std::time::Instant::now() < wake {
            std::thread::sleep(TICK.min(wake.saturating_duration_since(std::time::Instant::now())));
        }
    }
}

/// Which rounds the sampler writes: all of them until half its budget is
/// spent, then every other one until half the rest is, and so on; none
/// once under a line's worth is left (the last round is written anyway).
#[derive(Debug)]
struct Budget {
    total: u64,
    used: u64,
    /// Past this many bytes the stride doubles.
    next: u64,
    stride: u64,
}

impl Budget {
    fn new(total: u64) -> Budget {
        Budget {
            total,
            used: 0,
            next: total / 2,
            stride: 1,
        }
    }

    /// Whether round `round` is written.
    fn takes(&self, round: u64) -> bool {
        self.total - self.used.min(self.total) >= 4096 && round.is_multiple_of(self.stride)
    }

    /// `bytes` more were written.
    fn spent(&mut self, bytes: u64) {
        self.used = self.used.saturating_add(bytes);
        while self.used >= self.next && self.next < self.total {
            self.stride = self.stride.saturating_mul(2);
            self.next += (self.total - self.next).div_ceil(2);
        }
    }
}

/// Set by an ending signal.
static TERM: AtomicBool = AtomicBool::new(false);
/// How often a sleeping sampler looks at [`TERM`].
const TICK: std::time::Duration = std::time::Duration::from_millis(20);

extern "C" fn on_term(_: libc::c_int) {
    TERM.store(true, Ordering::Relaxed);
}

/// Appends `line`; the bytes written.
fn write_line(out: &mut impl Write, line: &Line) -> Result<u64> {
    let mut text = serde_json::to_string(line).context("write a GPU sample")?;
    text.push('\n');
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .context("append to the GPU samples")?;
    Ok(text.len() as u64)
}

/// The GPUs of `inventory` that `CUDA_VISIBLE_DEVICES` names, by index or
/// by UUID (as SLURM may set it).
fn job_gpus(inventory: &[GpuInfo], visible: &str) -> Result<Vec<GpuInfo>> {
    let mut out = Vec::new();
    for item in visible.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let found = match item.parse::<u32>() {
            Ok(index) => inventory.iter().find(|g| g.index == index),
            Err(_) => inventory.iter().find(|g| g.uuid == item),
        };
        match found {
            Some(g) => out.push(g.clone()),
            None => {
                bail!("CUDA_VISIBLE_DEVICES names `{item}`, which NVML on this node does not list")
            }
        }
    }
    Ok(out)
}

/// Whether the supervisor `session` is still there. The sampler is not its
/// child (the job script starts it detached, so the supervisor neither
/// signals it with the task's tree nor waits for it): it watches the pid.
fn alive(session: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(session) else {
        return false;
    };
    // SAFETY: signal 0 only checks that the process exists.
    let sent = unsafe { libc::kill(pid, 0) } == 0;
    sent || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Whether `pid` is in the session `session` (the supervisor's: its task
/// and all it starts).
fn in_session(pid: u32, session: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: getsid has no memory effects; a pid that is gone gives -1.
    let sid = unsafe { libc::getsid(pid) };
    u32::try_from(sid).is_ok_and(|s| s == session)
}

/// Whether `pid` is the supervisor `ancestor` or below it. Under SLURM the
/// batch step may lead its process group, so the supervisor's `setsid`
/// fails and the session is not its own; its task's processes are still
/// its descendants (it is their subreaper).
fn descends_from(pid: u32, ancestor: u32) -> bool {
    let mut at = pid;
    for _ in 0..256 {
        if at == ancestor {
            return true;
        }
        let parent = i32::try_from(at).ok().and_then(crate::sys::parent_of);
        match parent.and_then(|p| u32::try_from(p).ok()) {
            Some(p) if p > 1 => at = p,
            _ => return false,
        }
    }
    false
}

/// What a node's samples add up to for run `run`.
#[derive(Debug, Default)]
pub struct NodeGpus {
    /// Its GPU records.
    pub records: Vec<RunGpuRecord>,
    /// Its share of their energy, priced.
    pub energy: Option<super::energy::RunEnergy>,
    /// The downsampled series.
    pub series: Vec<SeriesPoint>,
}

/// Reads run `run`'s samples from its folder `dir` (none: the sampler did
/// not run there, or wrote nothing) through a monitor configured by `cfg`
/// and priced by `tariff`. Lines that do not parse (one cut short by a
/// node that failed) are skipped.
pub fn read(
    dir: &Path,
    run: i64,
    cfg: MonitorConfig,
    tariff: Option<crate::tariff::Tariff>,
) -> Option<NodeGpus> {
    let mut monitor: Option<Monitor> = None;
    let mut on = RunOnGpus {
        run,
        gpus: Vec::new(),
        session: 0,
        log_bytes: 0,
    };
    let mut series = Vec::new();
    for line in lines(&dir.join(SAMPLES))? {
        match serde_json::from_str::<Line>(&line) {
            Ok(Line::Gpus { gpus }) if monitor.is_none() => {
                on.gpus = gpus.iter().map(|g| g.index).collect();
                let mut m = Monitor::new(&gpus, cfg.clone());
                m.tariff = tariff.clone();
                monitor = Some(m);
            }
            Ok(Line::Round {
                at,
                readings,
                mine,
                failed,
            }) => {
                let Some(m) = monitor.as_mut() else { continue };
                let owner = |pid: u32| mine.contains(&pid).then_some(run);
                let readings = readings
                    .into_iter()
                    .map(|(i, r)| (i, Ok(r)))
                    .chain(failed.into_iter().map(|(i, e)| (i, Err(e))))
                    .collect();
                let fx = m.apply(at, readings, std::slice::from_ref(&on), &owner, None);
                series.extend(fx.series);
            }
            _ => {}
        }
    }
    let (records, energy) = monitor?.take_run(run);
    Some(NodeGpus {
        records,
        energy,
        series,
    })
}

/// The samples file's lines: all of it, or for a file longer than
/// [`MAX_READ`] its first line and the whole lines of its last
/// `MAX_READ` bytes. Only a regular file, not followed through a link nor
/// waited on (a FIFO); none when there is no such file.
fn lines(path: &Path) -> Option<Vec<String>> {
    use std::io::{Read, Seek, SeekFrom};
    // Nor a second name of another file: the run folder may be the owner's.
    let mut file = nightjar_core::plain_file::open(path).ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() {
        return None;
    }
    let mut out = Vec::new();
    let mut reader = std::io::BufReader::new(&mut file);
    if meta.len() > MAX_READ {
        let mut first = Vec::new();
        reader
            .by_ref()
            .take(1 << 20)
            .read_until(b'\n', &mut first)
            .ok()?;
        out.push(String::from_utf8_lossy(&first).into_owned());
        reader.seek(SeekFrom::Start(meta.len() - MAX_READ)).ok()?;
        let mut partial = Vec::new();
        reader.read_until(b'\n', &mut partial).ok()?;
    }
    for line in reader.take(MAX_READ).split(b'\n') {
        let Ok(line) = line else { break };
        out.push(String::from_utf8_lossy(&line).into_owned());
    }
    Some(out)
}

#[cfg(test)]
#[path = "node_tests.rs"]
pub(super) mod tests;
