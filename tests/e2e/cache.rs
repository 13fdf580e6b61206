//! Seeds and the result cache, end to end: `NIGHTJAR_SEED` from the task or
//! generated and recorded, and given again by `rerun`; a task with
//! `cache = true` completed from an earlier run with the same cache key
//! (outputs hard-linked, or copied), and run for real when an input
//! changed, the git tree is dirty, the earlier outputs are gone, or
//! `--no-cache` says so.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::harness::Nj;
use crate::manifest::{git, settled};

/// The latest run of task `id`.
fn last_run(nj: &Nj, id: i64) -> Value {
    nj.show(id)["runs"]
        .as_array()
        .and_then(|r| r.last())
        .cloned()
        .expect("a run")
}

#[test]
fn each_run_gets_a_recorded_seed_and_a_rerun_gets_it_again() {
    let mut nj = Nj::new("");
    nj.start();
    let fixed = nj.submit(&["--seed", "42", "--", "sh", "-c", "echo seed=$NIGHTJAR_SEED"]);
    assert_eq!(nj.wait(fixed), 0);
    assert_eq!(last_run(&nj, fixed)["seed"], 42);
    assert!(nj.ok(&["logs", &fixed.to_string()]).contains("seed=42"));
    let text = nj.ok(&["show", &fixed.to_string()]);
    assert!(text.contains("seed       42 (every run)"), "{text}");

    let drawn = nj.submit(&["--", "sh", "-c", "echo seed=$NIGHTJAR_SEED"]);
    assert_eq!(nj.wait(drawn), 0);
    let seed = last_run(&nj, drawn)["seed"]
        .as_u64()
        .expect("a recorded seed");
    assert!(seed < 1 << 32, "generated seeds suit numpy: {seed}");
    let logged = nj.ok(&["logs", &drawn.to_string()]);
    assert!(logged.contains(&format!("seed={seed}")), "{logged}");
    let manifest = &nj.show(drawn)["manifests"]["runs"][0];
    assert_eq!(manifest["seed"], seed, "kept in the start manifest");

    let out = nj.ok(&["rerun", &drawn.to_string()]);
    let again: i64 = out.split_whitespace().next().unwrap().parse().unwrap();
    assert_eq!(nj.wait(again), 0);
    assert_eq!(
        last_run(&nj, again)["seed"],
        seed,
        "the rerun draws the same numbers"
    );

    let big = nj.cli(&["submit", "--seed", "9223372036854775808", "--", "true"]);
    assert!(!big.status.success());
    assert!(String::from_utf8_lossy(&big.stderr).contains("seed 9223372036854775808 is too large"));
}

/// A git repository with `in.txt` committed and a task file that counts
/// its real runs in `runs.log` (outside the output) and copies the input
/// into `out/TASK_ID/`.
fn project(nj: &Nj) -> PathBuf {
    let repo = nj.path("proj");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    settled(&repo.join("in.txt"), b"one\n");
    std::fs::write(repo.join(".gitignore"), "out/\nruns.log\n").unwrap();
    std::fs::write(
        repo.join("prep.toml"),
        "command = \"echo ran >> runs.log; cp in.txt ${OUTPUT_PATH}/copy.txt\"\n\
         inputs = [\"in.txt\"]\noutput = \"out/${TASK_ID}\"\ncache = true\n",
    )
    .unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "one"]);
    repo
}

fn real_runs(repo: &Path) -> usize {
    std::fs::read_to_string(repo.join("runs.log"))
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

fn submit(nj: &Nj, repo: &Path, extra: &[&str]) -> i64 {
    let file = repo.join("prep.toml");
    let mut args = vec!["-f", file.to_str().unwrap()];
    args.extend_from_slice(extra);
    let id = nj.submit(&args);
    assert_eq!(nj.wait(id), 0, "task {id} succeeds");
    id
}

#[test]
fn a_cached_task_is_completed_from_the_earlier_run_until_something_it_reads_changes() {
    let mut nj = Nj::new("");
    nj.start();
    let repo = project(&nj);
    let first = submit(&nj, &repo, &[]);
    assert_eq!(real_runs(&repo), 1);
    let source = last_run(&nj, first);
    assert!(source["cached_from"].is_null());

    let cached = submit(&nj, &repo, &[]);
    assert_eq!(real_runs(&repo), 1, "the second did not run");
    let run = last_run(&nj, cached);
    assert_eq!(run["cached_from"], source["id"]);
    assert_eq!(run["class"], "ok");
    assert_eq!(
        run["seed"], source["seed"],
        "the outputs were made with that seed"
    );
    let src = repo.join(format!("out/{first}/copy.txt"));
    let dst = repo.join(format!("out/{cached}/copy.txt"));
    assert_eq!(std::fs::read(&dst).unwrap(), b"one\n");
    assert_eq!(
        std::fs::metadata(&src).unwrap().ino(),
        std::fs::metadata(&dst).unwrap().ino(),
        "hard-linked by default"
    );
    let text = nj.ok(&["show", &cached.to_string()]);
    assert!(
        text.contains(&format!("succeeded (cached from run {})", source["id"])),
        "{text}"
    );
    let log = nj.ok(&["logs", &cached.to_string()]);
    assert!(log.contains("completed from the result cache"), "{log}");

    // `--no-cache` runs for real; `retry --no-cache` runs a cached one again.
    submit(&nj, &repo, &["--no-cache"]);
    assert_eq!(real_runs(&repo), 2);
    nj.ok(&["retry", "--no-cache", &cached.to_string()]);
    assert_eq!(nj.wait(cached), 0);
    assert_eq!(real_runs(&repo), 3);
    assert!(last_run(&nj, cached)["cached_from"].is_null());
    let plain = nj.cli(&["retry", &first.to_string()]);
    assert!(
        !plain.status.success(),
        "a succeeded task is not retried without --no-cache"
    );

    // A changed input is a new key.
    settled(&repo.join("in.txt"), b"second\n");
    git(&repo, &["commit", "-qam", "two"]);
    let changed = submit(&nj, &repo, &[]);
    assert_eq!(real_runs(&repo), 4);
    let out = repo.join(format!("out/{changed}/copy.txt"));
    assert_eq!(std::fs::read(out).unwrap(), b"second\n");

    // A dirty tree never hits, and says why.
    std::fs::write(
        repo.join("prep.toml"),
        std::fs::read(repo.join("prep.toml"))
            .unwrap()
            .into_iter()
            .chain(b"# local edit\n".iter().copied())
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let dirty = submit(&nj, &repo, &[]);
    assert_eq!(real_runs(&repo), 5);
    let events = nj.show(dirty)["events"].to_string();
    assert!(events.contains("uncommitted changes"), "{events}");
    git(&repo, &["checkout", "-q", "prep.toml"]);

    // The earlier outputs removed: no hit, a real run.
    for id in [changed, dirty] {
        std::fs::remove_dir_all(repo.join(format!("out/{id}"))).unwrap();
    }
    let after_gone = submit(&nj, &repo, &[]);
    assert_eq!(real_runs(&repo), 6, "nothing left to take the outputs from");
    assert!(last_run(&nj, after_gone)["cached_from"].is_null());
}

#[test]
fn copy_mode_gives_a_cached_task_files_of_its_own() {
    let mut nj = Nj::new("[cache]\noutputs = \"copy\"\n");
    nj.start();
    let repo = project(&nj);
    let first = submit(&nj, &repo, &[]);
    let cached = submit(&nj, &repo, &[]);
    assert_eq!(real_runs(&repo), 1);
    let src = repo.join(format!("out/{first}/copy.txt"));
    let dst = repo.join(format!("out/{cached}/copy.txt"));
    assert_eq!(std::fs::read(&dst).unwrap(), b"one\n");
    assert_ne!(
        std::fs::metadata(&src).unwrap().ino(),
        std::fs::metadata(&dst).unwrap().ino()
    );
}

/// A cached completion keeps to `output_roots` as a real run does: an
/// output folder whose parent became a symlink out of the roots after the
/// submit gets nothing written there.
#[test]
fn a_cached_copy_into_an_output_swapped_out_of_output_roots_is_refused() {
    let mut nj = Nj::new("");
    let root = nj.dir.path().join("proj");
    let text = std::fs::read_to_string(&nj.config).unwrap();
    std::fs::write(
        &nj.config,
        format!("output_roots = [\"{}\"]\n{text}", root.display()),
    )
    .unwrap();
    nj.start();
    let repo = project(&nj);
    submit(&nj, &repo, &[]);
    // `submit --hold -f FILE` does not hold: the file says so itself.
    let file = repo.join("held.toml");
    let text = std::fs::read_to_string(repo.join("prep.toml")).unwrap();
    std::fs::write(&file, format!("hold = true\n{text}")).unwrap();
    let held = nj.submit(&["-f", file.to_str().unwrap()]);
    // The earlier outputs move out of the roots; `out` now leads there.
    let away = nj.path("away");
    std::fs::remove_dir(&away).unwrap();
    std::fs::rename(repo.join("out"), &away).unwrap();
    std::os::unix::fs::symlink(&away, repo.join("out")).unwrap();
    nj.ok(&["release", &held.to_string()]);
    assert_ne!(nj.wait(held), 0, "{}", nj.daemon_log());
    assert!(
        !away.join(held.to_string()).exists(),
        "outputs written outside output_roots"
    );
    let run = last_run(&nj, held);
    assert!(
        run["message"]
            .as_str()
            .unwrap_or("")
            .contains("outside output_roots"),
        "{run}"
    );
}
