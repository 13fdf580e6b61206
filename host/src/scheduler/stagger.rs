//! `[gpu] stagger`: two runs never start on the same GPU less than this
//! apart. Ten PyTorch jobs creating their CUDA contexts on one GPU in the
//! same second fight over its memory; labs stagger them by a few seconds.
//! Pure: the clock is the one the daemon sets before each pass.

use std::collections::BTreeMap;

use super::Unusable;

/// When each GPU last had a run started on it, and the least gap between two.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stagger {
    /// Least time between two starts on one GPU, ms (0: no stagger).
    pub every_ms: i64,
    /// The clock placement judges by (Unix ms), set before each pass.
    pub now: i64,
    /// Per GPU index: (when a run last started on it, Unix ms; its task).
    pub last: BTreeMap<u32, (i64, i64)>,
}

impl Stagger {
    /// Why GPU `index` may not take a run now, or `None` when it may.
    pub fn blocks(&self, index: u32) -> Option<Unusable> {
        if self.every_ms <= 0 {
            return None;
        }
        let &(at, task) = self.last.get(&index)?;
        let ago = self.now.saturating_sub(at);
        // A start "in the future" (the clock stepped back) blocks only for
        // one stagger from now, not until the clock catches up.
        (ago < self.every_ms && ago > -self.every_ms).then_some(Unusable::Staggered {
            task,
            ago_ms: ago.max(0),
        })
    }

    /// Notes that `task` started on `gpus` at `at`.
    pub fn started(&mut self, gpus: &[u32], task: i64, at: i64) {
        for &g in gpus {
            let newer = self.last.get(&g).is_none_or(|&(prev, _)| prev <= at);
            if newer {
                self.last.insert(g, (at, task));
            }
        }
    }

    /// When the earliest stagger still in force ends (a pass is due then),
    /// or `None` when no GPU is staggered.
    pub fn next_expiry(&self) -> Option<i64> {
        if self.every_ms <= 0 {
            return None;
        }
        self.last
            .keys()
            .filter(|&&g| self.blocks(g).is_some())
            .filter_map(|g| self.last.get(g))
            .map(|&(at, _)| at.max(self.now - self.every_ms) + self.every_ms)
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::{Pool, PoolGpu};
    use crate::task::model::Resources;
    use bytesize::ByteSize;

    fn pool(every_ms: i64) -> Pool {
        Pool {
            slots: 8,
            gpus: (0..2)
                .map(|i| PoolGpu {
                    mem_total: Some(80 << 30),
                    ..PoolGpu::unmonitored(i)
                })
                .collect(),
            cpus: vec![],
            share: true,
            policy_closed: Default::default(),
            stagger: Stagger {
                every_ms,
                ..Stagger::default()
            },
        }
    }

    fn small() -> Resources {
        Resources {
            gpus: 1,
            gpu_mem: Some(ByteSize::gib(1)),
            ..Default::default()
        }
    }

    #[test]
    fn a_gpu_takes_a_second_start_only_a_stagger_after_the_first() {
        let mut p = pool(3_000);
        p.stagger.now = 10_000;
        let a = p.place(&small()).unwrap();
        assert_eq!(a.gpus, vec![0]);
        p.stagger.started(&a.gpus, 41, 10_000);
        let b = p.place(&small()).unwrap();
        assert_eq!(b.gpus, vec![1], "GPU 0 is staggered: the other one is used");
        p.stagger.started(&b.gpus, 42, 10_000);
        assert!(p.place(&small()).is_none(), "both staggered");
        p.stagger.now = 12_000;
        assert_eq!(
            p.explain(&small()).gpus[0].unusable,
            Some(Unusable::Staggered {
                task: 41,
                ago_ms: 2_000
            })
        );
        assert_eq!(p.stagger.next_expiry(), Some(13_000));
        p.stagger.now = 12_999;
        assert!(p.place(&small()).is_none(), "one ms short of the stagger");
        p.stagger.now = 13_000;
        assert_eq!(p.place(&small()).unwrap().gpus, vec![0]);
        assert_eq!(p.stagger.next_expiry(), None, "nothing staggered any more");
    }

    #[test]
    fn no_stagger_configured_never_blocks_and_a_clock_stepped_back_blocks_one_stagger_at_most() {
        let mut p = pool(0);
        p.stagger.started(&[0], 1, 5_000);
        p.stagger.now = 5_000;
        assert!(p.stagger.blocks(0).is_none());
        let mut s = Stagger {
            every_ms: 3_000,
            now: 1_000,
            ..Stagger::default()
        };
        s.started(&[0], 7, 3_600_000);
        assert!(s.blocks(0).is_none(), "a start an hour ahead of the clock");
        s.started(&[1], 8, 2_000);
        assert!(s.blocks(1).is_some(), "a start a second ahead still counts");
        assert_eq!(s.next_expiry(), Some(5_000));
        s.started(&[1], 9, 1_500);
        assert_eq!(
            s.last[&1],
            (2_000, 8),
            "an older start does not replace a newer one"
        );
    }
}
