//! The pure core of scheduling: given what is free, where does a task go.
//! Order comes from the store (priority, then submit time): the built-in
//! fallback that stays in force when every policy plugin has failed.
//!
//! GPU memory is reserved at placement, so two tasks never race into the
//! same memory: a task's `gpu_mem` is taken from the GPU's total minus what
//! is already reserved and what processes nightjar did not start hold. A task
//! without `gpu_mem` takes whole GPUs. Several tasks share a GPU only when
//! sharing is allowed and their memory fits; otherwise a GPU is exclusive.

pub mod backfill;
mod fit;
pub mod simulate;
mod stagger;

pub use fit::{Fit, GpuFit, Unusable};
pub use stagger::Stagger;

use crate::task::model::Resources;

/// One GPU's place in the pool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolGpu {
    /// Index.
    pub index: u32,
    /// UUID (empty when unmonitored).
    pub uuid: String,
    /// Total memory, when a backend reports it.
    pub mem_total: Option<u64>,
    /// Memory reserved by runs placed on it.
    pub reserved: u64,
    /// Memory held by processes nightjar did not start.
    pub foreign: u64,
    /// Memory in use by every process, as the backend last read it (0 when
    /// unmonitored).
    pub used: u64,
    /// Runs placed on it.
    pub users: u32,
    /// Held whole by one run.
    pub exclusive: bool,
    /// May receive new work (healthy, not busy with foreign load, not closed by policy).
    pub open: bool,
}

impl PoolGpu {
    /// An unmonitored GPU known only by its index (`gpus = [...]` with no backend).
    pub fn unmonitored(index: u32) -> PoolGpu {
        PoolGpu {
            index,
            uuid: String::new(),
            mem_total: None,
            reserved: 0,
            foreign: 0,
            used: 0,
            users: 0,
            exclusive: false,
            open: true,
        }
    }

    pub(crate) fn free_mem(&self) -> Option<u64> {
        self.mem_total
            .map(|t| nightjar_core::api::views::mem_free(t, self.reserved, self.foreign, self.used))
    }
}

/// What is free right now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pool {
    /// Free slots.
    pub slots: u32,
    /// The GPUs, in index order.
    pub gpus: Vec<PoolGpu>,
    /// Free cores, in order.
    pub cpus: Vec<u32>,
    /// Whether GPUs may be shared by tasks whose memory fits.
    pub share: bool,
    /// GPUs a policy closed for the current pass, with the reason.
    pub policy_closed: std::collections::BTreeMap<u32, String>,
    /// `[gpu] stagger`: the last start on each GPU, and the clock.
    pub stagger: Stagger,
}

/// Where a task was placed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Placement {
    /// GPU indices given.
    pub gpus: Vec<u32>,
    /// Their UUIDs (empty strings when unmonitored).
    pub uuids: Vec<String>,
    /// Memory reserved on each, bytes (`None`: the GPUs are held whole).
    pub gpu_mem: Option<u64>,
    /// Whether the GPUs are held exclusively.
    pub exclusive: bool,
    /// Cores pinned to (empty: not pinned).
    pub cpus: Vec<u32>,
}

impl Pool {
    /// Takes what `res` needs from the pool, or returns `None` and takes nothing.
    pub fn place(&mut self, res: &Resources) -> Option<Placement> {
        self.place_after(res, None)
    }

    /// As [`Pool::place`], for a retry after a gpu-oom whose run peaked at
    /// `peak` bytes: only GPUs with more free memory than that are taken.
    pub fn place_after(&mut self, res: &Resources, peak: Option<u64>) -> Option<Placement> {
        self.place_where(res, peak, |_| true)
    }

    /// As [`Pool::place_after`], on the GPUs `keep` accepts only.
    pub(crate) fn place_where(
        &mut self,
        res: &Resources,
        peak: Option<u64>,
        keep: impl Fn(&PoolGpu) -> bool,
    ) -> Option<Placement> {
        let chosen = self.choose(res, peak, keep)?;
        let mem = res.gpu_mem.map(|m| m.as_u64());
        let exclusive = mem.is_none() || !self.share;
        for &i in &chosen {
            let g = &mut self.gpus[i];
            g.users += 1;
            g.reserved += mem.unwrap_or(0);
            g.exclusive = exclusive;
        }
        self.slots -= 1;
        let cpus = res.cpus.unwrap_or(0) as usize;
        Some(Placement {
            gpus: chosen.iter().map(|&i| self.gpus[i].index).collect(),
            uuids: chosen.iter().map(|&i| self.gpus[i].uuid.clone()).collect(),
            gpu_mem: if chosen.is_empty() { None } else { mem },
            exclusive: !chosen.is_empty() && exclusive,
            cpus: self.cpus.drain(..cpus).collect(),
        })
    }

    /// The positions in `gpus` that [`Pool::place_where`] would give `res`,
    /// or `None` when it does not fit; nothing is taken.
    pub(crate) fn choose(
        &self,
        res: &Resources,
        peak: Option<u64>,
        keep: impl Fn(&PoolGpu) -> bool,
    ) -> Option<Vec<usize>> {
        let want = res.gpus as usize;
        let chosen: Vec<usize> = self.usable(res, peak, keep)?.take(want).collect();
        (chosen.len() == want).then_some(chosen)
    }

    /// The positions of the GPUs that could take `res`, in order, or `None`
    /// when a slot or the cores are missing: the one test behind
    /// [`Pool::choose`] and [`Pool::could_place`].
    pub(crate) fn usable(
        &self,
        res: &Resources,
        peak: Option<u64>,
        keep: impl Fn(&PoolGpu) -> bool,
    ) -> Option<impl Iterator<Item = usize>> {
        if self.slots == 0 || self.cpus.len() < res.cpus.unwrap_or(0) as usize {
            return None;
        }
        let mem = res.gpu_mem.map(|m| m.as_u64());
        let usable = (self.gpus.iter().enumerate())
            .filter(move |(_, g)| keep(g) && self.gpu_unusable_after(g, mem, peak).is_none())
            .map(|(i, _)| i);
        Some(usable)
    }

    /// Gives a placement's resources back.
    pub fn give_back(&mut self, p: &Placement) {
        self.slots += 1;
        let held = member(&p.gpus);
        for g in self.gpus.iter_mut().filter(|g| held(g.index)) {
            g.users = g.users.saturating_sub(1);
            g.reserved = g.reserved.saturating_sub(p.gpu_mem.unwrap_or(0));
            if g.users == 0 {
                g.exclusive = false;
            }
        }
        self.cpus.extend(&p.cpus);
        self.cpus.sort_unstable();
    }

    /// Takes the resources of a run adopted after a restart, as it holds them.
    pub fn take_adopted(&mut self, p: &Placement) {
        self.slots = self.slots.saturating_sub(1);
        let held = member(&p.gpus);
        for g in self.gpus.iter_mut().filter(|g| held(g.index)) {
            g.users += 1;
            g.reserved += p.gpu_mem.unwrap_or(0);
            g.exclusive |= p.exclusive;
        }
        self.cpus.retain(|c| !p.cpus.contains(c));
    }

    /// Updates a GPU from monitoring.
    pub fn observe(&mut self, index: u32, seen: Seen) {
        if let Some(g) = self.gpus.iter_mut().find(|g| g.index == index) {
            g.open = seen.open;
            g.foreign = seen.foreign;
            g.used = seen.used;
        }
    }
}

/// What monitoring last saw of a GPU, for the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    /// May receive new work.
    pub open: bool,
    /// Memory held by processes nightjar did not start, bytes.
    pub foreign: u64,
    /// Memory in use by every process (foreign ones included), bytes.
    pub used: u64,
}

impl Seen {
    /// An open GPU whose only memory in use is `foreign` bytes held by
    /// processes nightjar did not start.
    #[cfg(test)]
    pub(crate) fn foreign(open: bool, foreign: u64) -> Seen {
        Seen {
            open,
            foreign,
            used: foreign,
        }
    }
}

/// Whether an index is one of `indices`, in O(log n): a placement may hold
/// thousands of GPUs, and the pool is walked once against it.
pub(crate) fn member(indices: &[u32]) -> impl Fn(u32) -> bool {
    let mut sorted = indices.to_vec();
    sorted.sort_unstable();
    move |i| sorted.binary_search(&i).is_ok()
}

#[cfg(test)]
#[path = "pool_tests.rs"]
mod tests;
