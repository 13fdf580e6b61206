//! A small deterministic generator for the SDK's randomized tests (the
//! same sequence on every run and every machine).

/// A linear congruential generator (Knuth's MMIX constants).
pub(crate) struct Lcg(pub(crate) u64);

impl Lcg {
    /// The next number below `below` (which must be above 0).
    pub(crate) fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % below
    }
}
