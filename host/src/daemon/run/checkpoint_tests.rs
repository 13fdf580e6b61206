use std::time::{Duration, SystemTime};

use super::*;
use crate::task::checkpoint::CheckpointSpec;

/// A task in `dir` whose checkpoints are `dir/ck pt/*.pt`, complete at once.
fn task(dir: &std::path::Path, command: CommandSpec, resume: Option<&str>) -> TaskSpec {
    let mut spec: TaskSpec = serde_json::from_value(serde_json::json!({
        "name": "t", "project": "p", "command": command, "workdir": dir,
        "env": {}, "inputs": [], "output": null, "priority": "normal",
        "resources": {}, "retry": {}, "params": {}
    }))
    .unwrap();
    spec.checkpoint = Some(Box::new(CheckpointSpec {
        pattern: "ck pt/*.pt".into(),
        resume: resume.map(String::from),
        settle: Duration::ZERO,
        marker: None,
        signal: "SIGUSR1".into(),
        grace: None,
    }));
    spec
}

fn saved(dir: &std::path::Path, name: &str, age: u64) -> PathBuf {
    let p = dir.join("ck pt").join(name);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    let f = std::fs::File::create(&p).unwrap();
    f.set_modified(SystemTime::now() - Duration::from_secs(age))
        .unwrap();
    p
}

fn values() -> BTreeMap<&'static str, String> {
    BTreeMap::from([("TASK_ID", "7".to_string())])
}

#[test]
fn an_argv_command_gets_the_resume_words_with_the_path_as_one_argument() {
    let d = tempfile::tempdir().unwrap();
    saved(d.path(), "step-1.pt", 20);
    let newest = saved(d.path(), "step-2.pt", 10);
    let spec = task(
        d.path(),
        CommandSpec::Argv(vec!["train".into()]),
        Some("--resume-from ${CHECKPOINT} --task ${TASK_ID}"),
    );
    let (mut argv, mut env) = (vec!["train".to_string()], BTreeMap::new());
    let r = apply(&spec, 2, &values(), &mut argv, &mut env).unwrap();
    assert_eq!(
        r.checkpoint.as_deref(),
        Some(newest.as_path()),
        "{}",
        r.note
    );
    let path = newest.to_str().unwrap().to_string();
    assert_eq!(
        argv,
        vec![
            "train".to_string(),
            "--resume-from".into(),
            path.clone(),
            "--task".into(),
            "7".into()
        ]
    );
    assert_eq!(env["NIGHTJAR_CHECKPOINT"], path);
}

#[test]
fn a_shell_command_gets_the_path_shell_quoted() {
    let d = tempfile::tempdir().unwrap();
    let newest = saved(d.path(), "it's.pt", 10);
    let spec = task(
        d.path(),
        CommandSpec::Shell("python train.py".into()),
        Some("--resume-from ${CHECKPOINT}"),
    );
    let mut argv = spec.command.to_argv();
    let mut env = BTreeMap::new();
    let r = apply(&spec, 3, &values(), &mut argv, &mut env).unwrap();
    assert!(r.checkpoint.is_some(), "{}", r.note);
    let quoted = shell_quote(newest.to_str().unwrap());
    assert_eq!(argv[2], format!("python train.py --resume-from {quoted}"));
    // The shell reads it back as the one path.
    let out = std::process::Command::new("/bin/sh")
        .args(["-c", &format!("printf %s {quoted}")])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        newest.to_str().unwrap()
    );
}

#[test]
fn a_first_attempt_never_resumes_and_no_checkpoint_leaves_the_command() {
    let d = tempfile::tempdir().unwrap();
    let spec = task(
        d.path(),
        CommandSpec::Argv(vec!["train".into()]),
        Some("--resume-from ${CHECKPOINT}"),
    );
    let (mut argv, mut env) = (vec!["train".to_string()], BTreeMap::new());
    let r = apply(&spec, 2, &values(), &mut argv, &mut env).unwrap();
    assert_eq!(r.checkpoint, None);
    assert!(r.note.contains("started without resuming"), "{}", r.note);
    assert_eq!(argv, vec!["train".to_string()]);
    assert!(env.is_empty());
    saved(d.path(), "step-1.pt", 10);
    assert_eq!(apply(&spec, 1, &values(), &mut argv, &mut env), None);
    assert_eq!(argv, vec!["train".to_string()]);
}

#[test]
fn without_resume_only_the_environment_names_the_checkpoint() {
    let d = tempfile::tempdir().unwrap();
    let newest = saved(d.path(), "a.pt", 10);
    let spec = task(d.path(), CommandSpec::Shell("./go".into()), None);
    let mut argv = spec.command.to_argv();
    let mut env = BTreeMap::new();
    apply(&spec, 2, &values(), &mut argv, &mut env).unwrap();
    assert_eq!(argv[2], "./go");
    assert_eq!(env["NIGHTJAR_CHECKPOINT"], newest.to_str().unwrap());
}

#[test]
fn shell_quoting_leaves_plain_paths_bare() {
    assert_eq!(shell_quote("/w/ckpt/step-1.pt"), "/w/ckpt/step-1.pt");
    assert_eq!(shell_quote("a b"), "'a b'");
    assert_eq!(shell_quote("it's"), r"'it'\''s'");
    assert_eq!(shell_quote("$(rm)"), "'$(rm)'");
}

#[test]
fn a_multi_line_shell_script_gets_the_words_on_its_last_line() {
    let d = tempfile::tempdir().unwrap();
    let newest = saved(d.path(), "step-1.pt", 10);
    let script = "echo begin\necho train\n\n".to_string();
    let spec = task(
        d.path(),
        CommandSpec::Shell(script.clone()),
        Some("--resume-from ${CHECKPOINT}"),
    );
    let (mut argv, mut env) = (vec!["/bin/sh".into(), "-c".into(), script], BTreeMap::new());
    apply(&spec, 2, &values(), &mut argv, &mut env).unwrap();
    let out = std::process::Command::new(&argv[0])
        .args(&argv[1..])
        .output()
        .unwrap();
    assert!(out.status.success(), "{argv:?}: {out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("begin\ntrain --resume-from {}\n", newest.display())
    );
}
