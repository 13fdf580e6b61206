//! Reproducibility manifests end to end: a real git repository made here
//! (clean and dirty), real input files hashed once and not again, inputs
//! changed between submit and start (warn and refuse), `show --manifest`.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime};

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::harness::{Nj, read};

/// Runs git in `dir` (as a person would), asserting success; its stdout.
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.org"])
        .args(args)
        .output()
        .expect("run git");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Writes `body` to `path` and sets its mtime an hour back.
pub(crate) fn settled(path: &Path, body: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, body).unwrap();
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(3600))
        .unwrap();
}

/// A file changed less than 2 s ago is hashed but not cached (its mtime
/// could repeat): the tests let their inputs settle first.
pub(crate) fn let_settle() {
    std::thread::sleep(Duration::from_millis(2300));
}

/// `git diff HEAD` as the manifest hashes it (binary, no external diff or
/// textconv, no colour).
fn diff_head(repo: &Path) -> Vec<u8> {
    Command::new("git")
        .arg("-C")
        .arg(repo)
        .args([
            "diff",
            "HEAD",
            "--binary",
            "--no-ext-diff",
            "--no-textconv",
            "--no-color",
        ])
        .output()
        .expect("run git diff")
        .stdout
}

pub(crate) fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A repository on branch `exp` with `train.sh` and `data/a.csv` committed,
/// and a remote whose URL holds a token.
fn repo(nj: &Nj) -> std::path::PathBuf {
    let repo = nj.path("repo");
    git(&repo, &["init", "-q", "-b", "exp"]);
    std::fs::write(repo.join("train.sh"), "echo run\n").unwrap();
    settled(&repo.join("data/a.csv"), b"x,y\n1,2\n");
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "first"]);
    git(
        &repo,
        &[
            "remote",
            "add",
            "origin",
            "https://someone:tok-777777@git.example.org/lab/exp.git",
        ],
    );
    repo
}

const TASK: &str = r#"name = "m"
command = "cat data/a.csv > /dev/null && echo ok"
inputs = ["data/a.csv"]
env = { API_TOKEN = "s3cret-value-1", CURL_OPTS = "-H x:s3cret-value-1", DB_URL = "postgres://lab:pw-12345@db/x", OMP_NUM_THREADS = "2" }
"#;

#[test]
fn manifests_record_git_inputs_env_and_machine_at_submit_and_start() {
    let mut nj = Nj::new("");
    let repo = repo(&nj);
    let head = git(&repo, &["rev-parse", "HEAD"]);
    // Dirty: a tracked file changed.
    std::fs::write(repo.join("train.sh"), "echo run twice\n").unwrap();
    let diff = diff_head(&repo);
    std::fs::write(repo.join("task.toml"), TASK).unwrap();
    let_settle();
    nj.start();
    let task = repo.join("task.toml");
    let id = nj.submit(&[task.to_str().unwrap()]);
    assert_eq!(nj.wait(id), 0);
    let d = nj.show(id);
    let sub = &d["manifests"]["submit"];
    assert_eq!(sub["phase"], "submit");
    assert_eq!(sub["format"], "nightjar.manifest.v1");
    let g = &sub["git"];
    assert_eq!(g["commit"], head.as_str());
    assert_eq!(g["branch"], "exp");
    assert_eq!(g["dirty"], true);
    assert_eq!(g["changed_files"], 1);
    assert_eq!(g["diff_sha256"], sha256(&diff).as_str());
    assert_eq!(g["remote"], "https://git.example.org/lab/exp.git");
    let input = &sub["inputs"][0];
    assert_eq!(input["sha256"], sha256(b"x,y\n1,2\n").as_str());
    assert_eq!(
        (&input["size"], &input["hashed_now"]),
        (&Value::from(8), &Value::from(true))
    );
    assert_eq!(sub["stats"]["hashed"], 1);
    // The resolved spec with its defaults, secrets redacted.
    assert_eq!(sub["spec"]["priority"], "normal");
    assert_eq!(sub["spec"]["retry"]["max_attempts"], 1);
    assert_eq!(sub["env"]["API_TOKEN"], "<redacted>");

    let run = &d["manifests"]["runs"][0];
    assert_eq!(run["phase"], "start");
    assert_eq!(run["run"], d["runs"][0]["id"]);
    assert_eq!(run["git"]["commit"], head.as_str());
    assert_eq!(run["git"]["diff_sha256"], sha256(&diff).as_str());
    // Unchanged since submit: a stat, not a read.
    assert_eq!(run["inputs"][0]["hashed_now"], false);
    assert_eq!(run["inputs"][0]["sha256"], input["sha256"]);
    assert_eq!(
        (&run["stats"]["hashed"], &run["stats"]["cached"]),
        (&Value::from(0), &Value::from(1))
    );
    assert!(run.get("inputs_changed").is_none(), "{run}");
    let env = &run["env"];
    assert_eq!(env["API_TOKEN"], "<redacted>");
    assert_eq!(env["CURL_OPTS"], "-H x:<redacted>");
    assert_eq!(env["DB_URL"], "postgres://lab:<redacted>@db/x");
    assert_eq!(env["OMP_NUM_THREADS"], "2");
    assert_eq!(env["NIGHTJAR_TASK_ID"], id.to_string().as_str());
    assert_eq!(env["CUDA_VISIBLE_DEVICES"], "");
    assert_eq!(run["command"][0], "/bin/sh");
    assert_eq!(run["system"]["nightjar"], env!("CARGO_PKG_VERSION"));
    assert!(
        run["system"]["kernel"]
            .as_str()
            .unwrap()
            .starts_with("Linux ")
    );
    assert_eq!(run["policies"][0]["name"], "priority");
    assert_eq!(run["limits"]["grace_ms"], 1000);

    // The run folder keeps both, without a secret.
    let dir = Path::new(d["runs"][0]["run_dir"].as_str().unwrap()).to_path_buf();
    let file = read(&dir.join("manifest.json"));
    let kept: Value = serde_json::from_str(&file).expect("manifest.json");
    assert_eq!(kept["submit"]["git"]["commit"], head.as_str());
    assert_eq!(kept["start"]["run"], run["run"]);
    for secret in ["s3cret-value-1", "pw-12345", "tok-777777"] {
        assert!(!file.contains(secret), "{secret} in manifest.json");
    }

    // Another task on the same file: its digest comes from the cache.
    let repo_s = repo.to_str().unwrap();
    let id2 = nj.submit(&["--workdir", repo_s, "--input", "data/a.csv", "--", "true"]);
    let sub2 = &nj.show(id2)["manifests"]["submit"];
    assert_eq!(sub2["inputs"][0]["hashed_now"], false);
    assert_eq!(
        (&sub2["stats"]["hashed"], &sub2["stats"]["cached"]),
        (&Value::from(0), &Value::from(1))
    );
    // --verify reads it again.
    let id3 = nj.submit(&[
        "--verify",
        "--workdir",
        repo_s,
        "--input",
        "data/a.csv",
        "--",
        "true",
    ]);
    let sub3 = &nj.show(id3)["manifests"]["submit"];
    assert_eq!(sub3["inputs"][0]["hashed_now"], true);
    assert_eq!(sub3["inputs"][0]["sha256"], input["sha256"]);

    // As text.
    let text = nj.ok(&["show", &id.to_string(), "--manifest"]);
    for want in [
        "manifest at submit",
        "manifest run",
        &format!("{head} on exp"),
        "dirty: 1 tracked file(s) changed",
        &sha256(&diff),
        "unchanged: not read",
        "API_TOKEN=<redacted>",
        "remote     https://git.example.org/lab/exp.git",
        "policy     priority",
    ] {
        assert!(text.contains(want), "`{want}` missing:\n{text}");
    }
    assert!(!text.contains("s3cret-value-1"), "{text}");
    let plain = nj.ok(&["show", &id.to_string()]);
    assert!(plain.contains("manifest   git "), "{plain}");
    let only = nj.json(&["show", &id.to_string(), "--manifest"]);
    assert_eq!(only["runs"][0]["run"], run["run"]);
}

#[test]
fn a_clean_repository_and_a_folder_outside_any_are_told_apart() {
    let mut nj = Nj::new("");
    let repo = repo(&nj);
    nj.start();
    let clean = nj.submit(&["--workdir", repo.to_str().unwrap(), "--", "true"]);
    let plain = nj.submit(&["--", "true"]);
    assert_eq!(nj.wait(clean), 0);
    assert_eq!(nj.wait(plain), 0);
    let g = &nj.show(clean)["manifests"]["runs"][0]["git"];
    assert_eq!(
        (&g["dirty"], &g["diff_sha256"]),
        (&Value::from(false), &Value::Null)
    );
    assert_eq!(g["branch"], "exp");
    let g = &nj.show(plain)["manifests"]["runs"][0]["git"];
    assert_eq!(g["note"], "not a git repository");
    assert_eq!(g["commit"], Value::Null);
}

#[test]
fn a_same_size_edit_between_two_submits_from_a_settled_repository_is_seen() {
    let mut nj = Nj::new("");
    let repo = repo(&nj);
    // Older than the daemon's margin: the first submit's git state is kept.
    std::thread::sleep(Duration::from_millis(3600));
    nj.start();
    let w = repo.to_str().unwrap();
    let first = nj.submit(&["--hold", "--workdir", w, "--", "true"]);
    let second = nj.submit(&["--hold", "--workdir", w, "--", "true"]);
    // Same length, so only the times tell the file changed.
    std::fs::write(repo.join("train.sh"), "echo ran\n").unwrap();
    let third = nj.submit(&["--hold", "--workdir", w, "--", "true"]);
    let git = |id| nj.show(id)["manifests"]["submit"]["git"].clone();
    let (a, b, c) = (git(first), git(second), git(third));
    assert_eq!(a, b, "nothing changed between the first two");
    assert_eq!(a["dirty"], false);
    assert_eq!(
        (&c["dirty"], &c["changed_files"]),
        (&Value::from(true), &Value::from(1))
    );
    let diff = diff_head(&repo);
    assert_eq!(c["diff_sha256"], sha256(&diff).as_str());
}

/// A held task whose input is rewritten before it is released.
fn changed_input(nj: &mut Nj) -> (i64, std::path::PathBuf) {
    let work = nj.path("w");
    let input = work.join("data.csv");
    settled(&input, b"a\n");
    std::fs::write(
        work.join("t.toml"),
        "command = \"cat data.csv\"\ninputs = [\"data.csv\"]\nhold = true\n",
    )
    .unwrap();
    let_settle();
    nj.start();
    let id = nj.submit(&[work.join("t.toml").to_str().unwrap()]);
    std::fs::write(&input, b"b\n").unwrap();
    nj.ok(&["release", &id.to_string()]);
    (id, input)
}

#[test]
fn an_input_changed_since_submit_is_flagged_and_the_run_goes_on_by_default() {
    let mut nj = Nj::new("");
    let (id, input) = changed_input(&mut nj);
    assert_eq!(nj.wait(id), 0, "warn: it runs");
    let d = nj.show(id);
    let c = &d["manifests"]["runs"][0]["inputs_changed"][0];
    assert_eq!(c["path"], input.to_str().unwrap());
    assert_eq!(c["what"], "content changed");
    assert_eq!(c["before"], sha256(b"a\n").as_str());
    assert_eq!(c["after"], sha256(b"b\n").as_str());
    let text = nj.ok(&["show", &id.to_string()]);
    assert!(
        text.contains(&format!(
            "CHANGED input {} since submit: content changed",
            input.display()
        )),
        "{text}"
    );
    assert!(
        text.contains("inputs-changed"),
        "an event names it:\n{text}"
    );
}

#[test]
fn an_input_changed_since_submit_fails_the_run_before_it_starts_when_refused() {
    let mut nj = Nj::new("[manifest]\ninputs_changed = \"refuse\"\n");
    let (id, input) = changed_input(&mut nj);
    assert_ne!(nj.wait(id), 0);
    let d = nj.show(id);
    assert_eq!(d["task"]["state"], "failed");
    let msg = d["runs"][0]["message"].as_str().unwrap();
    assert!(
        msg.contains(&input.display().to_string()) && msg.contains("refuse"),
        "{msg}"
    );
    // It never ran: no output in its log.
    let dir = Path::new(d["runs"][0]["run_dir"].as_str().unwrap()).to_path_buf();
    assert_eq!(read(&dir.join("stdout.log")), "");
    assert!(read(&dir.join("manifest.json")).contains("content changed"));
}
