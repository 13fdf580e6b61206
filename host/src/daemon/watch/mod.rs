//! What the daemon watches outside itself: the GPUs (sampled into the
//! monitor and the pool), the file systems runs write to (disk-low and
//! disk-full holds), and the wall clock's steps.

pub(in crate::daemon) mod clock;
pub(in crate::daemon) mod diskhold;
pub(in crate::daemon) mod disklow;
pub(in crate::daemon) mod gpus;

use std::sync::Mutex;

use crate::gpu::monitor::Monitor;

/// The watches' part of the daemon: the GPUs' monitor (read by the
/// pipeline and runs) and the facts runs' manifests name.
pub struct Parts {
    /// GPU monitoring, when a backend reports GPUs.
    pub(in crate::daemon) gpu: Mutex<Option<Monitor>>,
    /// The GPUs as runs' manifests name them.
    pub(in crate::daemon) gpu_facts: gpus::GpuFacts,
}

impl Parts {
    /// The watches' part, with the GPUs' monitor when there is one.
    pub(in crate::daemon) fn new(monitor: Option<Monitor>, facts: gpus::GpuFacts) -> Parts {
        Parts {
            gpu: Mutex::new(monitor),
            gpu_facts: facts,
        }
    }
}
