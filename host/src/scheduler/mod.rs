//! The pure core of scheduling: given what is free, where does a task go.
//! Order comes from the store (priority, then submit time): the built-in
//! fallback that stays in force when every policy plugin has failed.

use crate::task::model::Resources;

/// What is free right now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pool {
    /// Free slots.
    pub slots: u32,
    /// Free GPU indices, in config order.
    pub gpus: Vec<u32>,
    /// Free cores, in order.
    pub cpus: Vec<u32>,
}

/// Where a task was placed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Placement {
    /// GPU indices given.
    pub gpus: Vec<u32>,
    /// Cores pinned to (empty: not pinned).
    pub cpus: Vec<u32>,
}

impl Pool {
    /// Takes what `res` needs from the pool, or returns `None` and takes nothing.
    pub fn place(&mut self, res: &Resources) -> Option<Placement> {
        let gpus = res.gpus as usize;
        let cpus = res.cpus.unwrap_or(0) as usize;
        if self.slots == 0 || self.gpus.len() < gpus || self.cpus.len() < cpus {
            return None;
        }
        self.slots -= 1;
        Some(Placement {
            gpus: self.gpus.drain(..gpus).collect(),
            cpus: self.cpus.drain(..cpus).collect(),
        })
    }

    /// Gives a placement's resources back.
    pub fn give_back(&mut self, p: &Placement) {
        self.slots += 1;
        self.gpus.extend(&p.gpus);
        self.gpus.sort_unstable();
        self.cpus.extend(&p.cpus);
        self.cpus.sort_unstable();
    }

    /// Removes resources held by a run adopted after a restart.
    pub fn take_adopted(&mut self, p: &Placement) {
        self.slots = self.slots.saturating_sub(1);
        self.gpus.retain(|g| !p.gpus.contains(g));
        self.cpus.retain(|c| !p.cpus.contains(c));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool() -> Pool {
        Pool {
            slots: 2,
            gpus: vec![0, 1],
            cpus: vec![0, 1, 2, 3],
        }
    }

    #[test]
    fn gpus_and_cpus_are_exclusive_until_given_back() {
        let mut p = pool();
        let a = p
            .place(&Resources {
                gpus: 2,
                cpus: Some(3),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(a.gpus, vec![0, 1]);
        assert_eq!(a.cpus, vec![0, 1, 2]);
        assert!(
            p.place(&Resources {
                gpus: 1,
                ..Default::default()
            })
            .is_none()
        );
        assert!(
            p.place(&Resources {
                cpus: Some(2),
                ..Default::default()
            })
            .is_none()
        );
        assert_eq!(p.slots, 1, "a failed placement takes nothing");
        p.give_back(&a);
        assert_eq!(p, pool());
    }

    #[test]
    fn slots_bound_concurrency() {
        let mut p = pool();
        assert!(p.place(&Resources::default()).is_some());
        assert!(p.place(&Resources::default()).is_some());
        assert!(p.place(&Resources::default()).is_none());
    }
}
