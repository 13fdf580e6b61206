//! Retention: `nightjar gc` deletes ended tasks past their age with their
//! runs, events and folders, keeps the rest, and the database stops growing
//! once old work is collected (its pages are reused).

use std::time::Duration;

use crate::harness::Nj;

/// A sweep file of `n` trivial members in `nj`'s work folder; returns its path.
fn sweep(nj: &Nj, name: &str, n: usize) -> String {
    let values: Vec<String> = (0..n).map(|i| i.to_string()).collect();
    let path = nj.path("work").join(format!("{name}.toml"));
    std::fs::write(
        &path,
        format!(
            "name = \"{name}\"\ncommand = \"true ${{i}}\"\n[sweep]\ni = [{}]\n",
            values.join(", ")
        ),
    )
    .unwrap();
    path.display().to_string()
}

fn db_size(nj: &Nj) -> u64 {
    ["nightjar.db", "nightjar.db-wal"]
        .iter()
        .filter_map(|f| std::fs::metadata(nj.state.join(f)).ok())
        .map(|m| m.len())
        .sum()
}

#[test]
fn gc_deletes_old_ended_tasks_with_their_folders_and_keeps_the_rest() {
    let mut nj = Nj::new("slots = 2\n[retention]\nended = \"1s\"\nfailed = \"1h\"\nevery = \"0s\"");
    nj.start();
    let ok = nj.submit(&["--", "sh", "-c", "echo out"]);
    let bad = nj.submit(&["--", "false"]);
    assert_eq!(nj.wait(ok), 0);
    assert_eq!(nj.wait(bad), 1);
    let run_dir = nj.show(ok)["runs"][0]["run_dir"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(std::path::Path::new(&run_dir).exists());
    std::thread::sleep(Duration::from_millis(1200));
    let dry = nj.ok(&["gc", "--dry-run"]);
    assert!(dry.contains("would delete 1 tasks"), "{dry}");
    assert!(
        nj.cli(&["show", &ok.to_string()]).status.success(),
        "a dry run deletes nothing"
    );
    let done = nj.json(&["gc"]);
    assert_eq!(done["tasks"], 1, "{done}");
    assert!(
        !nj.cli(&["show", &ok.to_string()]).status.success(),
        "the old success is gone"
    );
    assert!(
        !std::path::Path::new(&run_dir).exists(),
        "with its run folder"
    );
    assert_eq!(
        nj.show(bad)["task"]["state"],
        "failed",
        "a failure is kept until retention.failed"
    );
}

#[test]
fn the_database_stops_growing_once_old_work_is_collected() {
    let mut nj = Nj::new(
        "slots = 2\n[plugins]\nchain = [\"priority\", \"fair-share\", \"thermal\"]\n[retention]\nended = \"1s\"\nfailed = \"1s\"\nevery = \"0s\"",
    );
    nj.start();
    let mut sizes = Vec::new();
    for round in 0..3 {
        let file = sweep(&nj, &format!("round{round}"), 300);
        let id = nj.json(&["submit", &file])[0]["id"].as_i64().unwrap();
        assert_eq!(nj.wait(id), 0);
        std::thread::sleep(Duration::from_millis(1200));
        let r = nj.json(&["gc"]);
        assert_eq!(r["tasks"], 301, "300 members and their sweep: {r}");
        sizes.push(db_size(&nj));
    }
    assert!(
        sizes[2] <= sizes[0] + (sizes[0] / 5).max(256 << 10),
        "the third round reuses the pages of the first: {sizes:?}"
    );
}
