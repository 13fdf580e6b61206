//! The run a validator judges, and reading the files of its output folder.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};

use crate::validator_abi as abi;

/// Where the host mounts the run's output folder inside the plugin
/// (read-only, its only preopened directory).
pub const OUTPUT_ROOT: &str = "/output";

/// A regular file of the run's output folder, as the host listed and hashed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputFile {
    /// Relative to the output folder, `/`-separated, never `..`.
    pub path: String,
    /// Bytes.
    pub size: u64,
    /// sha256 of the content, 64 lowercase hex digits.
    pub sha256: String,
}

/// The run being judged: the host's record of it and the files of its
/// output folder, which [`Run::open`], [`Run::read`] and
/// [`Run::read_to_string`] read by relative path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    /// The task's id.
    pub task: i64,
    /// The run's id (each attempt is a run).
    pub run: i64,
    /// 1 for the first attempt.
    pub attempt: u32,
    /// The task's name.
    pub name: String,
    /// The task's project.
    pub project: String,
    /// The exit status (always `Some(0)` today: only runs that exited 0 are
    /// validated).
    pub exit_code: Option<i32>,
    /// The class the host gave the run's end (`ok` today).
    pub class: String,
    /// From start to end, in milliseconds.
    pub duration: u64,
    /// The output folder's regular files, sorted by path (symbolic links and
    /// other kinds are not listed), at most the host's cap.
    pub files: Vec<OutputFile>,
    /// Files left out of `files` because the folder held more than the cap.
    pub files_omitted: u32,
    /// The last lines of the run's stderr (at most 4 KiB).
    pub stderr_tail: String,
    /// Where the output folder is: [`OUTPUT_ROOT`] on wasm, a test's folder
    /// natively.
    pub(crate) root: PathBuf,
}

impl Run {
    /// The run as the host sent it, its folder at [`OUTPUT_ROOT`].
    pub(crate) fn from_abi(run: abi::Run) -> Run {
        Run {
            task: run.task,
            run: run.run,
            attempt: run.attempt,
            name: run.name,
            project: run.project,
            exit_code: run.exit_code,
            class: run.class,
            duration: run.duration,
            files: run
                .files
                .into_iter()
                .map(|f| OutputFile {
                    path: f.path,
                    size: f.size,
                    sha256: f.sha256,
                })
                .collect(),
            files_omitted: run.files_omitted,
            stderr_tail: run.stderr_tail,
            root: PathBuf::from(OUTPUT_ROOT),
        }
    }

    /// The folder the output files are read from.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The listed file at `path` (relative, as in [`Run::files`]), if the
    /// host listed one.
    pub fn file(&self, path: &str) -> Option<&OutputFile> {
        self.files.iter().find(|f| f.path == path)
    }

    /// Where the file at the relative `path` is (under [`Run::root`]).
    /// Refuses an absolute path and one with `..` with
    /// [`io::ErrorKind::InvalidInput`]: a validator reads its output folder
    /// only.
    pub fn path_of(&self, path: &str) -> io::Result<PathBuf> {
        let rel = Path::new(path);
        let plain = rel
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
        if path.is_empty() || !plain {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("`{path}` is not a path relative to the output folder"),
            ));
        }
        Ok(self.root.join(rel))
    }

    /// Opens the file at the relative `path` for reading (stream a large
    /// file from it rather than reading it whole).
    pub fn open(&self, path: &str) -> io::Result<File> {
        File::open(self.path_of(path)?)
    }

    /// Reads the whole file at the relative `path`, refusing one of more
    /// than `limit` bytes with [`io::ErrorKind::FileTooLarge`] before
    /// reading it (a validator runs under a memory cap).
    pub fn read(&self, path: &str, limit: u64) -> io::Result<Vec<u8>> {
        let file = self.open(path)?;
        let too_large = |size: u64| {
            io::Error::new(
                io::ErrorKind::FileTooLarge,
                format!("{size} bytes, over the limit of {limit}"),
            )
        };
        if let Ok(meta) = file.metadata()
            && meta.len() > limit
        {
            return Err(too_large(meta.len()));
        }
        let mut out = Vec::new();
        file.take(limit.saturating_add(1)).read_to_end(&mut out)?;
        if out.len() as u64 > limit {
            return Err(too_large(out.len() as u64));
        }
        Ok(out)
    }

    /// Reads the whole file at the relative `path` as UTF-8 text, with
    /// [`Run::read`]'s `limit`; text that is not UTF-8 is
    /// [`io::ErrorKind::InvalidData`].
    pub fn read_to_string(&self, path: &str, limit: u64) -> io::Result<String> {
        String::from_utf8(self.read(path, limit)?)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not valid UTF-8 text"))
    }
}
