//! Pinning a process to CPUs: a mask of any size, given to the kernel's
//! affinity call directly.

use std::io;

use super::check;

/// A set of CPUs as the kernel's affinity call takes it: 64 CPUs a word, as
/// many words as the highest id needs (the C libraries' fixed `cpu_set_t`
/// holds 1,024 in glibc and, as the `libc` crate declares it, only 128 in
/// musl: a GPU node's CPU 130 would have been dropped). Built before a fork,
/// so that pinning after it allocates nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuMask(Vec<u64>);

impl CpuMask {
    /// The set of `cpus` (ids past [`MAX_CPU_ID`], which no kernel has,
    /// are left out rather than sized for).
    pub fn new(cpus: &[u32]) -> CpuMask {
        let kept = cpus.iter().copied().filter(|&c| c <= MAX_CPU_ID);
        let words = kept.clone().max().map_or(0, |m| m as usize / 64 + 1);
        let mut w = vec![0u64; words];
        for c in kept {
            w[c as usize / 64] |= 1 << (c % 64);
        }
        CpuMask(w)
    }

    /// Whether it holds no CPU.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }
}

/// The highest CPU id a mask holds (Linux's NR_CPUS is at most 8,192).
pub const MAX_CPU_ID: u32 = (1 << 16) - 1;

/// Pins the calling process to the CPUs of `mask`.
///
/// # Safety
/// Async-signal-safe: one system call on memory made before; usable
/// between fork and exec.
pub unsafe fn pin_to_cpus(mask: &CpuMask) -> io::Result<()> {
    // SAFETY: the kernel reads `len` bytes of the mask's words, which live.
    let r = unsafe {
        libc::syscall(
            libc::SYS_sched_setaffinity,
            0,
            mask.0.len() * 8,
            mask.0.as_ptr(),
        )
    };
    check(r as libc::c_int).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpu_mask_holds_ids_past_128_and_leaves_out_absurd_ones() {
        let m = CpuMask::new(&[0, 63, 64, 130]);
        assert_eq!(m.0, vec![1 | 1 << 63, 1, 1 << 2]);
        assert!(CpuMask::new(&[]).is_empty());
        assert!(CpuMask::new(&[u32::MAX]).is_empty(), "no 512 MB mask");
    }

    #[test]
    fn pinning_takes_exactly_the_cpus_of_the_mask() {
        // On a thread of its own: affinity is per thread.
        std::thread::spawn(|| {
            // SAFETY: one system call on a live mask.
            unsafe { pin_to_cpus(&CpuMask::new(&[0])) }.unwrap();
            // SAFETY: cpu_set_t is plain data; all zeroes is a valid value.
            let mut got: libc::cpu_set_t = unsafe { std::mem::zeroed() };
            // SAFETY: sched_getaffinity fills a live set of the size given.
            let r = unsafe {
                libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut got)
            };
            assert_eq!(r, 0);
            // SAFETY: reads bits of a filled set, within its size.
            let on: Vec<usize> = (0..64)
                .filter(|&c| unsafe { libc::CPU_ISSET(c, &got) })
                .collect();
            assert_eq!(on, vec![0]);
            // A CPU this machine does not have: refused, not ignored.
            // SAFETY: as above.
            assert!(unsafe { pin_to_cpus(&CpuMask::new(&[4_000])) }.is_err());
        })
        .join()
        .unwrap();
    }
}
