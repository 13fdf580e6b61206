//! The API socket's file: private to the daemon's user, or, for a daemon
//! run as root (one serving many users), open to every local user or to
//! the members of `users.socket_group`. Who may do what is decided per
//! request from the caller's kernel credentials, not by the file's mode.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use anyhow::{Context, Result};
use tokio::net::UnixListener;

use crate::config::UsersConfig;

/// Binds the API socket (we hold the daemon lock, so an existing socket
/// file is stale). A single-user daemon's socket is 0600. A root daemon's
/// is 0666, or 0660 and of group `users.socket_group`; folders made for it
/// are 0755, and a folder on the way that others cannot enter is warned of.
pub fn bind(path: &Path, users: &UsersConfig) -> Result<UnixListener> {
    let shared = crate::users::euid() == 0;
    if let Some(parent) = path.parent() {
        make_folders(parent, shared)?;
        if shared {
            warn_unreachable(path, parent);
        }
    }
    let _ = std::fs::remove_file(path);
    let listener =
        UnixListener::bind(path).with_context(|| format!("bind socket {}", path.display()))?;
    let mode = match (shared, users.socket_group.as_str()) {
        (false, _) => 0o600,
        (true, "") => 0o666,
        (true, group) => {
            // Checked with the config; a group removed since is an error here.
            let gid = crate::users::group_id(group).with_context(|| {
                format!("`users.socket_group` names the group `{group}`, which this machine does not have")
            })?;
            std::os::unix::fs::chown(path, None, Some(gid))
                .with_context(|| format!("give socket {} to group {group}", path.display()))?;
            0o660
        }
    };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("set the mode of socket {}", path.display()))?;
    Ok(listener)
}

/// Makes `dir` and its missing parents: 0755 each when shared (the
/// daemon's umask would make them 0700, out of users' reach).
fn make_folders(dir: &Path, shared: bool) -> Result<()> {
    let missing: Vec<&Path> = dir.ancestors().take_while(|d| !d.exists()).collect();
    for d in missing.into_iter().rev() {
        match std::fs::create_dir(d) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("create {}", d.display())),
        }
        if shared {
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755))
                .with_context(|| format!("set the mode of {}", d.display()))?;
        }
    }
    Ok(())
}

/// Logs a warning when a folder on the way to the socket is closed to
/// other users (the state dir, 0700, is one: keep the socket out of it).
fn warn_unreachable(socket: &Path, parent: &Path) {
    for d in parent.ancestors() {
        let closed = std::fs::metadata(d).is_ok_and(|m| m.permissions().mode() & 0o011 == 0);
        if closed {
            tracing::warn!(
                "users other than root cannot reach socket {}: folder {} is closed to them; put the socket in a folder they can enter (the default for root is /run/nightjar/nightjar.sock)",
                socket.display(),
                d.display()
            );
            return;
        }
    }
}
