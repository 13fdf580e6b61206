//! `nightjar rerun` and `nightjar diff` end to end: a real computation
//! (sha256sum of an input file, into the run's output folder) in a git
//! repository made here, rerun to the same output digest; the input
//! changed and committed, the rerun refused, then allowed, and `diff`
//! naming the input, the output and the commit. Then the hostile cases:
//! templates, another task's run, inputs turned into a FIFO, a symlink
//! loop or a folder (a run still running, secrets and a diff too long to
//! print: `rerun_diff_running.rs`).

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness::Nj;
use crate::manifest::{git, let_settle, settled, sha256};

/// The run ids of task `id`, oldest first.
pub(crate) fn runs(nj: &Nj, id: i64) -> Vec<i64> {
    nj.show(id)["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .map(|r| r["id"].as_i64().expect("run id"))
        .collect()
}

/// The output manifest's files of task `id`'s latest run: (path, sha256).
fn outputs(nj: &Nj, id: i64) -> Vec<(String, String)> {
    let d = nj.show(id);
    let run = d["runs"].as_array().and_then(|r| r.last()).cloned();
    let files = run.expect("a run")["outputs"]["manifest"]["files"].clone();
    files
        .as_array()
        .expect("an output manifest")
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_string(),
                f["sha256"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// `rerun ARGS` as text: (exit status, stdout, stderr).
fn rerun(nj: &Nj, args: &[&str]) -> (i32, String, String) {
    let mut a = vec!["rerun"];
    a.extend_from_slice(args);
    let out = nj.cli(&a);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The id a text `rerun` printed first on its line.
fn first_id(stdout: &str) -> i64 {
    stdout
        .split('\t')
        .next()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| panic!("no id first on the line: {stdout:?}"))
}

/// (section, what) of each difference `diff --json` found.
fn differences(d: &Value) -> Vec<(String, String)> {
    d["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .map(|c| {
            (
                c["section"].as_str().unwrap().to_string(),
                c["what"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn rerun_reproduces_the_output_digest_and_diff_names_a_changed_input_output_and_commit() {
    let mut nj = Nj::new("");
    let repo = nj.path("repo");
    git(&repo, &["init", "-q", "-b", "main"]);
    let input = repo.join("data/in.txt");
    settled(&input, b"the same data\n");
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "data"]);
    let_settle();
    nj.start();
    let first = nj.submit(&[
        "--name",
        "digest",
        "--workdir",
        repo.to_str().unwrap(),
        "--input",
        input.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        "sha256sum data/in.txt > ${OUTPUT_PATH}/digest.txt",
    ]);
    assert_eq!(nj.wait(first), 0, "{}", nj.daemon_log());
    let want = format!("{}  data/in.txt\n", sha256(b"the same data\n"));
    let original = outputs(&nj, first);
    assert_eq!(
        original,
        [("digest.txt".to_string(), sha256(want.as_bytes()))]
    );
    let run1 = runs(&nj, first)[0];

    // The rerun: a new task, id first on the line, same output digest.
    let (code, out, err) = rerun(&nj, &[&first.to_string()]);
    assert_eq!(code, 0, "{err}");
    let second = first_id(&out);
    assert!(second > first);
    assert!(
        out.contains(&format!("digest (rerun of task {first}, run {run1})")),
        "{out}"
    );
    assert!(err.is_empty(), "nothing changed, nothing said: {err}");
    assert_eq!(nj.wait(second), 0);
    assert_eq!(
        outputs(&nj, second),
        original,
        "same computation, same digest"
    );
    let d = nj.show(second);
    assert_eq!(
        d["manifests"]["submit"]["rerun_of"],
        serde_json::json!({ "task": first, "run": run1 })
    );
    assert_eq!(d["spec"]["command"], nj.show(first)["spec"]["command"]);
    let submitted = d["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "submitted")
        .expect("submitted event");
    assert_eq!(
        submitted["message"],
        format!("queued; rerun of run {run1} (task {first})").as_str()
    );
    let run2 = runs(&nj, second)[0];
    let same = nj.json(&["diff", &run1.to_string(), &run2.to_string()]);
    assert_eq!(differences(&same), Vec::<(String, String)>::new(), "{same}");
    let text = nj.ok(&["diff", &run1.to_string(), &run2.to_string()]);
    assert!(text.starts_with("no differences between"), "{text}");
    assert!(
        text.contains(
            "same: code, command, workdir, env, inputs, python, gpus, system, policies, outputs"
        ),
        "{text}"
    );

    // The input changed (and committed): refused, naming it and both digests.
    settled(&input, b"other data!!\n");
    git(&repo, &["commit", "-q", "-am", "new data"]);
    let_settle();
    let (code, out, err) = rerun(&nj, &[&first.to_string()]);
    assert_eq!((code, out.as_str()), (1, ""), "{err}");
    let old = &sha256(b"the same data\n")[..12];
    let new = &sha256(b"other data!!\n")[..12];
    for want in [
        input.to_str().unwrap(),
        "content changed",
        old,
        new,
        &format!("run {run1}"),
        "--allow-changed",
    ] {
        assert!(err.contains(want), "`{want}` missing: {err}");
    }
    assert_eq!(
        nj.json(&["ls", "--all"]).as_array().unwrap().len(),
        2,
        "no task queued"
    );

    // --allow-changed: submitted, the change and the new commit said.
    let (code, out, err) = rerun(&nj, &[&first.to_string(), "--allow-changed"]);
    assert_eq!(code, 0, "{err}");
    let third = first_id(&out);
    assert!(
        err.contains(&format!("changed since run {run1}: {}", input.display())),
        "{err}"
    );
    assert!(err.contains("code: the workdir is at commit"), "{err}");
    assert_eq!(nj.wait(third), 0);
    let changed = outputs(&nj, third);
    assert_ne!(changed, original);
    let run3 = runs(&nj, third)[0];
    let d = nj.json(&["diff", &run1.to_string(), &run3.to_string()]);
    let found = differences(&d);
    for want in [
        ("code", "commit"),
        ("inputs", input.to_str().unwrap()),
        ("outputs", "digest.txt"),
    ] {
        assert!(
            found.contains(&(want.0.to_string(), want.1.to_string())),
            "{want:?} missing: {found:?}"
        );
    }
    assert_eq!(found.len(), 3, "nothing else: {found:?}");
    let input_row = d["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["section"] == "inputs")
        .unwrap();
    assert_eq!(input_row["a"], sha256(b"the same data\n").as_str());
    assert_eq!(input_row["b"], sha256(b"other data!!\n").as_str());
    let text = nj.ok(&["diff", &run1.to_string(), &run3.to_string()]);
    let row = text
        .lines()
        .find(|l| l.starts_with("inputs"))
        .unwrap_or_else(|| panic!("no inputs row: {text}"));
    assert!(row.contains(input.to_str().unwrap()) && row.contains(old) && row.contains(new));
    assert!(
        !row.contains(&sha256(b"the same data\n")),
        "digests shortened: {row}"
    );
    assert!(
        text.contains("same: command, workdir, env, python, gpus, system, policies"),
        "{text}"
    );
    // `--run` picks an older run: the third task's own.
    let (code, _, err) = rerun(&nj, &[&third.to_string(), "--run", &run1.to_string()]);
    assert_eq!(code, 1);
    assert!(
        err.contains(&format!(
            "run {run1} is a run of task {first}, not of task {third}"
        )),
        "{err}"
    );
}

/// Polls `rerun ARGS` until it fails (it must not hang); its stderr.
fn refused_quickly(nj: &Nj, args: &[&str]) -> String {
    let t0 = Instant::now();
    let (code, _, err) = rerun(nj, args);
    assert_eq!(code, 1, "{err}");
    assert!(
        t0.elapsed() < Duration::from_secs(20),
        "took {:?}",
        t0.elapsed()
    );
    err
}

#[test]
fn rerun_refuses_templates_foreign_runs_and_inputs_that_became_a_fifo_a_loop_or_a_folder() {
    let mut nj = Nj::new("");
    let work = nj.path("w");
    let files: Vec<_> = ["fifo", "loop", "folder"]
        .iter()
        .map(|n| work.join(format!("{n}.dat")))
        .collect();
    for f in &files {
        settled(f, b"x\n");
    }
    std::fs::write(
        work.join("sweep.toml"),
        "name = \"grid\"\ncommand = \"echo lr=${lr}\"\n[sweep]\nlr = [\"0.1\", \"0.2\"]\n",
    )
    .unwrap();
    let_settle();
    nj.start();
    let mut args = vec!["--workdir", work.to_str().unwrap()];
    for f in &files {
        args.extend(["--input", f.to_str().unwrap()]);
    }
    args.extend(["--", "true"]);
    let task = nj.submit(&args);
    assert_eq!(nj.wait(task), 0);

    // The input now a FIFO, a symlink loop, a folder: refused, never read.
    let path = |f: &Path| f.to_str().unwrap().to_string();
    std::fs::remove_file(&files[0]).unwrap();
    let c = std::ffi::CString::new(path(&files[0])).unwrap();
    // SAFETY: mkfifo on a path this test owns.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    std::fs::remove_file(&files[1]).unwrap();
    std::os::unix::fs::symlink(&files[1], &files[1]).unwrap();
    std::fs::remove_file(&files[2]).unwrap();
    std::fs::create_dir(&files[2]).unwrap();
    let err = refused_quickly(&nj, &[&task.to_string()]);
    for want in [
        format!("{} (was a file, now a fifo", path(&files[0])),
        format!("{} (was a file, now unreadable", path(&files[1])),
        format!("{} (was a file, now a folder", path(&files[2])),
        "3 input(s) differ".to_string(),
    ] {
        assert!(err.contains(&want), "`{want}` missing: {err}");
    }

    // A sweep is refused, naming a member; a member reruns with its own spec.
    let sweep = nj.submit(&[work.join("sweep.toml").to_str().unwrap()]);
    assert_eq!(nj.wait(sweep), 0);
    let members: Vec<i64> = nj.show(sweep)["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_i64().unwrap())
        .collect();
    let err = refused_quickly(&nj, &[&sweep.to_string()]);
    assert!(err.contains(&format!("task {sweep} is a sweep")), "{err}");
    assert!(
        err.contains(&format!("`nightjar rerun {}`", members[1])),
        "{err}"
    );
    let again = nj.json(&["rerun", &members[1].to_string(), "--name", "lr2"]);
    let id = again["id"].as_i64().unwrap();
    assert_eq!(again["rerun_of"]["task"], members[1]);
    let d = nj.show(id);
    assert_eq!(d["spec"]["command"]["shell"], "echo lr=0.2");
    assert_eq!(
        (d["task"]["name"].as_str(), d["task"]["kind"].as_str()),
        (Some("lr2"), Some("task"))
    );
    assert_eq!(d["task"]["parent_id"], Value::Null, "a plain task");

    // A recurring template is refused; another task's run is refused.
    let template = nj.submit(&["--schedule", "daily@03:00", "--", "true"]);
    let err = refused_quickly(&nj, &[&template.to_string()]);
    assert!(err.contains("is a recurring template"), "{err}");
    let foreign = runs(&nj, members[0])[0];
    let err = refused_quickly(&nj, &[&task.to_string(), "--run", &foreign.to_string()]);
    assert!(
        err.contains(&format!(
            "run {foreign} is a run of task {}, not of task {task}",
            members[0]
        )),
        "{err}"
    );
    // Nothing there: not found (exit 4), naming what.
    let out = nj.cli(&["rerun", "9999"]);
    assert_eq!(out.status.code(), Some(4));
    let out = nj.cli(&["diff", "9999", &foreign.to_string()]);
    assert_eq!(out.status.code(), Some(4));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no run with id 9999"));
    let out = nj.cli(&["rerun", &task.to_string(), "--run", "9999"]);
    assert_eq!(out.status.code(), Some(4));
}
