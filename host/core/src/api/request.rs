//! The requests, each a type of its own that names its reply type.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

pub use super::audit::{Audit, AuditRow, Priority};
pub use super::board::{FinishedRun, Queue, QueuePage, Runs};
pub use super::diff::{Diff, RunPair};
pub use super::forecast::{Forecast, ForecastReport};
pub use super::history::{RunTrace, TraceRows};
pub use super::logs::{LogChunk, LogCursor, Logs};
pub use super::notify::{
    DigestWritten, NotifyDigest, NotifyList, NotifyReport, NotifyRetry, NotifyTest, NotifyTestReply,
};
pub use super::plugin_verbs::{PluginList, PluginReload, ReloadChange, ReloadOutcome};
pub use super::report::{Accounting, Report};
pub use super::rerun::{Rerun, Rerunning};
pub use super::tokens::{NewToken, TokenCreate, TokenList, TokenRevoke, TokenRow};
use super::views::{GpuView, MemberView};
pub use super::wait::{Wait, WaitProgress, WaitResult};
use super::why::WhyReport;
use super::wire::{GcReport, ListFilter, TaskDetail, TaskRow, TaskState};
use crate::task::model::NewEntry;

/// A request that names its reply: `client.call(Show { id })` returns a
/// `TaskDetail`, and the daemon's handler for `Show` must produce one.
pub trait Call: Into<Request> {
    /// What the daemon answers.
    type Reply: Serialize + DeserializeOwned;
    /// The verb's wire name (its `verb` tag).
    const VERB: &'static str;
    /// Whether the request only reads: its reply reports nothing the daemon
    /// changed for it, so the daemon answers it without flushing its store
    /// first (`daemon/durable.rs`).
    const READS_ONLY: bool;
}

/// One verb of the protocol: its wire name (the `verb` tag, and the HTTP
/// route `POST /api/v2/{name}`), its request type and its reply type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VerbInfo {
    /// The `verb` tag on the wire (kebab-case).
    pub name: &'static str,
    /// The request type's name (the OpenAPI request schema).
    pub request: &'static str,
    /// The verb's earlier wire name, still understood (and routed over
    /// HTTP, marked deprecated), where the verb was renamed.
    pub was: Option<&'static str>,
    /// The reply type as written in the protocol (`Vec<TaskRow>`).
    pub reply: &'static str,
}

macro_rules! requests {
    (@reads reads) => { true };
    (@reads) => { false };
    (@was $was:literal) => { Some($was) };
    (@was) => { None };
    ($($(#[$doc:meta])* $verb:ident = $name:literal $((was $was:literal))? => $reply:ty $(, $reads:ident)?;)*) => {
        /// A request to the daemon, tagged by `verb`. A renamed verb's
        /// earlier name is read as the new one (protocol 2 keeps both).
        #[derive(Debug, Clone, Serialize, Deserialize)]
        #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
        #[serde(tag = "verb")]
        pub enum Request {
            $($(#[$doc])* #[serde(rename = $name $(, alias = $was)?)] $verb($verb),)*
        }

        /// Every verb, from the same list as [`Request`]: the HTTP API's
        /// routes and the OpenAPI file are checked against it, so a new
        /// verb cannot be left out of either.
        pub const VERBS: &[VerbInfo] = &[
            $(VerbInfo {
                name: $name,
                request: stringify!($verb),
                was: requests!(@was $($was)?),
                reply: stringify!($reply),
            },)*
        ];

        /// The protocol's JSON Schema (draft 2020-12), from these types:
        /// `request` is a request line (`{"v":2,"req":{"verb":...}}`),
        /// `replies` each verb's reply line (`{"v":2,"ok":...}` or an error
        /// with its `kind`), `$defs` every type they name. `nightjard
        /// protocol-schema` prints it; the Python client is checked against it.
        #[cfg(feature = "schema")]
        pub fn schema() -> serde_json::Value {
            let mut g = schemars::generate::SchemaSettings::draft2020_12().into_generator();
            let request = g.subschema_for::<super::RequestLine>();
            let mut replies = serde_json::Map::new();
            $(
                replies.insert(
                    $name.to_string(),
                    g.subschema_for::<super::ReplyLine<$reply>>().to_value(),
                );
            )*
            let defs = g.take_definitions(true);
            serde_json::json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "title": format!("nightjar protocol {}", super::PROTOCOL),
                "protocol": super::PROTOCOL,
                "request": request.to_value(),
                "replies": replies,
                "$defs": defs,
            })
        }

        impl Request {
            /// This request's verb (its `verb` tag).
            pub fn verb(&self) -> &'static str {
                match self {
                    $(Request::$verb(_) => $name,)*
                }
            }

            /// Whether the request only reads ([`Call::READS_ONLY`]).
            pub fn reads_only(&self) -> bool {
                match self {
                    $(Request::$verb(_) => <$verb as Call>::READS_ONLY,)*
                }
            }
        }
        $(
            impl From<$verb> for Request {
                fn from(r: $verb) -> Request {
                    Request::$verb(r)
                }
            }
            impl Call for $verb {
                type Reply = $reply;
                const VERB: &'static str = $name;
                const READS_ONLY: bool = requests!(@reads $($reads)?);
            }
        )*
    };
}

requests! {
    /// Is the daemon there?
    Ping = "ping" => Pong, reads;
    /// Queue a checked submission.
    Submit = "submit" => Vec<i64>;
    /// Tasks for `ls`.
    TaskList = "task-list" (was "list") => Vec<TaskRow>, reads;
    /// How many tasks `ls` would list, by state (the footer of a listing cut by its `limit`).
    TaskCount = "task-count" (was "list-count") => Vec<StateCount>, reads;
    /// One task in full.
    Show = "show" => TaskDetail, reads;
    /// A page of the waiting and running tasks, with the counts of all (the dashboard's queue).
    Queue = "queue" => QueuePage, reads;
    /// The runs that ended since a moment, newest first (the dashboard's `/runs`).
    Runs = "runs" => Vec<FinishedRun>, reads;
    /// Cancel a task, sweep or recurring template.
    Cancel = "cancel" => Cancelled;
    /// Keep waiting tasks from starting.
    Hold = "hold" => Changed;
    /// Let held tasks start.
    Release = "release" => Changed;
    /// Queue failed, cancelled or blocked tasks again.
    Retry = "retry" => Changed;
    /// Why a task waits, or where and why it started.
    Why = "why" => WhyReport, reads;
    /// When waiting tasks (or a submission not queued) are expected to start and end (`nightjar estimate`).
    Forecast = "forecast" => ForecastReport, reads;
    /// Every GPU: readings, reservations, health and tasks.
    GpuList = "gpu-list" (was "gpus") => Vec<GpuView>, reads;
    /// The policy chain's members and their states.
    PluginList = "plugin-list" (was "plugins") => Vec<MemberView>, reads;
    /// Reload the chain's plugin files.
    PluginReload = "plugin-reload" (was "plugins-reload") => Vec<ReloadChange>;
    /// Delete ended tasks older than `[retention]` says.
    Gc = "gc" => GcReport;
    /// Reply once every task named has ended (or is blocked).
    Wait = "wait" => Vec<WaitResult>, reads;
    /// How many of the tasks a `wait` names are in each state (`wait`'s progress line).
    WaitProgress = "wait-progress" => Vec<StateCount>, reads;
    /// The notifiers and their dead letters.
    NotifyList = "notify-list" => NotifyReport, reads;
    /// Queue a dead letter again.
    NotifyRetry = "notify-retry" => Changed;
    /// Send a test message through one notifier.
    NotifyTest = "notify-test" => NotifyTestReply;
    /// Write a digest now.
    NotifyDigest = "notify-digest" => DigestWritten;
    /// Queue a new task from a run's record, its inputs checked.
    Rerun = "rerun" => Rerunning;
    /// Two runs' start and output manifests, for `diff`.
    Diff = "diff" => RunPair, reads;
    /// A period's accounting (`nightjar report`).
    Report = "report" => Accounting, reads;
    /// A period's finished runs as a trace for `nightjar simulate` (`report --trace`, `simulate --history`).
    RunTrace = "run-trace" => TraceRows, reads;
    /// The next bytes of a run's log (`nightjar logs`).
    Logs = "logs" => LogChunk, reads;
    /// Who the daemon takes the caller for.
    Whoami = "whoami" => Identity, reads;
    /// Change a task's priority (administrators; audited).
    Priority = "priority" => Changed;
    /// The audit log of administrative actions.
    Audit = "audit" => Vec<AuditRow>, reads;
    /// Make an API token for the caller (shown once).
    TokenCreate = "token-create" => NewToken;
    /// The caller's API tokens (administrators: everyone's), without secrets.
    TokenList = "token-list" => Vec<TokenRow>, reads;
    /// Revoke an API token (one's own; administrators: any).
    TokenRevoke = "token-revoke" => Changed;
}

/// `ping`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Ping {}

/// The daemon is there: its pid and version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Pong {
    /// The daemon's process id.
    pub pid: u32,
    /// The daemon's release.
    pub version: String,
    /// The daemon's protocol version.
    pub protocol: u32,
}

/// `submit`: checked entries, all or nothing.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Submit {
    /// The entries; the reply holds one id per entry.
    pub entries: Vec<NewEntry>,
    /// Hash every input again, whatever the hash cache holds (`submit --verify`).
    #[serde(default)]
    pub verify: bool,
}

/// `ls`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TaskList {
    /// Which tasks.
    pub filter: ListFilter,
    /// At most this many rows: the running tasks first, then the oldest
    /// waiting, then the newest ended, listed by id. Absent: every row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

/// `ls`'s count of the rows its filter matches.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TaskCount {
    /// Which tasks.
    pub filter: ListFilter,
}

/// How many of the rows a listing matches are in one state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StateCount {
    /// The state.
    pub state: TaskState,
    /// How many rows (a sweep is one row).
    pub count: u32,
}

macro_rules! by_id {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
        #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
        pub struct $name {
            /// Task id.
            pub id: i64,
        }
    )*};
}

by_id! {
    /// `show ID`.
    Show;
    /// `cancel ID`: waiting tasks at once, running ones by SIGTERM, grace, SIGKILL.
    Cancel;
    /// `hold ID`.
    Hold;
    /// `release ID`.
    Release;
    /// `why ID`.
    Why;
}

/// `retry ID [--no-cache]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Retry {
    /// Task id.
    pub id: i64,
    /// Run for real, not from the result cache; also queues a task that
    /// succeeded from the cache again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_cache: bool,
}

/// What `cancel` did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Cancelled {
    /// Tasks cancelled at once.
    pub cancelled: Vec<i64>,
    /// Runs being stopped (SIGTERM, then SIGKILL after the grace period).
    pub stopping: Vec<i64>,
}

/// What `hold`, `release` or `retry` did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Changed {
    /// Tasks changed.
    pub tasks: usize,
}

/// `gpus`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct GpuList {}

/// `gc [--dry-run]`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Gc {
    /// Only count.
    #[serde(default)]
    pub dry_run: bool,
}

/// `whoami`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Whoami {}

/// Who the daemon takes the caller for, and how it serves users.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Identity {
    /// The caller's uid (from the kernel, or the token's).
    pub uid: u32,
    /// Their name.
    pub user: String,
    /// Whether they administer this daemon.
    pub admin: bool,
    /// Whether the daemon serves many users (runs as root) and runs tasks as their owners.
    pub multi_user: bool,
}
