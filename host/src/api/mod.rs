//! The daemon's API: newline-delimited JSON over a unix socket (mode 0600).
//! One request line, one reply line. The same request types will back the
//! dashboard's HTTP routes later.

pub mod client;
pub mod listen;
pub mod server;
pub mod why;

/// Longest request line the daemon reads (1 MiB); a longer one is refused
/// and the connection closed.
pub const MAX_REQUEST: usize = 1024 * 1024;

use serde::{Deserialize, Serialize};

use crate::store::ListFilter;
use crate::task::model::NewEntry;

/// A request to the daemon.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "verb", rename_all = "kebab-case")]
pub enum Request {
    /// Is the daemon there? Replies with its pid and version.
    Ping,
    /// Queue a checked submission; replies with one id per entry.
    Submit {
        /// The entries, all or nothing.
        entries: Vec<NewEntry>,
    },
    /// Tasks for `ls`.
    List {
        /// Which ones.
        filter: ListFilter,
    },
    /// One task in full.
    Show {
        /// Task id.
        id: i64,
    },
    /// Cancel a task, array or recurring template.
    Cancel {
        /// Task id.
        id: i64,
    },
    /// Keep waiting tasks from starting.
    Hold {
        /// Task id.
        id: i64,
    },
    /// Let held tasks start.
    Release {
        /// Task id.
        id: i64,
    },
    /// Queue failed, cancelled or blocked tasks again.
    Retry {
        /// Task id.
        id: i64,
    },
    /// Why a task waits, or where and why it started.
    Why {
        /// Task id.
        id: i64,
    },
    /// Every GPU: readings, reservations, health and tasks.
    Gpus,
    /// The policy chain's members and their states.
    Plugins,
    /// Reload the chain's plugin files; replies with what changed.
    PluginsReload,
    /// Delete ended tasks older than `[retention]` says, with their runs,
    /// events and folders; replies with what was (or would be) removed.
    Gc {
        /// Only count.
        #[serde(default)]
        dry_run: bool,
    },
    /// Reply once every task named has ended (or is blocked).
    Wait {
        /// Task ids (an array id waits for all members).
        ids: Vec<i64>,
    },
}

/// A reply: exactly one of `ok` and `error` is set.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Reply {
    /// The result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ok: Option<serde_json::Value>,
    /// What went wrong, for a person.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// How one waited-for task ended.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WaitResult {
    /// Task id.
    pub id: i64,
    /// Final state.
    pub state: crate::store::TaskState,
    /// Class of the last run.
    pub class: Option<crate::store::RunClass>,
    /// Exit code of the last run.
    pub exit_code: Option<i32>,
    /// Signal of the last run.
    pub signal: Option<i32>,
}
