//! Retention in the daemon: `nightjar gc` and the hourly collection delete
//! old ended tasks from the store, then their run folders and scratch space
//! (paths made from numeric run ids under the state dir, never from stored
//! strings), and compiled plugins the code cache has not used for a while.
//! The hourly collection runs on a thread of its own: deleting big folders
//! takes minutes, and neither a pass nor a request waits for it.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::daemon::state::Daemon;
use crate::store::GcReport;

/// How often the collection thread looks whether the daemon is stopping.
const DRAIN_CHECK: Duration = Duration::from_secs(1);

impl Daemon {
    /// Starts the collection thread: one collection every `[retention]
    /// every` (none when it is 0s), the first one `every` after the start.
    pub fn start_collector(self: &Arc<Self>) -> anyhow::Result<()> {
        let every = self.cfg.retention.every;
        if every.is_zero() {
            return Ok(());
        }
        let me = Arc::clone(self);
        std::thread::Builder::new()
            .name("nightjar-retention".into())
            .spawn(move || {
                let mut next = Instant::now() + every;
                loop {
                    let now = Instant::now();
                    if me.draining.load(Ordering::SeqCst) {
                        return;
                    }
                    if now < next {
                        std::thread::sleep((next - now).min(DRAIN_CHECK));
                        continue;
                    }
                    next = now + every;
                    if let Some(why) = me.halted() {
                        tracing::warn!(
                            "retention: no collection while the daemon is halted ({why})"
                        );
                        continue;
                    }
                    tracing::info!(
                        "retention: collecting (every {})",
                        humantime::format_duration(every)
                    );
                    if let Err(e) = me.gc(false) {
                        tracing::error!("retention: collection failed: {e:#}");
                    }
                }
            })?;
        Ok(())
    }

    /// Collects what `[retention]` says is old enough; `dry_run` only counts.
    pub fn gc(&self, dry_run: bool) -> anyhow::Result<GcReport> {
        let now = self.now_ms();
        let r = &self.cfg.retention;
        let before = |d: Duration| now.saturating_sub(crate::time::span_ms(d));
        let mut report = self
            .store()
            .gc(before(r.ended), before(r.failed), dry_run)?;
        if !dry_run && report.tasks > 0 {
            // Their runs were in names' histories.
            self.forget_estimates();
        }
        if !dry_run {
            for run in &report.runs {
                for rel in [
                    std::path::PathBuf::from("runs").join(run.to_string()),
                    crate::daemon::run::runenv::scratch_rel(*run),
                ] {
                    if let Err(e) = self.state.remove_all(&rel) {
                        tracing::warn!("gc: cannot remove {}: {e}", rel.display());
                    }
                }
            }
        }
        (report.outputs, report.outputs_bytes) = self.sweep_outputs(dry_run);
        report.cache_files =
            crate::plugins::cache::prune(&self.cfg.plugin_cache_dir(), r.plugin_cache, dry_run);
        if report.tasks > 0 || report.cache_files > 0 || report.outputs > 0 {
            tracing::info!("gc: {}", report.summary());
        }
        Ok(report)
    }
}
