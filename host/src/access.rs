//! Who is calling and what they may do. The caller's identity comes from
//! the kernel (the socket's `SO_PEERCRED`, or a token the daemon issued),
//! never from the request; the rules are pure functions of the caller and
//! the task's owner, so the socket and the HTTP API enforce the same ones.

use crate::config::UsersConfig;
use crate::task::model::Owner;
use nightjar_core::api::{ApiError, ErrorKind};

/// The user a request comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// Their uid, from the kernel.
    pub uid: u32,
    /// Their login name (the uid as digits when the user database has none).
    pub name: String,
    /// Root, the daemon's own user, or a member of `users.admin_group`.
    pub admin: bool,
}

/// The access rules of one daemon: whose it is and what `[users]` says.
#[derive(Debug, Clone)]
pub struct Access {
    /// The daemon's own uid: tasks from before owners existed are its.
    pub daemon_uid: u32,
    /// The id of `users.admin_group`, when set.
    pub admin_gid: Option<u32>,
    /// `users.share_details`.
    pub share_details: bool,
}

impl Access {
    /// The rules for a daemon running as `daemon_uid` with `cfg`.
    pub fn new(cfg: &UsersConfig, daemon_uid: u32) -> Access {
        Access {
            daemon_uid,
            admin_gid: (!cfg.admin_group.is_empty())
                .then(|| crate::users::group_id(&cfg.admin_group))
                .flatten(),
            share_details: cfg.share_details,
        }
    }

    /// Whether this daemon serves many users (it runs as root).
    pub fn multi_user(&self) -> bool {
        self.daemon_uid == 0
    }

    /// The caller behind `uid` (looked up in the user database), or why a
    /// single-user daemon refuses them.
    pub fn caller(&self, uid: u32) -> Result<Caller, ApiError> {
        if !self.multi_user() && uid != self.daemon_uid && uid != 0 {
            return Err(ApiError::new(
                ErrorKind::Forbidden,
                format!(
                    "this daemon runs as {} and serves only that user: start your own (`nightjar daemon`), or ask for a lab-wide daemon run as root (the guide's \"Many users on one machine\")",
                    crate::users::name_of(self.daemon_uid)
                ),
            ));
        }
        let account = crate::users::by_uid(uid);
        let admin = uid == 0
            || uid == self.daemon_uid
            || match (&account, self.admin_gid) {
                (Some(a), Some(gid)) => crate::users::groups_of(a).contains(&gid),
                _ => false,
            };
        Ok(Caller {
            uid,
            name: account.map_or_else(|| uid.to_string(), |a| a.name),
            admin,
        })
    }

    /// The uid a task belongs to (`owner_uid` as stored; none: the daemon's).
    pub fn owner_uid(&self, stored: Option<u32>) -> u32 {
        stored.unwrap_or(self.daemon_uid)
    }

    /// Whether `caller` may change the task owned by `owner` (cancel, hold,
    /// release, retry); the error says whose it is and who may.
    pub fn may_change(&self, caller: &Caller, id: i64, owner: Option<u32>) -> Result<(), ApiError> {
        let owner = self.owner_uid(owner);
        if caller.admin || caller.uid == owner {
            return Ok(());
        }
        Err(ApiError::new(
            ErrorKind::Forbidden,
            format!(
                "task {id} belongs to {}, not to {}: only its owner or an administrator (`users.admin_group`) may change it",
                crate::users::name_of(owner),
                caller.name
            ),
        ))
    }

    /// Whether `caller` may read the environment and logs of a task owned by `owner`.
    pub fn may_read_private(&self, caller: &Caller, owner: Option<u32>) -> bool {
        caller.admin || self.share_details || caller.uid == self.owner_uid(owner)
    }

    /// The error for reading another user's logs or environment.
    pub fn private_refused(&self, caller: &Caller, id: i64, owner: Option<u32>) -> ApiError {
        ApiError::new(
            ErrorKind::Forbidden,
            format!(
                "task {id} belongs to {}, not to {}: its logs and environment are private to its owner and administrators (`users.share_details = true` shares them)",
                crate::users::name_of(self.owner_uid(owner)),
                caller.name
            ),
        )
    }

    /// Refuses a caller who is not an administrator; `what` names the act.
    pub fn admin_only(&self, caller: &Caller, what: &str) -> Result<(), ApiError> {
        if caller.admin {
            return Ok(());
        }
        Err(ApiError::new(
            ErrorKind::Forbidden,
            format!(
                "{what} is for administrators: root, the daemon's user, or members of `users.admin_group`; {} is none of these",
                caller.name
            ),
        ))
    }
}

impl Caller {
    /// The owner a submission by this caller gets.
    pub fn owner(&self) -> Owner {
        Owner {
            uid: self.uid,
            name: self.name.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access(daemon_uid: u32, share: bool) -> Access {
        Access {
            daemon_uid,
            admin_gid: None,
            share_details: share,
        }
    }

    fn user(uid: u32, admin: bool) -> Caller {
        Caller {
            uid,
            name: format!("u{uid}"),
            admin,
        }
    }

    #[test]
    fn owners_and_admins_may_change_a_task_and_others_are_told_whose_it_is() {
        let a = access(0, false);
        assert!(a.may_change(&user(1001, false), 7, Some(1001)).is_ok());
        assert!(a.may_change(&user(1003, true), 7, Some(1001)).is_ok());
        let e = a.may_change(&user(1002, false), 7, Some(1001)).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Forbidden);
        assert!(e.message.contains("task 7 belongs to"), "{e}");
        assert!(e.message.contains("u1002"), "{e}");
        // A task from before owners belongs to the daemon's user.
        assert!(a.may_change(&user(1001, false), 7, None).is_err());
        assert!(a.may_change(&user(0, true), 7, None).is_ok());
    }

    #[test]
    fn private_details_are_the_owners_unless_shared() {
        let a = access(0, false);
        assert!(a.may_read_private(&user(1001, false), Some(1001)));
        assert!(!a.may_read_private(&user(1002, false), Some(1001)));
        assert!(a.may_read_private(&user(1002, true), Some(1001)));
        assert!(access(0, true).may_read_private(&user(1002, false), Some(1001)));
    }

    #[test]
    fn a_single_user_daemon_serves_its_user_and_root_only() {
        let a = access(1001, false);
        assert!(!a.multi_user());
        let me = a.caller(1001).unwrap();
        assert!(me.admin, "the daemon's own user administers it");
        assert!(a.caller(0).unwrap().admin);
        let e = a.caller(1002).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Forbidden);
        assert!(e.message.contains("serves only that user"), "{e}");
    }

    #[test]
    fn on_a_system_daemon_plain_users_are_not_admins() {
        let a = access(0, false);
        assert!(a.multi_user());
        let c = a.caller(4_000_000_001).unwrap();
        assert!(!c.admin);
        assert_eq!(c.name, "4000000001");
        assert!(a.admin_only(&c, "changing a priority").is_err());
        assert!(a.admin_only(&a.caller(0).unwrap(), "x").is_ok());
    }
}
