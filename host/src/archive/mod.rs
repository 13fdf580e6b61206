//! The atomic, verified archive of a succeeded run: its outputs, manifests
//! and logs copied into `<root>/.partial/<name>`, flushed (fsync of files
//! and folders), read back against the hashes taken while copying (and
//! the outputs against the run's output manifest), then renamed to
//! `<project>/<task-name>/<date>_<task id>_<run id>` with a rename that
//! never replaces anything. An interruption at any step leaves nothing
//! under a final name; the next try finds its own archive (by
//! `archive.json`'s origin) or starts over. Every file operation on the
//! root goes through a cap-std `Dir` on it.

mod copy;
pub mod name;
mod record;
mod settle;
mod tree;

use record::{Record, ours};

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::privsep::remove::remove_tree;
use cap_std::fs::Dir;
use serde::{Deserialize, Serialize};

use nightjar_core::api::manifest::FILE as MANIFEST_FILE;
use nightjar_core::api::outputs::{ArchiveFailure, FILE as OUTPUTS_FILE, OutputManifest};
use nightjar_core::runlog::{STDERR, STDOUT};

/// The folder partial archives are built in, under the root.
pub const PARTIAL: &str = ".partial";

/// The archive's own record (origin and every file's hash), written last.
pub const RECORD: &str = "archive.json";

/// The archive's logs, packed.
pub const LOGS: &str = "logs.tar.gz";

/// The folder the outputs go in, inside an archive.
pub const OUTPUTS: &str = "outputs";

/// Candidate final names tried before giving up (`_2`, `_3`, ...).
const MAX_CANDIDATES: u32 = 50;

/// The steps, in order (the test hook pauses after each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Copying (paused after the first file).
    Copy,
    /// Everything copied and flushed.
    Fsync,
    /// Everything read back and matched.
    Verify,
    /// Renamed to the final name, not yet recorded.
    Rename,
}

impl Step {
    /// From the test hook's name.
    pub fn parse(s: &str) -> Option<Step> {
        Some(match s {
            "copy" => Step::Copy,
            "fsync" => Step::Fsync,
            "verify" => Step::Verify,
            "rename" => Step::Rename,
            _ => return None,
        })
    }
}

/// Which daemon and run an archive belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    /// Host name.
    pub host: String,
    /// The daemon's state dir.
    pub state_dir: String,
    /// Task id.
    pub task: i64,
    /// Run id.
    pub run: i64,
    /// When the run started (Unix ms): a reused state dir does not confuse runs.
    pub started_at: i64,
}

/// A failed try, with its class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// Its class.
    pub class: ArchiveFailure,
    /// What happened, for a person.
    pub message: String,
}

impl Failure {
    /// A failure of `class`.
    pub fn new(class: ArchiveFailure, message: String) -> Failure {
        Failure { class, message }
    }

    /// An I/O error while doing `what`, classed by its errno.
    pub fn io(what: String, e: std::io::Error) -> Failure {
        let class = match e.raw_os_error() {
            Some(libc::ENOSPC | libc::EDQUOT) => ArchiveFailure::Full,
            Some(
                libc::ESTALE
                | libc::ENOTCONN
                | libc::EHOSTDOWN
                | libc::EHOSTUNREACH
                | libc::ETIMEDOUT,
            ) => ArchiveFailure::Unreachable,
            _ => ArchiveFailure::Error,
        };
        Failure::new(class, format!("{what}: {e}"))
    }
}

/// What to archive and where.
#[derive(Debug)]
pub struct Request<'a> {
    /// The archive root.
    pub root: &'a Path,
    /// Refuse a root that is not a mount point.
    pub require_mount: bool,
    /// The run's project and task name.
    pub project: &'a str,
    /// The task's name.
    pub name: &'a str,
    /// The run's end date (`2026-11-30`, the daemon's zone).
    pub date: &'a str,
    /// Whose it is.
    pub origin: Origin,
    /// The run folder (logs, manifest.json, outputs.json).
    pub run_dir: &'a Path,
    /// The output folder, if the run had one.
    pub output: Option<&'a Path>,
    /// The run's output manifest.
    pub outputs: Option<&'a OutputManifest>,
    /// The task's owner: the output folder is opened as them, and a file in
    /// it that they could not read (a hard link to another's) is refused.
    pub owner: Option<&'a crate::sandbox::files::RunAs>,
}

/// A verified archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Done {
    /// Its final folder, relative to the root.
    pub path: PathBuf,
    /// Files in it.
    pub files: usize,
    /// Bytes in them.
    pub bytes: u64,
    /// It was already there (an earlier try was interrupted after its rename).
    pub found: bool,
}

/// Opens the root, checking it is a folder (and a mount point when asked).
fn open_root(root: &Path, require_mount: bool) -> Result<Dir, Failure> {
    let unreachable = |m: String| Failure::new(ArchiveFailure::Unreachable, m);
    let meta = std::fs::metadata(root).map_err(|e| {
        unreachable(format!(
            "archive root {}: {e}; is the NAS mounted?",
            root.display()
        ))
    })?;
    if !meta.is_dir() {
        return Err(unreachable(format!(
            "archive root {} is not a folder",
            root.display()
        )));
    }
    if require_mount {
        let parent = std::fs::metadata(root.join(".."))
            .map_err(|e| unreachable(format!("archive root {}: {e}", root.display())))?;
        if parent.dev() == meta.dev() && parent.ino() != meta.ino() {
            return Err(unreachable(format!(
                "archive root {} is not a mount point (`archive.require_mount`); is the NAS mounted?",
                root.display()
            )));
        }
    }
    Dir::open_ambient_dir(root, cap_std::ambient_authority())
        .map_err(|e| Failure::io(format!("cannot open archive root {}", root.display()), e))
}

/// Archives one run; `pause` is called after each step (the tests' hook).
pub fn archive(req: &Request<'_>, pause: &mut dyn FnMut(Step)) -> Result<Done, Failure> {
    let root = open_root(req.root, req.require_mount)?;
    let o = &req.origin;
    // An earlier try that got as far as its rename is found by its origin.
    let mut free = None;
    for n in 1..=MAX_CANDIDATES {
        let rel = name::final_rel(req.project, req.name, req.date, o.task, o.run, n);
        match root.symlink_metadata(&rel) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                free = Some(n);
                break;
            }
            Err(e) => return Err(Failure::io(format!("cannot look at {}", rel.display()), e)),
            Ok(_) => {
                if let Some((files, bytes)) = ours(&root, &rel, req) {
                    if let Ok(partials) = root.open_dir(PARTIAL) {
                        let _ = remove_tree(&partials, Path::new(&partial(req)));
                    }
                    return Ok(Done {
                        path: rel,
                        files,
                        bytes,
                        found: true,
                    });
                }
            }
        }
    }
    let Some(first_free) = free else {
        return Err(Failure::new(
            ArchiveFailure::Error,
            format!(
                "{MAX_CANDIDATES} archives of this run's name already exist and none is this run's"
            ),
        ));
    };
    root.create_dir_all(PARTIAL)
        .map_err(|e| Failure::io(format!("cannot create {PARTIAL} in the archive root"), e))?;
    let partials = root
        .open_dir(PARTIAL)
        .map_err(|e| Failure::io(format!("cannot open {PARTIAL}"), e))?;
    let pname = partial(req);
    match remove_tree(&partials, Path::new(&pname)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(Failure::io(
                format!("cannot remove the earlier try {PARTIAL}/{pname}"),
                e,
            ));
        }
        _ => {}
    }
    let meta = root
        .dir_metadata()
        .map_err(|e| Failure::io("cannot look at the archive root".into(), e))?;
    let root_id = (
        cap_std::fs::MetadataExt::dev(&meta),
        cap_std::fs::MetadataExt::ino(&meta),
    );
    let result = build(req, &root, root_id, &partials, &pname, first_free, pause);
    if result.is_err() {
        // A full archive gets its room back; the local outputs are untouched.
        let _ = remove_tree(&partials, Path::new(&pname));
    }
    result
}

fn partial(req: &Request<'_>) -> String {
    name::partial_name(&req.origin.host, &req.origin.state_dir, req.origin.run)
}

/// Copy, flush, verify, rename (from a fresh partial folder).
fn build(
    req: &Request<'_>,
    root: &Dir,
    root_id: (u64, u64),
    partials: &Dir,
    pname: &str,
    first_free: u32,
    pause: &mut dyn FnMut(Step),
) -> Result<Done, Failure> {
    partials
        .create_dir(pname)
        .map_err(|e| Failure::io(format!("cannot create {PARTIAL}/{pname}"), e))?;
    let dst = partials
        .open_dir(pname)
        .map_err(|e| Failure::io(format!("cannot open {PARTIAL}/{pname}"), e))?;
    let mut w = copy::Written::default();
    let mut paused_copy = false;
    let mut after_first = || {
        if !paused_copy {
            paused_copy = true;
            pause(Step::Copy);
        }
    };
    // An output folder that could not be hashed when the run ended (a
    // link, gone) has nothing the run is known to have made: not copied.
    if let Some(output) = req.output
        && req.outputs.is_none_or(|m| m.note.is_none())
    {
        let src = tree::open_output(output, req.owner).map_err(|e| {
            Failure::new(
                ArchiveFailure::Mismatch,
                format!("the output folder is not the real folder the run wrote: {e}"),
            )
        })?;
        crate::privsep::access::with_read_check(req.owner, |check| {
            tree::tree(
                tree::Source {
                    dir: src,
                    owner: req.owner,
                    check,
                },
                &dst,
                OUTPUTS,
                req.outputs,
                root_id,
                &mut after_first,
                &mut w,
            )
        })
        .map_err(|e| Failure::new(ArchiveFailure::Error, e))??;
    }
    let run_dir =
        Dir::open_ambient_dir(req.run_dir, cap_std::ambient_authority()).map_err(|e| {
            Failure::io(
                format!("cannot open the run folder {}", req.run_dir.display()),
                e,
            )
        })?;
    copy::file(&run_dir, MANIFEST_FILE, &dst, MANIFEST_FILE, &mut w)?;
    if !copy::file(&run_dir, OUTPUTS_FILE, &dst, OUTPUTS_FILE, &mut w)?
        && let Some(m) = req.outputs
    {
        let bytes = serde_json::to_vec_pretty(m)
            .map_err(|e| Failure::new(ArchiveFailure::Error, e.to_string()))?;
        copy::bytes(&dst, OUTPUTS_FILE, &bytes, &mut w)?;
    }
    let logs = [STDOUT, STDERR, crate::sandbox::files::SUPERVISOR_LOG];
    copy::logs_tar_gz(&run_dir, &logs, &dst, LOGS, &mut w)?;
    let record = Record {
        format: "nightjar.archive.v1".into(),
        origin: req.origin.clone(),
        files: w.files.clone(),
    };
    let text = serde_json::to_vec_pretty(&record)
        .map_err(|e| Failure::new(ArchiveFailure::Error, e.to_string()))?;
    copy::bytes(&dst, RECORD, &text, &mut w)?;
    after_first(); // a run with no outputs still pauses once at the copy step
    copy::flush(&dst, &w)?;
    pause(Step::Fsync);
    copy::verify(&dst, &w)?;
    pause(Step::Verify);
    let (files, bytes) = (w.files.len(), w.bytes());
    for n in first_free..=MAX_CANDIDATES {
        let rel = name::final_rel(
            req.project,
            req.name,
            req.date,
            req.origin.task,
            req.origin.run,
            n,
        );
        let (Some(parent), Some(leaf)) = (rel.parent(), rel.file_name()) else {
            return Err(Failure::new(
                ArchiveFailure::Error,
                format!("bad archive name {}", rel.display()),
            ));
        };
        root.create_dir_all(parent).map_err(|e| {
            Failure::io(
                format!("cannot create {} in the archive root", parent.display()),
                e,
            )
        })?;
        let parent_dir = root
            .open_dir(parent)
            .map_err(|e| Failure::io(format!("cannot open {}", parent.display()), e))?;
        match copy::rename_noreplace(partials, pname, &parent_dir, &leaf.to_string_lossy()) {
            Ok(()) => {
                copy::fsync_dir(&parent_dir)
                    .and_then(|()| copy::fsync_dir(partials))
                    .map_err(|e| {
                        Failure::io("cannot flush the renamed archive's folder".into(), e)
                    })?;
                pause(Step::Rename);
                return Ok(Done {
                    path: rel,
                    files,
                    bytes,
                    found: false,
                });
            }
            Err(e) if matches!(e.raw_os_error(), Some(libc::EEXIST | libc::ENOTEMPTY)) => continue,
            Err(e) => {
                return Err(Failure::io(
                    format!("cannot rename the archive to {}", rel.display()),
                    e,
                ));
            }
        }
    }
    Err(Failure::new(
        ArchiveFailure::Error,
        format!(
            "{MAX_CANDIDATES} archives of this run's name already exist and none is this run's"
        ),
    ))
}
