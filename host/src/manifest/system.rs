//! The machine a run ran on: host name and kernel (`uname`), and this
//! nightjar's version. Read once per daemon: none of it changes while the
//! daemon runs (a kernel update needs a reboot, which ends the daemon).

use std::ffi::CStr;
use std::sync::OnceLock;

use nightjar_core::api::manifest::SystemInfo;

/// This machine, read on first use.
pub fn info() -> SystemInfo {
    static INFO: OnceLock<SystemInfo> = OnceLock::new();
    INFO.get_or_init(read).clone()
}

fn read() -> SystemInfo {
    // SAFETY: uname fills the zeroed struct with NUL-terminated fields.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: uname writes only into the struct it is given, which lives here.
    let ok = unsafe { libc::uname(&mut u) } == 0;
    let field = |f: &[libc::c_char]| {
        // SAFETY: each field is NUL-terminated within its array after a successful uname.
        unsafe { CStr::from_ptr(f.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    };
    let (hostname, kernel) = if ok {
        (
            field(&u.nodename),
            format!(
                "{} {} {} {}",
                field(&u.sysname),
                field(&u.release),
                field(&u.version),
                field(&u.machine)
            ),
        )
    } else {
        ("unknown".into(), "unknown".into())
    };
    SystemInfo {
        hostname,
        kernel,
        nightjar: env!("CARGO_PKG_VERSION").to_string(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_kernel_is_named() {
        let i = super::info();
        assert!(i.kernel.starts_with("Linux "), "{}", i.kernel);
        assert!(!i.hostname.is_empty());
        assert_eq!(i.nightjar, env!("CARGO_PKG_VERSION"));
    }
}
