//! Why a GPU can or cannot take a task: the one judgement that placement
//! uses to choose GPUs and that `why` prints, so the two never disagree.

pub use nightjar_core::api::why::{Fit, GpuFit, Unusable};

use super::{Pool, PoolGpu};
use crate::task::model::Resources;

impl PoolGpu {
    /// Why this GPU cannot take a task wanting `mem` per GPU (`None`: the
    /// whole GPU), or `None` when it can.
    pub fn unusable(&self, mem: Option<u64>, share: bool) -> Option<Unusable> {
        if !self.open {
            return Some(Unusable::Closed);
        }
        if self.exclusive {
            return Some(Unusable::Exclusive);
        }
        match mem {
            // Whole GPU: nobody else on it, nothing foreign in its memory.
            None if self.users > 0 || self.foreign > 0 => Some(Unusable::InUse {
                runs: self.users,
                foreign: self.foreign,
            }),
            None => None,
            Some(_) if !share && self.users > 0 => Some(Unusable::InUse {
                runs: self.users,
                foreign: self.foreign,
            }),
            Some(m) => match self.free_mem() {
                Some(free) if free < m => Some(Unusable::Memory { free, want: m }),
                _ => None,
            },
        }
    }
}

impl Pool {
    /// Why GPU `g` cannot take a task wanting `mem` per GPU, policies included.
    pub fn gpu_unusable(&self, g: &PoolGpu, mem: Option<u64>) -> Option<Unusable> {
        self.gpu_unusable_after(g, mem, None)
    }

    /// As [`Pool::gpu_unusable`], for a retry after a gpu-oom whose run
    /// peaked at `peak` bytes: the GPU must have more free than that.
    pub fn gpu_unusable_after(
        &self,
        g: &PoolGpu,
        mem: Option<u64>,
        peak: Option<u64>,
    ) -> Option<Unusable> {
        if let Some(reason) = self.policy_closed.get(&g.index) {
            return Some(Unusable::ClosedByPolicy {
                reason: reason.clone(),
            });
        }
        if let Some(u) = g.unusable(mem, self.share) {
            return Some(u);
        }
        if let Some(u) = self.stagger.blocks(g.index) {
            return Some(u);
        }
        // Unmonitored GPUs have no known free memory: nothing to compare.
        match (peak, g.free_mem()) {
            (Some(peak), Some(free)) if free <= peak => Some(Unusable::BelowPeak { free, peak }),
            _ => None,
        }
    }

    /// Whether [`Pool::place_after`] would place `res` now (nothing taken).
    pub fn could_place(&self, res: &Resources, peak: Option<u64>) -> bool {
        let want = res.gpus as usize;
        (self.usable(res, peak, |_| true)).is_some_and(|gpus| gpus.take(want).count() == want)
    }

    /// When `res` would be placed now but for `[gpu] stagger`: why, in the
    /// words of the first staggered GPU ("staggered: GPU 1 started task 41
    /// 2.0s ago").
    pub fn staggered(&self, res: &Resources, peak: Option<u64>) -> Option<String> {
        if self.stagger.every_ms <= 0 {
            return None;
        }
        let mut unstaggered = self.clone();
        unstaggered.stagger.every_ms = 0;
        unstaggered.place_after(res, peak)?;
        let mem = res.gpu_mem.map(|m| m.as_u64());
        self.gpus
            .iter()
            .find_map(|g| match self.gpu_unusable_after(g, mem, peak) {
                Some(u @ Unusable::Staggered { .. }) => {
                    Some(nightjar_core::api::why::unusable_text(g.index, &u))
                }
                _ => None,
            })
    }

    /// What placing `res` now would meet, GPU by GPU.
    pub fn explain(&self, res: &Resources) -> Fit {
        self.explain_after(res, None)
    }

    /// As [`Pool::explain`], for a retry that needs more free than `peak`.
    pub fn explain_after(&self, res: &Resources, peak: Option<u64>) -> Fit {
        let mem = res.gpu_mem.map(|m| m.as_u64());
        Fit {
            slots_free: self.slots,
            gpus_wanted: res.gpus,
            gpus: self
                .gpus
                .iter()
                .map(|g| GpuFit {
                    index: g.index,
                    unusable: self.gpu_unusable_after(g, mem, peak),
                })
                .collect(),
            cpus_wanted: res.cpus.unwrap_or(0),
            cpus_free: self.cpus.len() as u32,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(users: u32, reserved: u64, foreign: u64) -> PoolGpu {
        PoolGpu {
            mem_total: Some(80 << 30),
            reserved,
            foreign,
            users,
            ..PoolGpu::unmonitored(0)
        }
    }

    #[test]
    fn each_obstacle_is_named_as_placement_sees_it() {
        let whole = gpu(1, 0, 0).unusable(None, true);
        assert_eq!(
            whole,
            Some(Unusable::InUse {
                runs: 1,
                foreign: 0
            })
        );
        let memory = gpu(1, 60 << 30, 10 << 30).unusable(Some(20 << 30), true);
        assert_eq!(
            memory,
            Some(Unusable::Memory {
                free: 10 << 30,
                want: 20 << 30
            })
        );
        assert_eq!(gpu(1, 60 << 30, 0).unusable(Some(20 << 30), true), None);
        assert!(matches!(
            gpu(1, 0, 0).unusable(Some(1), false),
            Some(Unusable::InUse { .. })
        ));
        let closed = PoolGpu {
            open: false,
            ..gpu(0, 0, 0)
        };
        assert_eq!(closed.unusable(None, true), Some(Unusable::Closed));
    }
}
