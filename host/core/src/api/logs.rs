//! `logs`: a run's output read through the daemon, which checks that the
//! caller may see it (its owner, an administrator, or anyone when
//! `users.share_details` is on). The bytes travel base64: a log is any
//! bytes, and `logs` prints them as they were written.

use base64::Engine;
use serde::{Deserialize, Serialize};

pub use crate::runlog_read::LogCursor;

/// Most bytes one `logs` reply carries; a reader asks again for more.
pub const MAX_CHUNK: usize = 1024 * 1024;

/// `logs ID`: the next bytes of one stream of one run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Logs {
    /// Task id.
    pub id: i64,
    /// Attempt number (none: the latest).
    #[serde(default)]
    pub attempt: Option<i64>,
    /// Standard error instead of standard output.
    #[serde(default)]
    pub stderr: bool,
    /// Where the last reply left off (none: from the beginning).
    #[serde(default)]
    pub cursor: Option<LogCursor>,
    /// Without a cursor: only the last this many bytes (at most a chunk),
    /// as the dashboard's stderr tail asks. Added in protocol 2 (an older
    /// daemon ignores it and reads from the beginning).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail: Option<u64>,
}

/// Some bytes of a run's log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LogChunk {
    /// The run read.
    pub run: i64,
    /// Its attempt number.
    pub attempt: i64,
    /// The run still runs: more may come.
    pub running: bool,
    /// The bytes, base64 (standard alphabet, padded); see [`LogChunk::bytes`].
    pub data: String,
    /// Where the next read starts.
    pub cursor: LogCursor,
    /// Bytes before `data` were rotated away unread (the log keeps `sandbox.log_cap`).
    pub missed: bool,
    /// The uid of the task's owner (the client escapes control characters
    /// of logs not the reader's own even under `--raw` on a terminal).
    /// Added in protocol 2; absent from older daemons.
    #[serde(default)]
    pub owner_uid: Option<u32>,
}

impl LogChunk {
    /// A chunk of `bytes`.
    pub fn new(
        run: i64,
        attempt: i64,
        running: bool,
        bytes: &[u8],
        cursor: LogCursor,
        missed: bool,
    ) -> LogChunk {
        LogChunk {
            run,
            attempt,
            running,
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
            cursor,
            missed,
            owner_uid: None,
        }
    }

    /// The bytes (a daemon that sends bad base64 gives none).
    pub fn bytes(&self) -> Vec<u8> {
        base64::engine::general_purpose::STANDARD
            .decode(&self.data)
            .unwrap_or_default()
    }
}
