//! Why a run failed, beyond its exit code: the supervisor looks at the exit
//! status, the run cgroup's OOM kills and the last 64 KiB of its stderr and
//! stdout, and names a class (`gpu-oom`, `host-oom`, `disk-full`, `network`)
//! with a one-line hint of what to do. The patterns are `[classes]` in the
//! config; the exit-code convention (101 gpu-oom, 102 disk-full, 103 network,
//! 110 timeout) is honoured when a task uses it.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use serde::{Deserialize, Serialize};

use nightjar_core::api::class::RunClass;

/// Bytes of the end of each log read for patterns.
pub const TAIL: u64 = 64 << 10;

/// Text that marks each class in a run's output (case-insensitive
/// substrings), from `[classes]` in the config.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClassPatterns {
    /// The GPU ran out of memory.
    pub gpu_oom: Vec<String>,
    /// The disk filled up.
    pub disk_full: Vec<String>,
    /// The network failed: timeouts, DNS, refused or reset connections.
    pub network: Vec<String>,
    /// A task held after a disk-full run is released when each file system
    /// it writes to (workdir, output folder) has this much free.
    pub disk_free: bytesize::ByteSize,
}

impl Default for ClassPatterns {
    fn default() -> Self {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect();
        ClassPatterns {
            gpu_oom: v(&[
                // PyTorch, cuBLAS, the runtime and the driver API.
                "CUDA out of memory",
                "CUBLAS_STATUS_ALLOC_FAILED",
                "cudaErrorMemoryAllocation",
                "CUDA_ERROR_OUT_OF_MEMORY",
                // JAX/XLA and CuPy.
                "RESOURCE_EXHAUSTED: Out of memory",
                "OutOfMemoryError: Out of memory allocating",
            ]),
            disk_full: v(&["No space left on device", "ENOSPC"]),
            network: v(&[
                "Connection refused",
                "Connection reset by peer",
                "Connection timed out",
                "Temporary failure in name resolution",
                "Name or service not known",
                "Network is unreachable",
            ]),
            disk_free: bytesize::ByteSize::gib(1),
        }
    }
}

/// A class found in what the run left, and what to do about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Detected {
    /// `gpu-oom`, `host-oom`, `disk-full`, `network` or `timeout`.
    pub class: RunClass,
    /// One line: what was seen and what to do.
    pub hint: String,
}

/// The class of a failed run (`exit_code` not 0, or none: killed), if its
/// exit code, OOM kills or output name one; `None` for a plain application
/// error.
pub fn detect(
    patterns: &ClassPatterns,
    exit_code: Option<i32>,
    oom_kills: u64,
    output: &str,
) -> Option<Detected> {
    let found = |class: RunClass, hint: String| Some(Detected { class, hint });
    if exit_code == Some(0) {
        return None;
    }
    if oom_kills > 0 {
        return found(
            RunClass::HostOom,
            format!(
                "the kernel's OOM killer ended {oom_kills} process(es) of the run: raise `resources.mem`, or use less memory"
            ),
        );
    }
    let lower = output.to_lowercase();
    let seen = |list: &[String]| {
        list.iter()
            .find(|p| !p.is_empty() && lower.contains(&p.to_lowercase()))
            .cloned()
    };
    let by_code = match exit_code {
        Some(101) => Some(RunClass::GpuOom),
        Some(102) => Some(RunClass::DiskFull),
        Some(103) => Some(RunClass::Network),
        Some(110) => Some(RunClass::Timeout),
        _ => None,
    };
    let said = |p: Option<String>, what: &str| match p {
        Some(p) => format!("its output says `{p}`: {what}"),
        None => format!(
            "exit code {} says so: {what}",
            exit_code.unwrap_or_default()
        ),
    };
    let gpu = seen(&patterns.gpu_oom);
    if by_code == Some(RunClass::GpuOom) || gpu.is_some() {
        return found(
            RunClass::GpuOom,
            said(
                gpu,
                "the GPU ran out of memory; ask for a GPU with more free memory (`gpu_mem`) or use a smaller batch",
            ),
        );
    }
    let disk = seen(&patterns.disk_full);
    if by_code == Some(RunClass::DiskFull) || disk.is_some() {
        return found(
            RunClass::DiskFull,
            said(
                disk,
                "a file system is full; free space where the task writes (`df -h`)",
            ),
        );
    }
    let net = seen(&patterns.network);
    if by_code == Some(RunClass::Network) || net.is_some() {
        return found(
            RunClass::Network,
            said(
                net,
                "a network call failed; it is usually worth a retry later",
            ),
        );
    }
    if by_code == Some(RunClass::Timeout) {
        return found(
            RunClass::Timeout,
            said(
                None,
                "the task gave up on its own deadline; raise its limit or shorten the work",
            ),
        );
    }
    None
}

/// The class of run in `dir` that exited as `status` says: its stderr and
/// stdout tails against `patterns`, its exit code and `oom_kills`. A full
/// disk names how full the file systems of `spec_paths` (workdir, output) are.
pub fn of_run(
    dir: &Path,
    patterns: &ClassPatterns,
    spec_paths: (&Path, Option<&Path>),
    status: &super::files::RunStatus,
    oom_kills: u64,
) -> Option<Detected> {
    let output = [super::files::STDERR, super::files::STDOUT]
        .map(|f| tail(&dir.join(f)))
        .join("\n");
    let mut found = detect(patterns, status.exit_code, oom_kills, &output)?;
    if found.class == RunClass::DiskFull {
        // Name the file systems the task writes to and how full they are.
        let fill: Vec<String> = [Some(spec_paths.0), spec_paths.1]
            .into_iter()
            .flatten()
            .filter_map(fullness)
            .collect();
        if !fill.is_empty() {
            found.hint = format!("{} ({})", found.hint, fill.join("; "));
        }
    }
    Some(found)
}

/// `the file system of PATH is 97% full, 1.2G free`, or `None` when
/// `statvfs` cannot tell.
pub fn fullness(path: &Path) -> Option<String> {
    let (total, free) = space(path)?;
    Some(describe_fill(path, total, free))
}

/// The size of the file system of `path` and the bytes free to unprivileged
/// users on it, from `statvfs`; `None` when it cannot tell.
pub fn space(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: `c` is a valid NUL-terminated path; `st` is plain data the call fills.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are valid for the call.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    let unit = st.f_frsize as u64;
    Some((
        (st.f_blocks as u64).saturating_mul(unit),
        (st.f_bavail as u64).saturating_mul(unit),
    ))
}

/// [`space`] of the file system `path` is on, asked of its nearest folder
/// that still exists: a held task's output folder deleted to make room is
/// on the same file system as its parent (and a path that is gone would
/// otherwise never answer again). `None` only when no ancestor answers.
pub fn space_near(path: &Path) -> Option<(u64, u64)> {
    path.ancestors().find_map(|p| {
        if p.as_os_str().is_empty() {
            return None;
        }
        match std::fs::symlink_metadata(p) {
            Ok(_) => space(p),
            Err(_) => None,
        }
    })
}

/// The words of [`fullness`] for a file system of `total` bytes with `free` available.
pub fn describe_fill(path: &Path, total: u64, free: u64) -> String {
    let used = total.saturating_sub(free);
    let pct = (used as f64 * 100.0 / total.max(1) as f64).round() as u64;
    format!(
        "the file system of {} is {pct}% full, {} free",
        path.display(),
        bytesize::ByteSize::b(free).display().iec_short()
    )
}

/// The last [`TAIL`] bytes of the file at `path` as text (lossy), or
/// nothing when it cannot be read.
pub fn tail(path: &Path) -> String {
    tail_bytes(path, TAIL)
}

/// The last `n` bytes of the file at `path` as text (lossy), "" when unreadable.
pub fn tail_bytes(path: &Path, n: u64) -> String {
    // A plain file only: the run folder may be its task's owner's.
    let Ok(mut f) = nightjar_core::plain_file::open(path) else {
        return String::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    if f.seek(SeekFrom::Start(len.saturating_sub(n))).is_err() {
        return String::new();
    }
    let mut buf = Vec::new();
    let _ = f.take(n).read_to_end(&mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}

/// The OOM kills counted in the cgroup at `cg` (`memory.events`), 0 when
/// unknown.
pub fn oom_kills(cg: &Path) -> u64 {
    std::fs::read_to_string(cg.join("memory.events"))
        .ok()
        .and_then(|t| {
            t.lines().find_map(|l| {
                l.strip_prefix("oom_kill ")
                    .map(str::trim)
                    .map(str::to_string)
            })
        })
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(code: Option<i32>, oom: u64, out: &str) -> Option<&'static str> {
        detect(&ClassPatterns::default(), code, oom, out).map(|d| d.class.as_str())
    }

    #[test]
    fn output_patterns_name_the_class_case_insensitively() {
        let oom = "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB";
        assert_eq!(class(Some(1), 0, oom), Some("gpu-oom"));
        assert_eq!(
            class(Some(1), 0, "write: no space left on device"),
            Some("disk-full")
        );
        assert_eq!(
            class(Some(2), 0, "curl: (7) Connection refused"),
            Some("network")
        );
        assert_eq!(
            class(Some(1), 0, "Traceback: KeyError 'x'"),
            None,
            "a plain app error"
        );
    }

    #[test]
    fn each_frameworks_out_of_memory_error_is_gpu_oom() {
        // As each printed it on an H200 (scripts/gpu-check, 2026-12-04).
        for said in [
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 280.00 GiB.",
            "CUDA_ERROR_OUT_OF_MEMORY: cuMemAlloc of 280 GiB failed",
            "cupy.cuda.memory.OutOfMemoryError: Out of memory allocating 300,647,710,720 bytes (allocated so far: 0 bytes).",
            "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 280.00GiB with allocator GPU_0_bfc on device 0.",
        ] {
            assert_eq!(class(Some(1), 0, said), Some("gpu-oom"), "{said}");
        }
    }

    #[test]
    fn the_exit_code_convention_is_honoured() {
        assert_eq!(class(Some(101), 0, ""), Some("gpu-oom"));
        assert_eq!(class(Some(102), 0, ""), Some("disk-full"));
        assert_eq!(class(Some(103), 0, ""), Some("network"));
        assert_eq!(class(Some(110), 0, ""), Some("timeout"));
        let d = detect(&ClassPatterns::default(), Some(102), 0, "").unwrap();
        assert!(d.hint.starts_with("exit code 102 says so"), "{}", d.hint);
    }

    #[test]
    fn oom_kills_win_and_a_success_is_never_classed() {
        assert_eq!(class(None, 1, ""), Some("host-oom"));
        assert_eq!(class(Some(0), 3, "CUDA out of memory"), None);
    }

    #[test]
    fn a_full_disk_is_described_by_its_fill_and_free_space() {
        let d = describe_fill(Path::new("/data"), 100 << 30, 1 << 30);
        assert_eq!(d, "the file system of /data is 99% full, 1.0G free");
        let root = fullness(Path::new("/")).expect("statvfs of /");
        assert!(root.starts_with("the file system of / is "), "{root}");
        assert_eq!(fullness(Path::new("/no/such/place")), None);
    }

    #[test]
    fn the_space_of_a_vanished_folder_is_asked_of_its_nearest_ancestor() {
        let dir = tempfile::tempdir().unwrap();
        let gone = dir.path().join("out/run-1/deeper");
        assert_eq!(space(&gone), None);
        assert_eq!(
            space_near(&gone).map(|(total, _)| total),
            space(dir.path()).map(|(total, _)| total)
        );
    }

    #[test]
    fn configured_patterns_replace_the_defaults() {
        let p = ClassPatterns {
            gpu_oom: vec!["HIP out of memory".into()],
            ..ClassPatterns::default()
        };
        assert_eq!(
            detect(&p, Some(1), 0, "HIP out of memory").map(|d| d.class),
            Some(RunClass::GpuOom)
        );
        assert_eq!(detect(&p, Some(1), 0, "CUDA out of memory"), None);
    }

    #[test]
    fn the_tail_is_the_end_of_a_long_log_and_memory_events_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("stderr.log");
        let mut text = "x".repeat(200 << 10);
        text.push_str("CUDA out of memory");
        std::fs::write(&log, &text).unwrap();
        let t = tail(&log);
        assert_eq!(t.len() as u64, TAIL);
        assert!(t.ends_with("CUDA out of memory"));
        assert_eq!(tail(&dir.path().join("missing")), "");
        std::fs::write(
            dir.path().join("memory.events"),
            "low 0\nhigh 0\nmax 2\noom 1\noom_kill 1\n",
        )
        .unwrap();
        assert_eq!(oom_kills(dir.path()), 1);
        assert_eq!(oom_kills(&dir.path().join("nope")), 0);
    }
}
