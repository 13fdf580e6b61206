//! Runs and output folders for validators' native unit tests.
//!
//! ```
//! use nightjar_sdk::testing::OutputDir;
//!
//! let out = OutputDir::new();
//! out.write("metrics.json", r#"{"loss": 0.5}"#);
//! let run = out.run().build();
//! assert_eq!(run.files[0].path, "metrics.json");
//! assert_eq!(run.read_to_string("metrics.json", 1024).unwrap(), r#"{"loss": 0.5}"#);
//! ```

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::{OutputFile, Run};

/// The sha256 a [`RunBuilder`] gives a file added without one (the SDK
/// does not hash; a test that needs the real hash says it with
/// [`RunBuilder::file_with_sha256`]).
pub const NO_SHA256: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Builds a [`Run`] step by step: task 1, run 1, attempt 1, name `task`,
/// project `default`, exit code 0, class `ok`, no files, its folder
/// [`OUTPUT_ROOT`](crate::validator::OUTPUT_ROOT) until [`RunBuilder::root`]
/// says otherwise.
pub struct RunBuilder {
    run: Run,
}

impl Default for RunBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl RunBuilder {
    /// A run with the defaults above.
    pub fn new() -> RunBuilder {
        RunBuilder {
            run: Run {
                task: 1,
                run: 1,
                attempt: 1,
                name: "task".into(),
                project: "default".into(),
                exit_code: Some(0),
                class: "ok".into(),
                duration: 60_000,
                files: Vec::new(),
                files_omitted: 0,
                stderr_tail: String::new(),
                root: PathBuf::from(crate::validator::OUTPUT_ROOT),
            },
        }
    }

    /// Reads the output files from `dir` (a test's folder) instead of `/output`.
    pub fn root(mut self, dir: impl Into<PathBuf>) -> Self {
        self.run.root = dir.into();
        self
    }

    /// Sets the task id and run id.
    pub fn ids(mut self, task: i64, run: i64) -> Self {
        self.run.task = task;
        self.run.run = run;
        self
    }

    /// Sets the attempt (1 for the first).
    pub fn attempt(mut self, attempt: u32) -> Self {
        self.run.attempt = attempt;
        self
    }

    /// Sets the task's name.
    pub fn name(mut self, name: &str) -> Self {
        self.run.name = name.into();
        self
    }

    /// Sets the task's project.
    pub fn project(mut self, project: &str) -> Self {
        self.run.project = project.into();
        self
    }

    /// Sets the run's duration in milliseconds.
    pub fn duration(mut self, ms: u64) -> Self {
        self.run.duration = ms;
        self
    }

    /// Sets the tail of the run's stderr.
    pub fn stderr_tail(mut self, text: &str) -> Self {
        self.run.stderr_tail = text.into();
        self
    }

    /// Sets how many files the host left out of the list.
    pub fn files_omitted(mut self, n: u32) -> Self {
        self.run.files_omitted = n;
        self
    }

    /// Lists a file of `size` bytes (nothing is written; its sha256 is
    /// [`NO_SHA256`]). The list is kept sorted by path, as the host sends it.
    pub fn file(self, path: &str, size: u64) -> Self {
        self.file_with_sha256(path, size, NO_SHA256)
    }

    /// Lists a file with its hash.
    pub fn file_with_sha256(mut self, path: &str, size: u64, sha256: &str) -> Self {
        self.run.files.retain(|f| f.path != path);
        self.run.files.push(OutputFile {
            path: path.into(),
            size,
            sha256: sha256.into(),
        });
        self.run.files.sort_by(|a, b| a.path.cmp(&b.path));
        self
    }

    /// The run.
    pub fn build(self) -> Run {
        self.run
    }
}

/// A fresh folder under the system's temporary folder, removed on drop: a
/// stand-in for a run's output folder in native tests. [`OutputDir::run`]
/// gives a [`RunBuilder`] rooted there that lists its regular files, as the
/// host would.
pub struct OutputDir {
    path: PathBuf,
}

impl Default for OutputDir {
    fn default() -> Self {
        Self::new()
    }
}

impl OutputDir {
    /// A new, empty folder. Panics if it cannot be made (it is for tests).
    pub fn new() -> OutputDir {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let path = std::env::temp_dir().join(format!(
            "nightjar-sdk-output-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        // A leftover of an earlier process with the same id.
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("create a test output folder");
        OutputDir { path }
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `contents` to the relative `path`, making its folders. Panics
    /// on failure.
    pub fn write(&self, path: &str, contents: impl AsRef<[u8]>) -> &Self {
        let full = self.path.join(path);
        if let Some(parent) = full.parent() {
            std::fs::create_dir_all(parent).expect("create a folder in the test output folder");
        }
        std::fs::write(&full, contents).expect("write a file in the test output folder");
        self
    }

    /// A [`RunBuilder`] rooted at this folder, listing every regular file
    /// under it (as the host does: sorted, `/`-separated, no symbolic links).
    pub fn run(&self) -> RunBuilder {
        let mut builder = RunBuilder::new().root(&self.path);
        let mut files = Vec::new();
        list(&self.path, "", &mut files);
        for (path, size) in files {
            builder = builder.file(&path, size);
        }
        builder
    }
}

impl Drop for OutputDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Every regular file under `dir`, as (relative path, size).
fn list(dir: &Path, prefix: &str, out: &mut Vec<(String, u64)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let rel = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}/{name}")
        };
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            list(&entry.path(), &rel, out);
        } else if kind.is_file()
            && let Ok(meta) = entry.metadata()
        {
            out.push((rel, meta.len()));
        }
    }
}
