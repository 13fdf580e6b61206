//! `nightjar notify ls | retry ID | test NAME | digest`: the notifiers'
//! places in the outbox, the deliveries given up on, a test message, and a
//! digest now.

use serde::{Deserialize, Serialize};

/// `notify ls`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct NotifyList {}

/// `notify retry ID`: a dead letter queued again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct NotifyRetry {
    /// The dead letter's id (`notify ls`).
    pub id: i64,
}

/// `notify test NAME`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct NotifyTest {
    /// The notifier (`[notifier.NAME]`).
    pub name: String,
}

/// `notify digest`: a digest now, of the period since the last scheduled one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct NotifyDigest {}

/// The period a `notify digest` told.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct DigestWritten {
    /// Its start (Unix ms).
    pub from: i64,
    /// Its end: now (Unix ms).
    pub to: i64,
}

/// What `notify ls` shows.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct NotifyReport {
    /// Each configured notifier.
    pub notifiers: Vec<NotifierView>,
    /// Deliveries given up on, newest first.
    pub dead: Vec<DeadLetterView>,
}

/// One notifier's state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct NotifierView {
    /// Its name.
    pub name: String,
    /// Its plugin.
    pub plugin: String,
    /// `ok`, `retrying` or `failing` (its plugin or secrets do not load).
    pub state: String,
    /// Events not handled yet (subscribed or not).
    pub pending: i64,
    /// Failed tries of the next delivery.
    pub attempts: u32,
    /// When it is tried again (Unix ms).
    pub next_at: Option<i64>,
    /// The last failure (secrets redacted).
    pub last_error: Option<String>,
    /// Events delivered in all.
    pub delivered: i64,
}

/// A delivery given up on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct DeadLetterView {
    /// Its id (`notify retry ID`).
    pub id: i64,
    /// The notifier.
    pub notifier: String,
    /// The event's id and kind.
    pub event_id: i64,
    /// `task-failed`, ...
    pub kind: String,
    /// The task it was about.
    pub task: Option<i64>,
    /// When it was given up on (Unix ms).
    pub at: i64,
    /// Why.
    pub reason: String,
    /// `dead`, `requeued` or `delivered`.
    pub state: String,
}

/// What `notify test` got.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct NotifyTestReply {
    /// The notifier accepted the message.
    pub delivered: bool,
    /// Each HTTP exchange: `POST https://… -> 200: {"errcode":0,…}` (redacted).
    pub answer: Vec<String>,
    /// Why not, when not.
    pub error: Option<String>,
}
