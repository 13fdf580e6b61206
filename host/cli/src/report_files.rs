//! The files of `nightjar report --html FILE` and `--pdf FILE`: the page the
//! daemon rendered, written atomically; the PDF printed from that same page
//! by a headless Chromium.
//!
//! Why Chromium for the PDF: the HTML page is the report's one source of
//! truth, so the PDF is that page printed, by the same engine that people
//! open it in, with its `@media print` rules (A4, a section a page) and its
//! inline SVG charts; no second renderer (a PDF library here would lay out
//! every table and chart again, and drift). Chromium is one Debian package
//! (`apt-get install chromium`), prints without a display (`--headless`),
//! and is only needed by whoever asks for `--pdf`: the client stays slim.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};

/// Longest a print may take before the browser is killed.
pub const PRINT_TIMEOUT: Duration = Duration::from_secs(60);

/// The browsers looked for on `PATH`, in order.
pub const BROWSERS: [&str; 3] = ["chromium", "chromium-browser", "google-chrome"];

/// Environment variable naming the browser to use instead.
pub const BROWSER_ENV: &str = "NIGHTJAR_CHROMIUM";

/// A name no other call of this process (nor another process) picks.
fn unique(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(
        "{prefix}{}-{nanos:x}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Writes `bytes` to `path` whole or not at all: a temp file in the same
/// folder, synced, then renamed over `path`.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .with_context(|| format!("cannot write {}: not a file name", path.display()))?;
    let mut tmp_name = OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(unique(".tmp-"));
    let tmp = dir.join(tmp_name);
    let written = (|| -> std::io::Result<()> {
        let mut f = fs::File::options()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        bail!("cannot write {}: {e}", path.display());
    }
    Ok(())
}

/// Writes the HTML report to `path` atomically.
pub fn write_html(path: &Path, html: &str) -> Result<()> {
    write_atomic(path, html.as_bytes())
}

/// A folder of this user's only (0700) under the temp dir, removed on drop.
struct PrivateDir(PathBuf);

impl PrivateDir {
    fn new() -> Result<PrivateDir> {
        let p = std::env::temp_dir().join(unique("nightjar-pdf-"));
        fs::DirBuilder::new()
            .mode(0o700)
            .create(&p)
            .with_context(|| format!("cannot create the temp folder {}", p.display()))?;
        Ok(PrivateDir(p))
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// `name` if it is an executable file, else the executable `name` in one
/// of the folders of `path` (a `PATH` value).
fn find(name: &str, path: Option<&OsStr>) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &Path| {
        fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if name.contains('/') {
        let p = PathBuf::from(name);
        return runnable(&p).then_some(p);
    }
    std::env::split_paths(path?)
        .map(|d| d.join(name))
        .find(|p| runnable(p))
}

/// The browser named by `over` (`NIGHTJAR_CHROMIUM`'s value), else the
/// first of `BROWSERS` in `path`.
fn pick(over: Option<&OsStr>, path: Option<&OsStr>) -> Result<PathBuf> {
    if let Some(b) = over.filter(|b| !b.is_empty()) {
        let b = b.to_string_lossy();
        return find(&b, path).with_context(|| format!("{BROWSER_ENV}={b}: no such program"));
    }
    BROWSERS
        .iter()
        .find_map(|b| find(b, path))
        .with_context(|| {
            format!(
                "no Chromium to print the PDF with (looked for {} on PATH; {BROWSER_ENV} names \
             another): install it (Debian/Ubuntu: `apt-get install chromium`), or write \
             the report with --html",
                BROWSERS.join(", ")
            )
        })
}

/// The browser to print with: `NIGHTJAR_CHROMIUM`, else the first of
/// `BROWSERS` on `PATH`.
pub fn browser() -> Result<PathBuf> {
    pick(
        std::env::var_os(BROWSER_ENV).as_deref(),
        std::env::var_os("PATH").as_deref(),
    )
}

/// Prints `html` to the PDF `path` with a headless Chromium (see the
/// module's doc for why), within `PRINT_TIMEOUT`; the PDF replaces `path`
/// whole or not at all.
pub fn write_pdf(path: &Path, html: &str) -> Result<()> {
    print(&browser()?, path, html, PRINT_TIMEOUT)
}

/// Prints `html` to `path` with the browser `exe` within `timeout`.
fn print(exe: &Path, path: &Path, html: &str, timeout: Duration) -> Result<()> {
    let tmp = PrivateDir::new()?;
    let page = tmp.0.join("report.html");
    let pdf = tmp.0.join("report.pdf");
    fs::write(&page, html).with_context(|| format!("cannot write {}", page.display()))?;
    let log_path = tmp.0.join("chromium.log");
    let log = fs::File::create(&log_path)
        .with_context(|| format!("cannot write {}", log_path.display()))?;
    let mut cmd = Command::new(exe);
    cmd.args(["--headless", "--disable-gpu", "--no-pdf-header-footer"])
        .args(["--no-first-run", "--no-default-browser-check"])
        .arg(format!(
            "--user-data-dir={}",
            tmp.0.join("profile").display()
        ))
        .arg(format!("--print-to-pdf={}", pdf.display()));
    // Chromium refuses to start as root with its sandbox on ("Running as
    // root without --no-sandbox is not supported"). The page is our own,
    // script-free and read from a private file, so the sandbox guards
    // nothing here that we don't trust; as any other user it stays on.
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        cmd.arg("--no-sandbox");
    }
    cmd.arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        // Its own process group: a timeout kills the browser's helpers too.
        .process_group(0);
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot run {}", exe.display()))?;
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break s;
        }
        if t0.elapsed() > timeout {
            // SAFETY: kill has no memory preconditions; the group is the child's own.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            bail!(
                "{} did not print {} within {}s; killed",
                exe.display(),
                path.display(),
                timeout.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // Helpers left behind by a browser that exited.
    // SAFETY: as above.
    unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
    let mut bytes = Vec::new();
    let printed = fs::File::open(&pdf).and_then(|mut f| f.read_to_end(&mut bytes));
    if !status.success() || printed.is_err() || !bytes.starts_with(b"%PDF") {
        let said = fs::read_to_string(&log_path).unwrap_or_default();
        let tail: Vec<&str> = said.lines().rev().take(8).collect();
        bail!(
            "{} could not print {} ({status}): {}",
            exe.display(),
            path.display(),
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        );
    }
    write_atomic(path, &bytes)
}

#[cfg(test)]
#[path = "report_files_tests.rs"]
mod tests;
