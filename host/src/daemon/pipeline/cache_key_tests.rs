use std::collections::BTreeMap;
use std::path::PathBuf;

use super::*;
use nightjar_core::api::manifest::{EnvironmentRecord, GitRecord, InputRecord, Manifest, Phase};

fn spec() -> TaskSpec {
    serde_json::from_value(serde_json::json!({
        "name": "prep", "project": "p", "command": {"shell": "prep ${INPUT_PATH}"},
        "workdir": "/w", "env": {"A": "1"}, "inputs": ["/w/in.csv"], "output": null,
        "priority": "normal", "resources": {}, "retry": {}, "params": {}, "cache": true
    }))
    .unwrap()
}

fn manifest(sha: &str) -> Manifest {
    let mut m = Manifest::new(Phase::Start, 0, PathBuf::from("/w"));
    m.git = GitRecord {
        repo: Some("/w".into()),
        commit: Some("abc".into()),
        dirty: Some(false),
        ..GitRecord::default()
    };
    m.inputs = vec![InputRecord {
        path: "/w/in.csv".into(),
        kind: "file".into(),
        sha256: Some(sha.into()),
        ..InputRecord::default()
    }];
    m
}

fn env() -> BTreeMap<String, String> {
    BTreeMap::from([("PATH".into(), "/usr/bin".into()), ("A".into(), "1".into())])
}

#[test]
fn the_same_world_gives_the_same_key_and_queueing_fields_do_not_count() {
    let a = key(&spec(), &manifest("s1"), &env(), None, 1000).unwrap();
    let mut other = spec();
    other.name = "prep-again".into();
    other.priority = crate::task::model::Priority::Urgent;
    other.retry.max_attempts = 3;
    assert_eq!(key(&other, &manifest("s1"), &env(), None, 1000).unwrap(), a);
}

#[test]
fn a_changed_input_command_env_commit_user_or_seed_changes_the_key() {
    let a = key(&spec(), &manifest("s1"), &env(), None, 1000).unwrap();
    assert_ne!(
        key(&spec(), &manifest("s2"), &env(), None, 1000).unwrap(),
        a,
        "input"
    );
    assert_ne!(
        key(&spec(), &manifest("s1"), &env(), None, 1001).unwrap(),
        a,
        "owner"
    );
    let mut s = spec();
    s.command = crate::task::model::CommandSpec::Shell("prep --fast ${INPUT_PATH}".into());
    assert_ne!(
        key(&s, &manifest("s1"), &env(), None, 1000).unwrap(),
        a,
        "command"
    );
    let mut s = spec();
    s.seed = Some(7);
    assert_ne!(
        key(&s, &manifest("s1"), &env(), None, 1000).unwrap(),
        a,
        "seed"
    );
    let mut e = env();
    e.insert("PATH".into(), "/opt/bin:/usr/bin".into());
    assert_ne!(
        key(&spec(), &manifest("s1"), &e, None, 1000).unwrap(),
        a,
        "daemon env"
    );
    let mut m = manifest("s1");
    m.git.commit = Some("def".into());
    assert_ne!(key(&spec(), &m, &env(), None, 1000).unwrap(), a, "commit");
}

#[test]
fn a_name_the_command_reads_counts() {
    let mut s = spec();
    s.command = crate::task::model::CommandSpec::Shell("prep ${TASK_NAME}".into());
    let a = key(&s, &manifest("s1"), &env(), None, 1000).unwrap();
    s.name = "other".into();
    assert_ne!(key(&s, &manifest("s1"), &env(), None, 1000).unwrap(), a);
}

#[test]
fn a_dirty_tree_an_unreadable_repo_or_an_unhashed_input_has_no_key() {
    let mut m = manifest("s1");
    m.git.dirty = Some(true);
    let e = key(&spec(), &m, &env(), None, 1000).unwrap_err();
    assert!(e.contains("uncommitted changes"), "{e}");
    let mut m = manifest("s1");
    m.git.dirty = None;
    m.git.note = Some("git status timed out after 5s".into());
    let e = key(&spec(), &m, &env(), None, 1000).unwrap_err();
    assert!(e.contains("timed out"), "{e}");
    let mut m = manifest("s1");
    m.inputs[0].sha256 = None;
    m.inputs[0].kind = "unreadable".into();
    let e = key(&spec(), &m, &env(), None, 1000).unwrap_err();
    assert!(e.contains("/w/in.csv is unreadable"), "{e}");
    // Not a repository at all: cached by the inputs alone.
    let mut m = manifest("s1");
    m.git = GitRecord::default();
    assert!(key(&spec(), &m, &env(), None, 1000).is_ok());
}

#[test]
fn a_container_image_counts_by_its_id_and_an_unknown_id_has_no_key() {
    let image = |id: Option<&str>| EnvironmentRecord {
        kind: "container".into(),
        runtime: Some("podman".into()),
        image: Some("localhost/lab:1".into()),
        image_id: id.map(String::from),
        ..EnvironmentRecord::default()
    };
    let a = key(
        &spec(),
        &manifest("s1"),
        &env(),
        Some(&image(Some("aaa"))),
        1000,
    )
    .unwrap();
    let b = key(
        &spec(),
        &manifest("s1"),
        &env(),
        Some(&image(Some("bbb"))),
        1000,
    )
    .unwrap();
    assert_ne!(a, b, "the same tag built again is another image");
    let e = key(&spec(), &manifest("s1"), &env(), Some(&image(None)), 1000).unwrap_err();
    assert!(e.contains("localhost/lab:1"), "{e}");
}
