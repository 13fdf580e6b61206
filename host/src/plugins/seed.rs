//! The random seed a pass hands its plugins: a hash of what they see, so
//! the same snapshot always gives the same random bytes.

use super::model::Snapshot;

/// The random seed for `snapshot`: a hash of what the policy sees, so the
/// same snapshot always gives the same random bytes. Made once per pass; a
/// fast mix (FxHash's) over the fields, as it is a seed, not a table key.
pub fn seed_of(s: &Snapshot) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = Mix::default();
    (s.now, &s.time_zone, s.utc_offset).hash(&mut h);
    // Four independent lanes over the queue: the mixes of one task wait on
    // each other, those of four tasks do not.
    let mut lanes = [Mix(1), Mix(2), Mix(3), Mix(4)];
    for (i, t) in s.queue.iter().enumerate() {
        (t.id, t.submitted_at, t.eligible_at, t.attempts, &t.project).hash(&mut lanes[i % 4]);
    }
    for lane in lanes {
        h.add(lane.0);
    }
    for t in &s.running {
        (t.id, t.started_at, &t.gpus).hash(&mut h);
    }
    for g in &s.gpus {
        (
            g.index,
            g.mem_used,
            g.mem_reserved,
            g.util,
            g.temperature,
            g.healthy,
        )
            .hash(&mut h);
    }
    s.usage.len().hash(&mut h);
    h.finish()
}

/// FxHash's word mix: a word at a time, deterministic across runs.
#[derive(Default, Clone, Copy)]
struct Mix(u64);

impl Mix {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl std::hash::Hasher for Mix {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            let mut b = [0u8; 8];
            b.copy_from_slice(w);
            self.add(u64::from_le_bytes(b));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(b));
        }
    }

    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }

    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    fn write_i32(&mut self, n: i32) {
        self.add(n as u64);
    }

    fn write_i64(&mut self, n: i64) {
        self.add(n as u64);
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }
}
