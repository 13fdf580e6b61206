//! Many users, attacked: what a plain user must not reach through verbs
//! that read lab-wide state.

use crate::users_harness::{system, users};

#[test]
fn only_administrators_read_the_audit_log() {
    let Some(u) = users("audit is for admins") else {
        return;
    };
    let s = system("");
    let out = s.cli(&u, &u.bob, &["audit"]);
    assert_eq!(out.status.code(), Some(6), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("audit log") && err.contains("njtest-bob"),
        "{err}"
    );
    s.ok(&u, &u.carol, &["audit"]);
}
