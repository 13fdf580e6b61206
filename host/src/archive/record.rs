//! `archive.json`, the archive's own record (which daemon and run it is,
//! every file's hash), and how a try tells its own archive under a final
//! name from anything else there.

use std::path::Path;

use cap_std::fs::Dir;
use serde::{Deserialize, Serialize};

use super::{OUTPUTS, Origin, RECORD, Request, copy};
use nightjar_core::api::outputs::OutputFile;

/// Longest `archive.json` read back when looking for our own archive.
const MAX_RECORD: u64 = 256 << 20;

/// `archive.json`.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Record {
    /// `nightjar.archive.v1`.
    pub format: String,
    /// Whose archive it is.
    pub origin: Origin,
    /// Every file in it, relative to it, with its hash.
    pub files: Vec<OutputFile>,
}

/// The archive at `rel` when it is this run's and complete: a real folder
/// whose `archive.json` names `req`'s origin, lists every output of the
/// run's manifest with its hash, and whose every file reads back as
/// recorded. (files, bytes) then. An `archive.json` alone, crafted or left
/// by a damaged copy, is not taken for an archive.
pub(super) fn ours(root: &Dir, rel: &Path, req: &Request<'_>) -> Option<(usize, u64)> {
    use std::io::Read;
    if !root.symlink_metadata(rel).ok()?.is_dir() {
        return None;
    }
    let dir = root.open_dir(rel).ok()?;
    let mut text = Vec::new();
    dir.open(RECORD)
        .ok()?
        .take(MAX_RECORD)
        .read_to_end(&mut text)
        .ok()?;
    let record = serde_json::from_slice::<Record>(&text).ok()?;
    if record.origin != req.origin {
        return None;
    }
    if let Some(m) = req.outputs.filter(|m| m.note.is_none()) {
        let held: std::collections::HashSet<(&str, &str, u64)> = record
            .files
            .iter()
            .map(|f| (f.path.as_str(), f.sha256.as_str(), f.size))
            .collect();
        let all = m.files.iter().all(|f| {
            let path = format!("{OUTPUTS}/{}", f.path);
            held.contains(&(path.as_str(), f.sha256.as_str(), f.size))
        });
        if !all {
            return None;
        }
    }
    let mut buf = vec![0u8; 256 << 10];
    for f in &record.files {
        copy::read_back(&dir, Path::new(&f.path), f, &mut buf).ok()?;
    }
    Some((
        record.files.len(),
        record.files.iter().map(|f| f.size).sum(),
    ))
}
