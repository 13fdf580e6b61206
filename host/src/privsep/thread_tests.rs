use super::*;
use std::os::unix::fs::PermissionsExt;

use crate::privsep::nobody;

fn need_root() {
    assert_eq!(
        crate::users::euid(),
        0,
        "this test acts as another user: run the tests as root (CI does)"
    );
}

/// A root-only file in a folder others may enter.
fn secret() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let f = dir.path().join("secret");
    std::fs::write(&f, "root only").unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
    (dir, f)
}

#[test]
fn a_root_only_file_is_refused_on_the_owners_thread_and_the_caller_is_unchanged() {
    need_root();
    let (_dir, f) = secret();
    let who = nobody();
    let opened = as_owner(Some(&who), |_| std::fs::File::open(&f).map(|_| ())).unwrap();
    let e = opened.expect_err("nobody read a root-only file");
    assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied, "{e}");
    // The daemon's own thread is still root, and so is a fresh one.
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "root only");
    let again = std::thread::spawn(move || std::fs::read_to_string(&f).unwrap());
    assert_eq!(again.join().unwrap(), "root only");
}

#[test]
fn a_folder_only_root_enters_cannot_be_stat_ed_through() {
    need_root();
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::write(dir.path().join("x"), "x").unwrap();
    let p = dir.path().join("x");
    let r = as_owner(Some(&nobody()), |_| std::fs::metadata(&p).map(|_| ())).unwrap();
    assert_eq!(
        r.expect_err("stat through a 0700 root folder").kind(),
        std::io::ErrorKind::PermissionDenied
    );
}

#[test]
fn a_program_started_from_the_owners_thread_runs_as_the_owner_for_good() {
    need_root();
    let out = as_owner(Some(&nobody()), |o| {
        o.command("/bin/sh")
            .unwrap()
            .args(["-c", "id -u; id -g; id -G; echo $HOME"])
            .output()
            .unwrap()
    })
    .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "65534\n65534\n65534\n/nonexistent\n"
    );
}

#[test]
fn the_daemons_thread_answers_what_the_owners_thread_asks() {
    need_root();
    let mut served = Vec::new();
    let got = as_owner_serving(
        Some(&nobody()),
        |q: u32| {
            // Answered as root: the daemon's thread.
            served.push(q);
            q * 2 + crate::users::euid()
        },
        |_, ask| (ask.ask(3), ask.ask(5)),
    )
    .unwrap();
    assert_eq!(got, (Some(6), Some(10)));
    assert_eq!(served, [3, 5]);
}

#[test]
fn with_no_identity_to_take_the_work_runs_as_the_daemon() {
    let (_dir, f) = secret();
    let r = as_owner(None, |o| {
        assert_eq!(o.uid(), None);
        std::fs::read_to_string(&f).unwrap()
    })
    .unwrap();
    assert_eq!(r, "root only");
}

#[test]
fn the_daemons_own_user_works_on_the_calling_thread_and_its_questions_are_answered() {
    let caller = std::thread::current().id();
    let mut served = 0;
    let (on, answers) = as_owner_serving(
        None,
        |q: u32| {
            served += 1;
            q * 2
        },
        |o, ask| {
            assert_eq!(o.uid(), None, "no identity taken");
            let answers: Vec<Option<u32>> = (1..=3).map(|q| ask.ask(q)).collect();
            (std::thread::current().id(), answers)
        },
    )
    .unwrap();
    assert_eq!(on, caller, "no thread started for the daemon's own user");
    assert_eq!(answers, vec![Some(2), Some(4), Some(6)]);
    assert_eq!(served, 3);
}

#[test]
fn a_panic_of_the_work_is_an_error_for_the_daemons_own_user_too() {
    let r: Result<(), String> = as_owner(None, |_| panic!("the work failed"));
    assert!(r.unwrap_err().contains("panicked"));
}

#[test]
fn a_panic_of_the_daemons_side_is_raised_again_not_taken_for_the_works() {
    // A broken rule on the daemon's side (the lock checker panics) must
    // reach the caller, as it did when the work ran on a thread of its own.
    let raised = std::panic::catch_unwind(|| {
        let _ = as_owner_serving(
            None,
            |_: ()| -> u32 { panic!("a lock rule broken") },
            |_, ask| ask.ask(()),
        );
    });
    let payload = raised.expect_err("the daemon's panic is raised again");
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"a lock rule broken"));
}
