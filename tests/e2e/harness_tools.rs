//! The harness's tools beside the daemon: processes, files, a small
//! file system, screenshots, and the reliability tests' sizes.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Sends a signal.
pub fn unsafe_kill(pid: i32, sig: i32) {
    let _ = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status();
}

/// True if `pid` is a live (non-zombie) process.
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => s
            .rsplit(')')
            .next()
            .is_some_and(|rest| !rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Reads a file's text, or "".
pub fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

/// A small tmpfs mounted for one test (needs root), unmounted when dropped.
pub struct SmallFs(PathBuf);

impl SmallFs {
    /// Mounts a tmpfs of `size` (`1m`) at `at`; why not, when it cannot.
    pub fn mount(at: &Path, size: &str) -> Result<SmallFs, String> {
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
        }
        Ok(SmallFs(at.to_path_buf()))
    }

    /// Grows (or shrinks) it to `size`, keeping its files.
    pub fn resize(&self, size: &str) {
        let ok = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.0)
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        assert!(ok, "cannot resize the tmpfs at {}", self.0.display());
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Share of a PNG's pixels that are not white (screenshots of pages and
/// PDF pages are checked not to be blank with it); panics on a bad PNG.
pub fn ink(png_bytes: &[u8]) -> f64 {
    let mut dec = png::Decoder::new(std::io::Cursor::new(png_bytes));
    dec.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = dec.read_info().expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size().expect("size")];
    let info = reader.next_frame(&mut buf).expect("a frame");
    let px = info.color_type.samples();
    let pixels = &buf[..info.buffer_size()];
    let inked = pixels
        .chunks(px)
        .filter(|p| p.iter().take(3).any(|&c| c < 240))
        .count();
    inked as f64 / (pixels.len() / px) as f64
}

/// Fails the test that needs `what` and cannot have it here: a test that
/// passes without doing its job would read as a pass. `.ci/run` installs
/// every tool the suite needs and runs it as root.
#[track_caller]
pub fn needs(what: &str, why: impl std::fmt::Display) -> ! {
    panic!(
        "this test needs {what} ({why}); run the suite as root with the tools `.ci/run` installs"
    )
}

/// `short` in the suite, `full` under `scripts/chaos` (`NIGHTJAR_CHAOS=full`):
/// the reliability tests' sizes (tasks, kills, trials, seconds).
pub fn chaos_scale(short: usize, full: usize) -> usize {
    if std::env::var("NIGHTJAR_CHAOS").is_ok_and(|v| v == "full") {
        full
    } else {
        short
    }
}

/// One row of `scripts/chaos`'s table (printed; the script collects them).
pub fn chaos_row(fault: &str, runs: usize, lost: usize, doubled: usize, hung: usize) {
    println!("CHAOS|{fault}|{runs}|{lost}|{doubled}|{hung}");
}

/// `/dev/full` opened for writing: a stream that takes nothing (ENOSPC),
/// for a command's stdout or stderr.
pub fn dev_full() -> std::fs::File {
    std::fs::File::options()
        .write(true)
        .open("/dev/full")
        .expect("open /dev/full")
}
