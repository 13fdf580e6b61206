use super::*;
use std::os::unix::fs::symlink;

fn open(path: &Path) -> Dir {
    Dir::open_ambient_dir(path, cap_std::ambient_authority()).unwrap()
}

/// Descriptors of this process open on something under `dir` (other
/// tests run beside this one: only this test's own are counted).
fn open_fds(dir: &Path) -> usize {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|target| target.starts_with(dir))
        .count()
}

#[test]
fn a_tree_of_files_links_and_fifos_is_removed_and_no_link_is_followed() {
    let root = tempfile::tempdir().unwrap();
    let outside = root.path().join("outside");
    std::fs::create_dir_all(outside.join("keep")).unwrap();
    std::fs::write(outside.join("keep/secret"), b"s").unwrap();
    let out = root.path().join("out");
    std::fs::create_dir_all(out.join("a/b/c")).unwrap();
    std::fs::write(out.join("a/b/c/f"), b"x").unwrap();
    std::fs::write(out.join("a/top"), b"y").unwrap();
    symlink(&outside, out.join("a/b/to-outside")).unwrap();
    symlink(outside.join("keep/secret"), out.join("file-link")).unwrap();
    let fifo = std::ffi::CString::new(out.join("a/pipe").as_os_str().as_bytes()).unwrap();
    // SAFETY: mkfifo reads a NUL-terminated path that lives for the call.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    remove_tree(&open(root.path()), Path::new("out")).unwrap();
    assert!(!out.exists());
    assert_eq!(std::fs::read(outside.join("keep/secret")).unwrap(), b"s");
    assert_eq!(open_fds(root.path()), 0, "no descriptor is left open");
}

#[test]
fn a_link_in_place_of_the_folder_is_removed_itself_and_nothing_there_is_fine() {
    let root = tempfile::tempdir().unwrap();
    let outside = root.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("f"), b"s").unwrap();
    symlink(&outside, root.path().join("out")).unwrap();
    let dir = open(root.path());
    remove_tree(&dir, Path::new("out")).unwrap();
    assert!(std::fs::symlink_metadata(root.path().join("out")).is_err());
    assert!(outside.join("f").exists());
    remove_tree(&dir, Path::new("out")).unwrap();
}

#[test]
fn a_tree_deeper_than_any_stack_is_removed_on_a_small_stack_with_few_descriptors() {
    const LEVELS: usize = 20_000;
    let root = tempfile::tempdir().unwrap();
    let top = open(root.path());
    top.create_dir("deep").unwrap();
    let mut here = top.open_dir("deep").unwrap();
    for i in 0..LEVELS {
        here.create_dir("d").unwrap();
        if i % 1000 == 0 {
            here.write("f", b"x").unwrap();
        }
        here = here.open_dir("d").unwrap();
    }
    drop((here, top));
    let path = root.path().to_owned();
    // A recursive removal needs a frame per level: far more than 256 KiB.
    let left = std::thread::Builder::new()
        .stack_size(256 << 10)
        .spawn(move || {
            let top = open(&path);
            remove_tree(&top, Path::new("deep"))?;
            drop(top);
            Ok::<usize, std::io::Error>(open_fds(&path))
        })
        .unwrap()
        .join()
        .unwrap()
        .unwrap();
    assert!(!root.path().join("deep").exists());
    assert_eq!(left, 0, "descriptors left open under the tree");
}

#[test]
fn a_parent_that_is_not_the_folder_left_on_the_way_down_stops_the_removal() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("a/b")).unwrap();
    std::fs::create_dir_all(root.path().join("other")).unwrap();
    let a = open(&root.path().join("a"));
    let b = level(a.open_dir("b").unwrap(), "b".into()).unwrap();
    let other = open(&root.path().join("other")).dir_metadata().unwrap();
    let mut up = Level {
        dir: None,
        entries: None,
        id: (other.dev(), other.ino()),
        mount: None,
        name: "a".into(),
    };
    let err = reopen_parent(&b, &mut up).unwrap_err();
    assert!(err.to_string().contains("moved"), "{err}");
    assert!(up.dir.is_none());
    let real = a.dir_metadata().unwrap();
    up.id = (real.dev(), real.ino());
    reopen_parent(&b, &mut up).unwrap();
    assert!(up.dir.is_some());
}

#[test]
fn an_error_names_the_path_that_could_not_be_removed() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("out/sub")).unwrap();
    std::fs::write(root.path().join("out/sub/f"), b"x").unwrap();
    let names = vec![
        Level {
            dir: None,
            entries: None,
            id: (0, 0),
            mount: None,
            name: "out".into(),
        },
        Level {
            dir: None,
            entries: None,
            id: (0, 0),
            mount: None,
            name: "sub".into(),
        },
    ];
    let e = at(
        &names,
        Path::new("f"),
        std::io::Error::from_raw_os_error(libc::EPERM),
    );
    assert!(
        e.to_string().starts_with("cannot remove out/sub/f: "),
        "{e}"
    );
    assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied);
}

#[test]
fn a_bind_mount_inside_the_tree_stops_the_removal_and_what_it_shows_is_kept() {
    assert_eq!(
        crate::users::euid(),
        0,
        "this test mounts: run it as root (CI does)"
    );
    let root = tempfile::tempdir().unwrap();
    let precious = root.path().join("precious");
    std::fs::create_dir_all(precious.join("data")).unwrap();
    std::fs::write(precious.join("data/file1"), b"keep").unwrap();
    let out = root.path().join("out");
    std::fs::create_dir_all(out.join("mnt")).unwrap();
    std::fs::write(out.join("f"), b"x").unwrap();
    let c = |p: &Path| std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
    let (src, dst) = (c(&precious), c(&out.join("mnt")));
    // SAFETY: mount(2) with NUL-terminated paths; a bind of one folder.
    let r = unsafe {
        libc::mount(
            src.as_ptr(),
            dst.as_ptr(),
            std::ptr::null(),
            libc::MS_BIND,
            std::ptr::null(),
        )
    };
    assert_eq!(r, 0, "bind mount: {}", std::io::Error::last_os_error());
    let result = remove_tree(&open(root.path()), Path::new("out"));
    // SAFETY: umount2 of the mount made above.
    unsafe { libc::umount2(dst.as_ptr(), libc::MNT_DETACH) };
    let err = result.expect_err("the removal stops at the mount");
    assert!(err.to_string().contains("mounted"), "{err}");
    assert_eq!(std::fs::read(precious.join("data/file1")).unwrap(), b"keep");
}
