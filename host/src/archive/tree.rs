//! Copying a run's output folder into the archive's partial folder: the
//! files its output manifest lists, each read no further than its listed
//! size (a file still growing is a mismatch, never an endless copy) and
//! matched with its listed hash. Names are copied byte for byte (two
//! names that read the same once made valid UTF-8 stay two files), links
//! are never followed, and the archive root is never copied into itself
//! (an output folder that holds it skips it). Files the manifest does not
//! list are copied only when it could not list them all (past its cap).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use cap_std::fs::{Dir, MetadataExt};

use super::Failure;
use super::copy::{Written, grew, open_source, stream};
use crate::sandbox::files::RunAs;
use nightjar_core::api::outputs::{ArchiveFailure, OutputManifest};

/// Folder depth copied at most (as the output manifest's walk).
const MAX_DEPTH: usize = 32;

/// Copy buffer.
const BUF: usize = 256 << 10;

/// The manifest's files, each matched at most once.
struct Listed<'a> {
    m: Option<&'a OutputManifest>,
    used: Vec<bool>,
}

impl Listed<'_> {
    /// The indexes of the listed files at `path` (several when names that
    /// differ only in bytes that are not UTF-8 read the same).
    fn at(&self, path: &str) -> std::ops::Range<usize> {
        let Some(m) = self.m else { return 0..0 };
        let start = m.files.partition_point(|f| f.path.as_str() < path);
        let end = m.files.partition_point(|f| f.path.as_str() <= path);
        start..end
    }
}

/// The output folder copied: its descriptor and whom it belongs to (a file
/// in it that they could not read is refused, the kernel asked as them:
/// mode bits, ACLs and all).
pub struct Source<'a> {
    /// The folder, opened by [`open_output`].
    pub dir: Dir,
    /// The task's owner (none: the daemon's own user).
    pub owner: Option<&'a RunAs>,
    /// Asks the kernel, as the owner, about each open file.
    pub check: &'a crate::privsep::access::ReadCheck<'a>,
}

/// One folder waiting its turn: (the folder holding it, its name there,
/// its path for people + "/", its path as bytes, its depth).
type Waiting = (Rc<Dir>, OsString, String, PathBuf, usize);

/// Copies the files of `src` that `expect` lists (all files when there is
/// no manifest, or it omitted some) into `dst` under `prefix` (a folder
/// made here). A folder that is `skip` (the archive root: device and inode)
/// is not entered. `after_first` is called once, after the first file.
pub fn tree(
    src: Source<'_>,
    dst: &Dir,
    prefix: &str,
    expect: Option<&OutputManifest>,
    skip: (u64, u64),
    after_first: &mut dyn FnMut(),
    w: &mut Written,
) -> Result<(), Failure> {
    let mkdir = |rel: &Path, w: &mut Written| {
        dst.create_dir(rel).map_err(|e| {
            Failure::io(format!("cannot create {} in the archive", rel.display()), e)
        })?;
        w.dirs.push(rel.to_path_buf());
        Ok::<(), Failure>(())
    };
    let prefix = PathBuf::from(prefix);
    mkdir(&prefix, w)?;
    let mut listed = Listed {
        m: expect,
        used: vec![false; expect.map_or(0, |m| m.files.len())],
    };
    let copy_unlisted = expect.is_none_or(|m| m.omitted > 0);
    let mut skipped: Vec<String> = Vec::new();
    let mut buf = vec![0u8; BUF];
    let mut stack: Vec<Waiting> = Vec::new();
    let owner = src.owner;
    let src_check = src.check;
    let mut next = Some((Rc::new(src.dir), String::new(), PathBuf::new(), 0usize));
    let read_err = |what: &str, e| Failure::io(format!("cannot read the output folder{what}"), e);
    while let Some((dir, sub, raw_sub, depth)) = next.take() {
        for entry in dir.entries().map_err(|e| read_err("", e))? {
            let entry = entry.map_err(|e| read_err("", e))?;
            let name = entry.file_name();
            let path = format!("{sub}{}", name.to_string_lossy());
            let raw = raw_sub.join(&name);
            let kind = entry.file_type().map_err(|e| read_err("", e))?;
            if kind.is_dir() {
                let meta = entry
                    .metadata()
                    .map_err(|e| read_err(&format!(" ({path})"), e))?;
                if (meta.dev(), meta.ino()) == skip {
                    skipped.push(format!("{path}/"));
                } else if depth + 1 < MAX_DEPTH {
                    mkdir(&prefix.join(&raw), w)?;
                    stack.push((Rc::clone(&dir), name, format!("{path}/"), raw, depth + 1));
                }
                continue;
            }
            if !kind.is_file() {
                continue; // links, sockets, FIFOs: not in the manifest either
            }
            let range = listed.at(&path);
            if range.is_empty() && !copy_unlisted {
                continue; // not what the run made
            }
            let mut file =
                open_source(&dir, name.as_ref()).map_err(|e| read_err(&format!(" ({path})"), e))?;
            if let Some(who) = owner {
                let readable = src_check
                    .may_read(&file)
                    .map_err(|e| Failure::new(ArchiveFailure::Error, format!("{path}: {e}")))?;
                if !readable {
                    return Err(Failure::new(
                        ArchiveFailure::Mismatch,
                        format!(
                            "{path} of the output folder is not readable by the task's owner {} (a hard link to another's file?): not archived",
                            who.name
                        ),
                    ));
                }
            }
            let limit = match listed.m {
                Some(m) if !range.is_empty() => m.files[range.clone()]
                    .iter()
                    .map(|f| f.size)
                    .max()
                    .unwrap_or(0),
                _ => file
                    .metadata()
                    .map_err(|e| read_err(&format!(" ({path})"), e))?
                    .len(),
            };
            let at = prefix.join(&raw);
            let mut copied = stream(&mut file, dst, &at, limit, &mut buf)?;
            let now = if copied.size > limit {
                format!("more than {limit} bytes")
            } else {
                format!("{} bytes, sha256 {}", copied.size, copied.sha256)
            };
            if range.is_empty() && copied.size > limit {
                return Err(grew(&path, limit));
            }
            if let Some(m) = listed.m
                && !range.is_empty()
            {
                let matched = range.clone().find(|&i| {
                    !listed.used[i]
                        && m.files[i].sha256 == copied.sha256
                        && m.files[i].size == copied.size
                });
                let Some(i) = matched else {
                    let then = &m.files[range.start];
                    return Err(Failure::new(
                        ArchiveFailure::Mismatch,
                        format!(
                            "output {path} changed since the run ended ({} bytes, sha256 {} then; {now} now); the archive holds only what the run made",
                            then.size, then.sha256
                        ),
                    ));
                };
                listed.used[i] = true;
            }
            copied.path = format!("{}/{path}", prefix.display());
            w.push(at, copied);
            if w.files.len() == 1 {
                after_first();
            }
        }
        drop(dir);
        if let Some((parent, name, sub, raw_sub, depth)) = stack.pop() {
            let opened = parent
                .open_dir(&name)
                .map_err(|e| read_err(&format!(" ({sub})"), e))?;
            next = Some((Rc::new(opened), sub, raw_sub, depth));
        }
    }
    gone(&listed, &skipped)
}

/// A mismatch when a listed file was not found (outside a skipped folder).
fn gone(listed: &Listed<'_>, skipped: &[String]) -> Result<(), Failure> {
    let Some(m) = listed.m else { return Ok(()) };
    let gone: Vec<&str> = m
        .files
        .iter()
        .zip(&listed.used)
        .filter(|(f, used)| !**used && !skipped.iter().any(|s| f.path.starts_with(s.as_str())))
        .map(|(f, _)| f.path.as_str())
        .collect();
    if gone.is_empty() {
        return Ok(());
    }
    Err(Failure::new(
        ArchiveFailure::Mismatch,
        format!(
            "{} output file(s) of the run are gone from its output folder ({}); the archive would be incomplete",
            gone.len(),
            gone.iter().take(5).copied().collect::<Vec<_>>().join(", ")
        ),
    ))
}

/// The output folder `path`, opened once, as its owner `who`, and only
/// when it is a real folder (no link on its way): the archive never
/// follows a link out, nor reaches a folder its owner could not.
pub fn open_output(path: &Path, who: Option<&RunAs>) -> Result<Dir, String> {
    crate::privsep::as_owner(who, |_| crate::privsep::open::real_dir(path))?
}
