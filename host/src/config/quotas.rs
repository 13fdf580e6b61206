//! `[quotas]`: per-user limits on a shared daemon, the same for every user
//! unless `[quotas.user.NAME]` gives one user their own.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One user's limits; an absent key means no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct QuotaLimits {
    /// Tasks running at once.
    pub running: Option<u32>,
    /// GPUs held at once by their runs.
    pub gpus: Option<u32>,
    /// Tasks waiting (queued, held, blocked or scheduled) at once.
    pub queued: Option<u32>,
}

/// `[quotas]`: the limits of every user, and per-user exceptions.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct QuotasConfig {
    /// Every user's running-task limit.
    pub running: Option<u32>,
    /// Every user's GPU limit.
    pub gpus: Option<u32>,
    /// Every user's waiting-task limit.
    pub queued: Option<u32>,
    /// One user's own limits, key by key over the ones above.
    pub user: BTreeMap<String, QuotaLimits>,
}

impl QuotasConfig {
    /// The limits of user `name`, and the key each comes from (for reasons).
    pub fn of(&self, name: &str) -> (QuotaLimits, QuotaKeys) {
        let own = self.user.get(name).copied().unwrap_or_default();
        let key = |own: Option<u32>, field: &'static str| match own {
            Some(_) => format!("quotas.user.{name}.{field}"),
            None => format!("quotas.{field}"),
        };
        (
            QuotaLimits {
                running: own.running.or(self.running),
                gpus: own.gpus.or(self.gpus),
                queued: own.queued.or(self.queued),
            },
            QuotaKeys {
                running: key(own.running, "running"),
                gpus: key(own.gpus, "gpus"),
                queued: key(own.queued, "queued"),
            },
        )
    }

    /// Whether any limit is set at all.
    pub fn any(&self) -> bool {
        self.running.is_some()
            || self.gpus.is_some()
            || self.queued.is_some()
            || !self.user.is_empty()
    }
}

/// The config key each of a user's limits comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotaKeys {
    /// Of `running`.
    pub running: String,
    /// Of `gpus`.
    pub gpus: String,
    /// Of `queued`.
    pub queued: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_users_own_limit_replaces_the_default_key_by_key() {
        let q: QuotasConfig =
            toml::from_str("running = 2\ngpus = 4\n[user.alice]\ngpus = 8\n").unwrap();
        let (l, k) = q.of("alice");
        assert_eq!((l.running, l.gpus, l.queued), (Some(2), Some(8), None));
        assert_eq!(k.gpus, "quotas.user.alice.gpus");
        assert_eq!(k.running, "quotas.running");
        let (l, _) = q.of("bob");
        assert_eq!(l.gpus, Some(4));
        assert!(q.any());
        assert!(!QuotasConfig::default().any());
        let e = toml::from_str::<QuotasConfig>("[user.alice]\ngpu = 1\n").unwrap_err();
        assert!(e.to_string().contains("unknown field `gpu`"), "{e}");
    }
}
