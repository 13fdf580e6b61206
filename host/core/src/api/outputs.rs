//! What a run left behind: its output manifest (every regular file of its
//! output folder with size and sha256, hashed after validation), where its
//! archive stands, and whether retention has removed the local copy.
//! `show` prints them, `show --json` carries them, `diff` compares them.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The format name written into every output manifest.
pub const FORMAT: &str = "nightjar.outputs.v1";

/// The file name of a run's output manifest in its run folder (and in its archive).
pub const FILE: &str = "outputs.json";

/// One regular file of an output folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct OutputFile {
    /// Relative to the output folder, `/`-separated.
    pub path: String,
    /// Bytes.
    pub size: u64,
    /// sha256, lowercase hex.
    pub sha256: String,
}

/// A run's outputs as hashed when it ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct OutputManifest {
    /// [`FORMAT`].
    pub format: String,
    /// The run.
    pub run: i64,
    /// The output folder.
    pub folder: PathBuf,
    /// When the files were hashed (Unix ms).
    pub captured_at: i64,
    /// Regular files, sorted by path (at most a fixed number; see `omitted`).
    pub files: Vec<OutputFile>,
    /// Regular files past the listing cap: counted, not hashed.
    #[serde(default)]
    pub omitted: u32,
    /// Entries that are not regular files or folders (symbolic links, sockets), never followed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
    /// Why the folder could not be hashed (gone, not a folder, unreadable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl OutputManifest {
    /// Bytes in the listed files.
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }

    /// The listed file at `path`.
    pub fn file(&self, path: &str) -> Option<&OutputFile> {
        self.files
            .binary_search_by(|f| f.path.as_str().cmp(path))
            .ok()
            .map(|i| &self.files[i])
    }
}

/// Where a run's archive stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum ArchiveState {
    /// Not yet verified: waiting for its turn, or for its next try after a failure.
    Pending,
    /// Copied, flushed, read back against the manifest, and under its final name.
    Done,
}

impl ArchiveState {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            ArchiveState::Pending => "pending",
            ArchiveState::Done => "done",
        }
    }

    /// From the stored name.
    pub fn parse(s: &str) -> Option<ArchiveState> {
        match s {
            "pending" => Some(ArchiveState::Pending),
            "done" => Some(ArchiveState::Done),
            _ => None,
        }
    }
}

/// What went wrong with an archive, as its own class (retried on a schedule).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum ArchiveFailure {
    /// The archive root is missing, not a folder, or not a mount point when one is required.
    Unreachable,
    /// The archive's file system is full (or over quota).
    Full,
    /// A file read back differs from what was copied, or an output changed since the run ended.
    Mismatch,
    /// Anything else (permissions, I/O errors).
    Error,
}

impl ArchiveFailure {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            ArchiveFailure::Unreachable => "unreachable",
            ArchiveFailure::Full => "full",
            ArchiveFailure::Mismatch => "mismatch",
            ArchiveFailure::Error => "error",
        }
    }

    /// From the stored name.
    pub fn parse(s: &str) -> Option<ArchiveFailure> {
        Some(match s {
            "unreachable" => ArchiveFailure::Unreachable,
            "full" => ArchiveFailure::Full,
            "mismatch" => ArchiveFailure::Mismatch,
            "error" => ArchiveFailure::Error,
            _ => return None,
        })
    }
}

/// A run's archive as `show` prints it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ArchiveView {
    /// The archive root it goes to.
    pub root: PathBuf,
    /// Pending or done.
    pub state: ArchiveState,
    /// The final folder, once done.
    pub path: Option<PathBuf>,
    /// Tries so far.
    pub attempts: u32,
    /// When the next try is due (pending only, Unix ms).
    pub next_at: Option<i64>,
    /// The last failure's class.
    pub failure: Option<ArchiveFailure>,
    /// The last failure, said for a person.
    pub error: Option<String>,
    /// When it was verified (Unix ms).
    pub done_at: Option<i64>,
}

/// What became of a run's local outputs and scratch.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RunOutputs {
    /// The output manifest (absent: the run had no output folder, or ended
    /// before nightjar 0.3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest: Option<OutputManifest>,
    /// The archive (absent: none configured for the run's project, or the run did not succeed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive: Option<ArchiveView>,
    /// When retention removed the local outputs and scratch (Unix ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removed_at: Option<i64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_found_by_path_in_the_sorted_listing() {
        let f = |p: &str, size| OutputFile {
            path: p.into(),
            size,
            sha256: "x".into(),
        };
        let m = OutputManifest {
            format: FORMAT.into(),
            run: 1,
            folder: "/o".into(),
            captured_at: 0,
            files: vec![f("a", 1), f("b/c", 2), f("d", 3)],
            omitted: 0,
            skipped: vec![],
            note: None,
        };
        assert_eq!(m.file("b/c").map(|f| f.size), Some(2));
        assert!(m.file("b").is_none());
        assert_eq!(m.bytes(), 6);
    }

    #[test]
    fn archive_names_round_trip_and_unknown_ones_are_refused() {
        for s in [ArchiveState::Pending, ArchiveState::Done] {
            assert_eq!(ArchiveState::parse(s.as_str()), Some(s));
        }
        for f in [
            ArchiveFailure::Unreachable,
            ArchiveFailure::Full,
            ArchiveFailure::Mismatch,
            ArchiveFailure::Error,
        ] {
            assert_eq!(ArchiveFailure::parse(f.as_str()), Some(f));
        }
        assert_eq!(ArchiveState::parse("copying"), None);
        assert_eq!(ArchiveFailure::parse("gone"), None);
    }
}
