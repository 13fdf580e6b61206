//! Local accounts, from the system's user database through libc (so NSS
//! sources such as LDAP or sssd answer too): a uid's name, home, shell and
//! groups, and a group's id. The daemon asks at connection time (who is
//! calling) and at run time (whom a task runs as), never trusting a name
//! a client sends.

use std::ffi::{CStr, CString};
use std::path::PathBuf;

pub mod perm;

/// One local user as the user database has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    /// User id.
    pub uid: u32,
    /// Primary group id.
    pub gid: u32,
    /// Login name.
    pub name: String,
    /// Home folder.
    pub home: PathBuf,
    /// Login shell.
    pub shell: PathBuf,
}

/// The buffer the `_r` lookups start with; doubled on ERANGE up to 1 MiB.
const START: usize = 1024;
const MAX: usize = 1 << 20;

/// Runs a reentrant `get*_r` lookup with a buffer that doubles on ERANGE
/// (up to 1 MiB); `call(entry, buf, len, out)` is the libc call, and `read`
/// turns the entry found (its strings point into the buffer) into the answer.
fn lookup_r<E, T>(
    call: impl Fn(&mut E, *mut libc::c_char, usize, &mut *mut E) -> libc::c_int,
    read: impl FnOnce(&E) -> T,
) -> Option<T> {
    let mut buf = vec![0u8; START];
    loop {
        // SAFETY: `E` is a plain C struct (passwd, group) for which all
        // zeroes is a valid value; the call writes into it and `buf`.
        let mut entry: E = unsafe { std::mem::zeroed() };
        let mut out: *mut E = std::ptr::null_mut();
        let rc = call(&mut entry, buf.as_mut_ptr().cast(), buf.len(), &mut out);
        if rc == libc::ERANGE && buf.len() < MAX {
            buf.resize(buf.len() * 2, 0);
            continue;
        }
        if rc != 0 || out.is_null() {
            return None;
        }
        return Some(read(&entry));
    }
}

/// The account a passwd entry describes.
fn account_of(pw: &libc::passwd) -> Account {
    // SAFETY: on success the strings point into the lookup's buffer,
    // NUL-terminated, and it is alive while `read` runs.
    let text = |p: *const libc::c_char| {
        if p.is_null() {
            String::new()
        } else {
            // SAFETY: see above: non-null here, NUL-terminated, its buffer alive.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        }
    };
    Account {
        uid: pw.pw_uid,
        gid: pw.pw_gid,
        name: text(pw.pw_name),
        home: PathBuf::from(text(pw.pw_dir)),
        shell: PathBuf::from(text(pw.pw_shell)),
    }
}

/// The account of `uid`, or `None` when the database has no such user.
pub fn by_uid(uid: u32) -> Option<Account> {
    // SAFETY: the buffers are live and of the lengths given.
    lookup_r(
        |pw, buf, len, out| unsafe { libc::getpwuid_r(uid, pw, buf, len, out) },
        account_of,
    )
}

/// The account named `name`, or `None` when the database has no such user.
pub fn by_name(name: &str) -> Option<Account> {
    let c = CString::new(name).ok()?;
    // SAFETY: as in `by_uid`; `c` outlives the call.
    lookup_r(
        |pw, buf, len, out| unsafe { libc::getpwnam_r(c.as_ptr(), pw, buf, len, out) },
        account_of,
    )
}

/// The name of `uid`, or the number itself when the database has none.
pub fn name_of(uid: u32) -> String {
    by_uid(uid).map_or_else(|| uid.to_string(), |a| a.name)
}

/// Every group `account` is in: its primary group first, then the
/// supplementary ones (as `id -G` prints them).
pub fn groups_of(account: &Account) -> Vec<u32> {
    let Ok(name) = CString::new(account.name.as_bytes()) else {
        return vec![account.gid];
    };
    let mut n: libc::c_int = 32;
    loop {
        let mut list = vec![0 as libc::gid_t; n as usize];
        let asked = n;
        // SAFETY: `list` holds `n` entries; getgrouplist writes at most that
        // many and sets `n` to the number it has.
        let rc =
            unsafe { libc::getgrouplist(name.as_ptr(), account.gid, list.as_mut_ptr(), &mut n) };
        if rc >= 0 {
            list.truncate(n.max(0) as usize);
            return list;
        }
        if n <= asked || n > 65_536 {
            return vec![account.gid];
        }
    }
}

/// The id of the group named `name`, or `None` when there is none.
pub fn group_id(name: &str) -> Option<u32> {
    let c = CString::new(name).ok()?;
    // SAFETY: as in `by_uid`, for struct group; `c` outlives the call.
    lookup_r(
        |gr, buf, len, out| unsafe { libc::getgrnam_r(c.as_ptr(), gr, buf, len, out) },
        |gr: &libc::group| gr.gr_gid,
    )
}

/// The daemon's effective uid.
pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

/// The daemon's effective group id.
pub fn egid() -> u32 {
    // SAFETY: getegid has no preconditions.
    unsafe { libc::getegid() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_is_found_with_its_home_and_group_and_a_missing_user_is_none() {
        let root = by_uid(0).expect("uid 0 is in every user database");
        assert_eq!((root.uid, root.gid, root.name.as_str()), (0, 0, "root"));
        assert!(root.home.is_absolute(), "{root:?}");
        assert_eq!(groups_of(&root).first(), Some(&0));
        assert_eq!(group_id("root"), Some(0));
        assert_eq!(by_name("root"), Some(root.clone()));
        assert_eq!(by_name("no-such-user-nightjar"), None);
        assert_eq!(by_name("nul\0inside"), None);
        assert_eq!(by_uid(4_000_000_000), None);
        assert_eq!(name_of(4_000_000_000), "4000000000");
        assert_eq!(group_id("no-such-group-nightjar"), None);
        assert_eq!(group_id("nul\0inside"), None);
        assert_eq!(by_name("root").map(|a| a.uid), Some(0));
        assert_eq!(by_name("no-such-user-nightjar"), None);
        assert_eq!(by_name("nul\0inside"), None);
    }

    #[test]
    fn the_daemon_user_is_found_by_its_euid() {
        let me = by_uid(euid()).expect("the test's own user has an entry");
        assert_eq!(me.uid, euid());
        assert!(!me.name.is_empty());
    }
}
