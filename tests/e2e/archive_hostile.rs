//! The archive against hostile output folders and a hostile archive root:
//! an output folder that is a link to the root (or holds it) is never
//! followed or copied into itself, names that are not UTF-8 are archived
//! byte for byte, and an `archive.json` someone left under the final name
//! claiming to be this run's is checked before it counts as the archive.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use serde_json::json;

use crate::archive::{
    archive_state, assert_archived_first_try, assert_complete, chrono_date, finals, run0, world,
};

/// Files named `name` anywhere under `dir` (links not followed).
fn count_named(dir: &Path, name: &str) -> usize {
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let t = e.file_type().unwrap();
        if t.is_dir() {
            n += count_named(&e.path(), name);
        } else if e.file_name() == name {
            n += 1;
        }
    }
    n
}

/// Another run's archive already in the root (100 KB).
fn other_archive(root: &Path) {
    let other = root.join("other/t/2026-01-01_1_1");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("big.bin"), vec![7u8; 100_000]).unwrap();
}

#[test]
fn an_output_folder_that_is_or_holds_the_archive_root_is_not_copied_into_itself() {
    let tmp = tempfile::tempdir().unwrap();
    let top = tmp.path().join("top");
    let root = top.join("nas");
    std::fs::create_dir_all(&root).unwrap();
    other_archive(&root);
    let link = tmp.path().join("outlink");
    std::os::unix::fs::symlink(&root, &link).unwrap();
    let mut nj = world(&root, "[retention]\nevery = \"0s\"\n");
    nj.start();
    let write = "echo mine > \"${OUTPUT_PATH}/mine.txt\"";
    let via_link = nj.submit(&[
        "--name",
        "linked",
        "--project",
        "p",
        "--output",
        link.to_str().unwrap(),
        "--",
        "true",
    ]);
    assert_eq!(nj.wait(via_link), 0);
    let holding = nj.submit(&[
        "--name",
        "holding",
        "--project",
        "p",
        "--output",
        top.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        write,
    ]);
    assert_eq!(nj.wait(holding), 0);
    for id in [via_link, holding] {
        nj.until("the archive", || archive_state(&nj, id)["state"] == "done");
    }
    assert_eq!(
        count_named(&root, "big.bin"),
        1,
        "the archive root was copied into an archive"
    );
    let all = finals(&root);
    let linked = all
        .iter()
        .find(|p| p.starts_with(root.join("p/linked")))
        .unwrap();
    assert!(
        !linked.join("outputs").exists(),
        "an output folder that is a link (not hashed) is not followed: {:?}",
        std::fs::read_dir(linked.join("outputs")).map(|d| d.count())
    );
    let held = all
        .iter()
        .find(|p| p.starts_with(root.join("p/holding")))
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(held.join("outputs/mine.txt")).unwrap(),
        "mine\n"
    );
    assert!(
        !held.join("outputs/nas").exists(),
        "the root inside the output folder is skipped"
    );
}

#[test]
fn output_names_that_are_not_utf8_are_archived_byte_for_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("nas");
    std::fs::create_dir(&root).unwrap();
    let mut nj = world(&root, "[retention]\nevery = \"0s\"\n");
    let script = nj.path("work").join("names.sh");
    // Two files and two folders whose names differ only in a byte that is not UTF-8.
    std::fs::write(
        &script,
        "cd \"$1\" && printf one > \"$(printf 'a\\377')\" && printf two > \"$(printf 'a\\376')\" \
         && mkdir \"$(printf 'd\\377')\" \"$(printf 'd\\376')\" \
         && printf x > \"$(printf 'd\\377')/f\" && printf y > \"$(printf 'd\\376')/f\"\n",
    )
    .unwrap();
    nj.start();
    let id = nj.submit(&[
        "--name",
        "t",
        "--project",
        "p",
        "--",
        "sh",
        script.to_str().unwrap(),
        "${OUTPUT_PATH}",
    ]);
    assert_eq!(nj.wait(id), 0);
    assert_archived_first_try(&nj, id);
    let dir = finals(&root).pop().unwrap().join("outputs");
    let at = |name: &[u8]| dir.join(OsStr::from_bytes(name));
    assert_eq!(std::fs::read(at(b"a\xff")).unwrap(), b"one");
    assert_eq!(std::fs::read(at(b"a\xfe")).unwrap(), b"two");
    assert_eq!(std::fs::read(at(b"d\xff/f")).unwrap(), b"x");
    assert_eq!(std::fs::read(at(b"d\xfe/f")).unwrap(), b"y");
}

#[test]
fn an_archive_json_claiming_to_be_this_run_is_checked_before_it_counts() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("nas");
    let mut nj = world(&root, "[retention]\nevery = \"0s\"\n");
    nj.start();
    let id = nj.submit(&[
        "--name",
        "t",
        "--project",
        "p",
        "--",
        "sh",
        "-c",
        "printf precious > \"${OUTPUT_PATH}/a.txt\"",
    ]);
    assert_eq!(nj.wait(id), 0);
    nj.until("a try while the root is missing", || {
        archive_state(&nj, id)["attempts"].as_u64() >= Some(1)
    });
    // Someone puts an archive.json naming this run under its final name,
    // with no outputs, then the root appears.
    let run = run0(&nj, id);
    let host = std::process::Command::new("uname")
        .arg("-n")
        .output()
        .unwrap()
        .stdout;
    let origin = json!({
        "host": String::from_utf8(host).unwrap().trim(),
        "state_dir": nj.state.display().to_string(),
        "task": id,
        "run": run["id"],
        "started_at": run["started_at"],
    });
    let staging = tmp.path().join("staging");
    let fake = staging.join(format!("p/t/{}_{id}_{}", chrono_date(&run), run["id"]));
    std::fs::create_dir_all(&fake).unwrap();
    let record = json!({"format": "nightjar.archive.v1", "origin": origin, "files": []});
    std::fs::write(fake.join("archive.json"), record.to_string()).unwrap();
    std::fs::rename(&staging, &root).unwrap();
    let fake = root.join(fake.strip_prefix(&staging).unwrap());
    nj.until("the archive", || archive_state(&nj, id)["state"] == "done");
    let path = archive_state(&nj, id)["path"].as_str().unwrap().to_string();
    assert_ne!(
        Path::new(&path),
        fake,
        "an archive.json alone was taken for the archive"
    );
    assert_complete(Path::new(&path), &run0(&nj, id)["outputs"]["manifest"]);
    assert!(
        fake.join("archive.json").exists(),
        "what someone else left is not deleted"
    );
}

#[test]
fn the_archive_worker_waits_when_the_store_cannot_record_a_try() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("nas");
    let mut nj = world(&root, "[retention]\nmin_free = \"0B\"\nevery = \"0s\"\n");
    std::fs::create_dir(&nj.state).unwrap();
    let _fs = match crate::harness::SmallFs::mount(&nj.state, "16m") {
        Ok(fs) => fs,
        Err(why) => crate::harness::needs("a tmpfs of its own (root, to mount it)", why),
    };
    std::fs::set_permissions(
        &nj.state,
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    nj.start();
    let id = nj.submit(&["--", "sh", "-c", "echo x > \"${OUTPUT_PATH}/a\""]);
    assert_eq!(nj.wait(id), 0);
    nj.until("a try while the root is missing", || {
        archive_state(&nj, id)["attempts"].as_u64() >= Some(1)
    });
    // The state dir's file system fills up: no try can be recorded.
    let mut fill = std::fs::File::create(nj.state.join("fill")).unwrap();
    let chunk = vec![0u8; 1 << 20];
    while std::io::Write::write_all(&mut fill, &chunk).is_ok() {}
    drop(fill);
    std::fs::create_dir(&root).unwrap();
    std::thread::sleep(std::time::Duration::from_secs(4));
    let log = nj.daemon_log();
    let tries = log.matches("cannot record").count();
    assert!(
        (1..=10).contains(&tries),
        "{tries} tries in 4 s while none could be recorded"
    );
    let _ = std::fs::remove_file(nj.state.join("fill"));
    nj.kill9();
}

#[test]
fn a_run_folder_file_the_task_replaced_by_a_link_is_left_out_not_retried_forever() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("nas");
    std::fs::create_dir(&root).unwrap();
    let mut nj = world(&root, "[retention]\nevery = \"0s\"\n");
    nj.start();
    // The task swaps its run folder's manifest for a link to a file outside.
    let swap = format!(
        "ln -sf /etc/hostname \"{}/runs/$NIGHTJAR_RUN_ID/manifest.json\" && echo x > \"${{OUTPUT_PATH}}/a\"",
        nj.state.display()
    );
    let id = nj.submit(&["--name", "t", "--project", "p", "--", "sh", "-c", &swap]);
    assert_eq!(nj.wait(id), 0);
    let run_dir = run0(&nj, id)["run_dir"].as_str().unwrap().to_string();
    assert!(
        std::fs::symlink_metadata(Path::new(&run_dir).join("manifest.json"))
            .unwrap()
            .file_type()
            .is_symlink(),
        "the task did swap it"
    );
    assert_archived_first_try(&nj, id);
    let dir = finals(&root).pop().unwrap();
    assert!(
        !dir.join("manifest.json").exists(),
        "a link is never followed"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("outputs/a")).unwrap(),
        "x\n"
    );
}
