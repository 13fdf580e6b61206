use super::*;
use std::os::unix::fs::PermissionsExt;

use crate::privsep::nobody;

/// A root-owned file of `mode` with a POSIX ACL entry giving uid 65534
/// `perm` (0 or 4), written as the kernel's xattr form.
fn with_acl(dir: &std::path::Path, name: &str, mode: u32, perm: u16) -> std::fs::File {
    let f = dir.join(name);
    std::fs::write(&f, "secret").unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(mode)).unwrap();
    let group = ((mode >> 3) & 7) as u16;
    let other = (mode & 7) as u16;
    let mut acl = 2u32.to_le_bytes().to_vec();
    let any = u32::MAX;
    for (tag, p, id) in [
        (0x01u16, ((mode >> 6) & 7) as u16, any),
        (0x02, perm, 65534),
        (0x04, group, any),
        (0x10, group | perm, any),
        (0x20, other, any),
    ] {
        acl.extend_from_slice(&tag.to_le_bytes());
        acl.extend_from_slice(&p.to_le_bytes());
        acl.extend_from_slice(&id.to_le_bytes());
    }
    let path = std::ffi::CString::new(f.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: setxattr with NUL-terminated names and a live buffer.
    let r = unsafe {
        libc::setxattr(
            path.as_ptr(),
            c"system.posix_acl_access".as_ptr(),
            acl.as_ptr().cast(),
            acl.len(),
            0,
        )
    };
    assert_eq!(r, 0, "setxattr: {}", std::io::Error::last_os_error());
    std::fs::File::open(&f).unwrap()
}

#[test]
fn the_kernel_decides_with_acls_not_the_mode_bits() {
    assert_eq!(
        crate::users::euid(),
        0,
        "this test acts as another user: run it as root (CI does)"
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    // 0644, but an ACL entry takes read away from nobody.
    let denied = with_acl(dir.path(), "denied", 0o644, 0);
    // 0600, but an ACL entry grants nobody read.
    let granted = with_acl(dir.path(), "granted", 0o600, 4);
    let plain = dir.path().join("plain");
    std::fs::write(&plain, "x").unwrap();
    std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o600)).unwrap();
    let plain = std::fs::File::open(&plain).unwrap();
    let who = nobody();
    let meta = denied.metadata().unwrap();
    assert!(
        super::super::open::may_read(meta.mode(), meta.uid(), meta.gid(), &who),
        "the mode bits alone would let nobody read it"
    );
    let answers = with_read_check(Some(&who), |c| {
        (
            c.may_read(&denied).unwrap(),
            c.may_read(&granted).unwrap(),
            c.may_read(&plain).unwrap(),
        )
    })
    .unwrap();
    assert_eq!(answers, (false, true, false));
    // The daemon acting as itself: nothing to ask.
    assert!(with_read_check(None, |c| c.may_read(&plain).unwrap()).unwrap());
}
