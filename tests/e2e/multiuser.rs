//! Many users on one machine, for real: a daemon run as root, the CLI run as
//! local users made with `useradd` (njtest-alice, njtest-bob, and
//! njtest-carol of the group njtest-admins) through `setpriv`. Each test
//! fails, saying why, when not root or the tools are missing.

use std::os::unix::fs::{MetadataExt, PermissionsExt};

use crate::users_harness::{account, folder_of, sh, system, users, wait_end};

#[test]
fn a_task_runs_as_its_owner_with_their_groups_home_and_output_and_cannot_regain_root() {
    let u = users("run as owner");
    let s = system("");
    let mode = std::fs::metadata(&s.socket).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o666, "a root daemon's socket without socket_group");
    let work = folder_of(&u.alice, "nj-run");
    let script = "grep -E '^(Uid|Gid):' /proc/$$/status > $NIGHTJAR_OUTPUT_PATH/report; \
         echo groups $(id -G) >> $NIGHTJAR_OUTPUT_PATH/report; \
         echo home=$HOME user=$USER logname=$LOGNAME >> $NIGHTJAR_OUTPUT_PATH/report; \
         if /usr/bin/python3 -c 'import os; os.setuid(0)' 2>/dev/null; then echo setuid=root; else echo setuid=refused; fi >> $NIGHTJAR_OUTPUT_PATH/report; \
         if kill -TERM $PPID 2>/dev/null; then echo kill=done; else echo kill=refused; fi >> $NIGHTJAR_OUTPUT_PATH/report";
    let id = s.submit(
        &u,
        &u.alice,
        &[
            "--workdir",
            work.to_str().unwrap(),
            "--output",
            "out",
            "--",
            "sh",
            "-c",
            script,
        ],
    );
    let shown = wait_end(&s, id);
    let out = work.join("out");
    let report = std::fs::read_to_string(out.join("report"))
        .unwrap_or_else(|e| panic!("no report ({e}): {shown}\n{}", s.nj.daemon_log()));
    let (a, g) = (u.alice.uid, u.alice.gid);
    assert!(
        report.contains(&format!("Uid:\t{a}\t{a}\t{a}\t{a}")),
        "{report}"
    );
    assert!(
        report.contains(&format!("Gid:\t{g}\t{g}\t{g}\t{g}")),
        "{report}"
    );
    let groups_line = report.lines().find(|l| l.starts_with("groups")).unwrap();
    let want = String::from_utf8_lossy(&sh("id", &["-G", "njtest-alice"]).stdout)
        .trim()
        .to_string();
    assert_eq!(groups_line, format!("groups {want}"), "{report}");
    assert!(!groups_line.split(' ').any(|x| x == "0"), "{report}");
    let home = u.alice.home.display();
    assert!(
        report.contains(&format!(
            "home={home} user=njtest-alice logname=njtest-alice"
        )),
        "{report}"
    );
    assert!(report.contains("setuid=refused"), "{report}");
    assert!(report.contains("kill=refused"), "{report}");
    assert_eq!(shown["task"]["state"], "succeeded", "{shown}");
    for p in [&out, &out.join("report")] {
        let m = std::fs::metadata(p).unwrap();
        assert_eq!((m.uid(), m.gid()), (a, g), "{} owned by root", p.display());
    }
}

#[test]
fn output_the_owner_may_not_write_and_a_workdir_they_cannot_enter_fail_as_theirs() {
    let u = users("output and workdir as owner");
    let s = system("");
    // A folder of alice's with an output alice may not write (root's, 0755).
    let work = folder_of(&u.alice, "nj-ro");
    std::fs::create_dir_all(work.join("locked")).unwrap();
    let id = s.submit(
        &u,
        &u.alice,
        &[
            "--workdir",
            work.to_str().unwrap(),
            "--output",
            "locked/out",
            "--",
            "true",
        ],
    );
    let shown = wait_end(&s, id);
    assert_eq!(shown["task"]["state"], "failed", "{shown}");
    let text = shown.to_string();
    assert!(
        text.contains("cannot create output folder") && text.contains("njtest-alice"),
        "{text}"
    );
    assert!(!work.join("locked/out").exists(), "made as root");
    // ${SCRATCH} and the default ${OUTPUT_PATH} live in the root-only state
    // dir: refused at submit, saying so and what to use instead.
    for var in ["${SCRATCH}", "${OUTPUT_PATH}"] {
        let out = s.cli(
            &u,
            &u.alice,
            &[
                "submit",
                "--workdir",
                work.to_str().unwrap(),
                "--",
                "ls",
                var,
            ],
        );
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("tasks that run as njtest-alice cannot reach")
                && err.contains("--output DIR"),
            "{err}"
        );
    }
    // The workdir is entered as alice: one she lost access to after the
    // submit fails to start instead of being entered as root.
    let gone = folder_of(&u.alice, "nj-gone");
    let id = s.submit(
        &u,
        &u.alice,
        &["--hold", "--workdir", gone.to_str().unwrap(), "--", "true"],
    );
    std::os::unix::fs::chown(&gone, Some(0), Some(0)).unwrap();
    std::fs::set_permissions(&gone, std::fs::Permissions::from_mode(0o700)).unwrap();
    s.ok(&u, &u.alice, &["release", &id.to_string()]);
    let shown = wait_end(&s, id);
    assert_eq!(shown["task"]["state"], "failed", "{shown}");
    let text = shown.to_string();
    assert!(
        text.contains("cannot enter the workdir") && text.contains(gone.to_str().unwrap()),
        "{text}"
    );
}

#[test]
fn a_user_deleted_after_the_submit_never_runs_and_never_as_root() {
    let u = users("deleted owner");
    let s = system("");
    let dave = account("njtest-dave", None);
    let work = tempfile::Builder::new()
        .prefix("njtest-dave")
        .tempdir()
        .unwrap();
    std::fs::set_permissions(work.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let marker = work.path().join("ran");
    let cmd = format!("touch {}", marker.display());
    let id = s.submit(
        &u,
        &dave,
        &[
            "--hold",
            "--workdir",
            work.path().to_str().unwrap(),
            "--",
            "sh",
            "-c",
            &cmd,
        ],
    );
    let del = sh("userdel", &["-r", "njtest-dave"]);
    assert!(del.status.success(), "userdel: {del:?}");
    // Root (an administrator) releases it.
    s.nj.ok(&["release", &id.to_string()]);
    let shown = wait_end(&s, id);
    assert_eq!(shown["task"]["state"], "failed", "{shown}");
    let text = shown.to_string();
    assert!(
        text.contains(&format!("uid {}", dave.uid))
            && text.contains("no longer in the user database"),
        "{text}"
    );
    assert!(!marker.exists(), "the task ran");
}
