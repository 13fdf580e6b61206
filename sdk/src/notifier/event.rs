//! What a notifier delivers: events, rendered by the host, with their facts.

use crate::Severity;
use crate::notifier_abi as abi;

/// A named fact about an event (`class`, `exit-code`, `hint`, ...).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Field {
    /// The fact's name.
    pub name: String,
    /// Its value, as text.
    pub value: String,
}

/// Something that happened, as the host hands it to a notifier: `title` and
/// `text` rendered in the configured language (zh or en, secrets redacted),
/// and the structured facts for a notifier that builds its own text.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Event {
    /// The outbox's id: increasing, in the order things happened.
    pub id: i64,
    /// The idempotency key of this delivery (`<id>-<notifier>`): a delivery
    /// repeated after a crash carries the same key, so a receiver can drop
    /// the second copy.
    pub key: String,
    /// `task-started`, `task-succeeded`, `task-failed`,
    /// `task-validation-failed`, `task-retried`, `task-preempted`,
    /// `task-held`, `task-blocked`, `task-cancelled`, `task-stalled`,
    /// `plugin-disabled`, `disk-low`, `daemon-started`, `daemon-stopped`,
    /// `digest` (a scheduled summary of a period) or `test` (new kinds may
    /// come: treat an unknown one like any other).
    pub kind: String,
    /// When it happened: Unix time in milliseconds (UTC). Plugins have no
    /// clock; this is the only time they know.
    pub at: i64,
    /// How much it weighs (subscriptions filter on it).
    pub severity: Severity,
    /// The task it is about, if any.
    pub task: Option<i64>,
    /// The run it is about, if any.
    pub run: Option<i64>,
    /// The task's project, if any.
    pub project: Option<String>,
    /// One line, rendered by the host.
    pub title: String,
    /// Plain-text lines, rendered by the host: what happened and what to do.
    pub text: String,
    /// The facts, in the host's order.
    pub fields: Vec<Field>,
}

impl Event {
    /// The value of the first field called `name`.
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|f| f.name == name)
            .map(|f| f.value.as_str())
    }

    /// [`Event::at`] in whole seconds (rounded down), as Unix-seconds
    /// headers such as `webhook-timestamp` want it.
    pub fn at_seconds(&self) -> i64 {
        self.at.div_euclid(1000)
    }

    /// The event as the host sent it.
    pub(crate) fn from_abi(e: abi::Event) -> Event {
        Event {
            id: e.id,
            key: e.key,
            kind: e.kind,
            at: e.at,
            severity: match e.severity {
                abi::Severity::Info => Severity::Info,
                abi::Severity::Warning => Severity::Warning,
                abi::Severity::Error => Severity::Error,
            },
            task: e.task,
            run: e.run,
            project: e.project,
            title: e.title,
            text: e.text,
            fields: e
                .fields
                .into_iter()
                .map(|f| Field {
                    name: f.name,
                    value: f.value,
                })
                .collect(),
        }
    }
}
