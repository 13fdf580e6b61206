//! What the daemon watches outside itself: the GPUs (sampled into the
//! monitor and the pool), the file systems runs write to (disk-low and
//! disk-full holds), and the wall clock's steps.

pub(in crate::daemon) mod clock;
pub(in crate::daemon) mod diskhold;
pub(in crate::daemon) mod disklow;
pub(in crate::daemon) mod gpus;
