//! Failure classes from the real thing, where this machine allows it: a
//! writer that fills a small tmpfs (needs root to mount; skipped with the
//! reason otherwise), and a process killed by the cgroup OOM killer (needs a
//! delegated cgroup v2 memory controller; skipped with the reason `show`
//! gives otherwise).

use crate::harness::{Nj, SmallFs};

#[test]
fn a_writer_that_fills_a_small_file_system_is_disk_full_and_held() {
    let mut nj = Nj::new("[classes]\ndisk_free = \"512KiB\"");
    let small = nj.path("small");
    let _fs = match SmallFs::mount(&small, "1m") {
        Ok(fs) => fs,
        Err(why) => crate::harness::needs("a tmpfs of its own (root, to mount it)", why),
    };
    nj.start();
    let id = nj.submit(&[
        "--workdir",
        small.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        "dd if=/dev/zero of=fill bs=64k count=64",
    ]);
    nj.until("the writer's task is held", || {
        nj.show(id)["task"]["state"].as_str() == Some("held")
    });
    let run = nj.show(id)["runs"][0].clone();
    assert_eq!(run["class"], "disk-full", "{run}");
    let hint = run["message"].as_str().unwrap_or_default();
    assert!(
        hint.contains("No space left on device")
            && hint.contains(&format!(
                "the file system of {} is 100% full",
                small.display()
            )),
        "the hint names the full file system: {hint}"
    );
    // Room again: the disk watch releases it, and it fills the disk again.
    std::fs::remove_file(small.join("fill")).unwrap();
    nj.until("released when there is room", || {
        nj.show(id)["runs"].as_array().is_some_and(|r| r.len() == 2)
    });
}

#[test]
fn a_process_the_cgroup_oom_killer_ends_is_host_oom() {
    let mut nj = Nj::new("");
    nj.start();
    let id = nj.submit(&[
        "--mem",
        "32MiB",
        "--",
        "python3",
        "-c",
        "b = bytearray(512 << 20); print(len(b))",
    ]);
    nj.wait(id);
    let run = nj.show(id)["runs"][0].clone();
    let note = run["sandbox_note"].as_str().unwrap_or_default().to_string();
    if note.contains("memory limit not enforced") {
        // No cgroup v2 memory controller here: the note says so, and the
        // run ran unlimited (its class is its own exit).
        eprintln!("no memory controller here: {note} (the note and the class checked instead)");
        assert_eq!(run["class"], "ok", "{run}");
        return;
    }
    assert_eq!(run["class"], "host-oom", "{run}");
    assert!(
        run["message"]
            .as_str()
            .unwrap_or_default()
            .contains("OOM killer"),
        "{run}"
    );
}
