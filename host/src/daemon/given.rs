//! What the daemon is handed rather than reaching for: its clock, its
//! executor and its GPU source. `daemon::run` is given the real ones
//! ([`Given::local`]); a simulator or a test gives its own, and the pass
//! that decides what starts is the same code either way.

use std::sync::Arc;

use anyhow::Result;

use crate::config::Config;
use crate::daemon::run::executor::Executor;
use crate::daemon::run::local::LocalSupervisor;
use crate::gpu::GpuBackend;

/// Wall time as the pipeline and the runs it starts see it.
pub trait Clock: Send + Sync {
    /// Now, Unix ms.
    fn now_ms(&self) -> i64;
}

/// The system's wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        crate::time::now_ms()
    }
}

/// The daemon's clock, executor and GPU source.
pub struct Given {
    /// Wall time for passes, claims and starts.
    pub clock: Arc<dyn Clock>,
    /// How prepared runs are carried out.
    pub executor: Arc<dyn Executor>,
    /// The GPUs to sample and place on (`[gpu] backend`, narrowed by `gpus`).
    pub gpus: Box<dyn GpuBackend>,
}

impl Given {
    /// The real ones with the executor `[executor] kind` names: a local
    /// supervisor per run, or a SLURM job per run.
    pub fn configured(cfg: &Config) -> Result<Given> {
        match cfg.executor.kind {
            crate::config::ExecutorKind::Local => Given::local(cfg),
            crate::config::ExecutorKind::Slurm => {
                let exe = std::env::current_exe().map_err(|e| {
                    anyhow::anyhow!("find the nightjar binary for SLURM's batch step: {e}")
                })?;
                Ok(Given {
                    clock: Arc::new(SystemClock),
                    executor: Arc::new(crate::daemon::run::slurm::SlurmExecutor::new(
                        &cfg.executor,
                        &exe,
                        &cfg.state_dir,
                        cfg.gpu.sample_period,
                    )),
                    // The nodes' GPUs are SLURM's to hand out; none is sampled here.
                    gpus: Box::new(crate::gpu::NoGpus),
                })
            }
        }
    }

    /// The real ones: the system clock, a local supervisor per run started
    /// from this binary, and the GPU backend the config names.
    pub fn local(cfg: &Config) -> Result<Given> {
        let exe = std::env::current_exe()
            .map_err(|e| anyhow::anyhow!("find the nightjar binary for supervisors: {e}"))?;
        Ok(Given {
            clock: Arc::new(SystemClock),
            executor: Arc::new(LocalSupervisor::for_exe(&exe)),
            gpus: crate::daemon::watch::gpus::configured_backend(cfg)?,
        })
    }
}
