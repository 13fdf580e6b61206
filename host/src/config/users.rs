//! `[users]`: who may use a system daemon's socket, who administers it, and
//! what users may see of each other's tasks.

use serde::{Deserialize, Serialize};

/// Access settings of a daemon that serves many local users (one run as
/// root). A daemon run as a user serves only that user (and root).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct UsersConfig {
    /// Run as root: the group whose members may use the socket (mode 0660,
    /// owned by this group); empty: every local user (mode 0666).
    pub socket_group: String,
    /// Members of this group may act on every user's tasks, change
    /// priorities, reload plugins, run `gc` and the notifier verbs. Root
    /// and the daemon's own user always may, and they read the whole audit
    /// log (a user reads their own acts and the acts on their tasks).
    pub admin_group: String,
    /// Whether users may read the environment and logs of other users'
    /// tasks (the queue, `why` and the GPUs are readable by everyone).
    pub share_details: bool,
}

impl UsersConfig {
    /// Checks that the named groups exist; the error names the key.
    pub fn check(&self) -> anyhow::Result<()> {
        for (key, group) in [
            ("users.socket_group", &self.socket_group),
            ("users.admin_group", &self.admin_group),
        ] {
            if !group.is_empty() && crate::users::group_id(group).is_none() {
                anyhow::bail!(
                    "`{key}` names the group `{}`, which this machine does not have: create it (`groupadd {}`) or leave the key out",
                    group.escape_debug(),
                    group.escape_debug()
                );
            }
        }
        Ok(())
    }
}
