use super::*;
use crate::api::manifest::{GitRecord, InputRecord};
use crate::api::manifest::{GpuDevice, GpuRecord, Phase, PolicyRecord, PythonEnv, SystemInfo};
use crate::api::outputs::{FORMAT, OutputFile};

fn input(path: &str, sha: Option<&str>, kind: &str, size: u64) -> InputRecord {
    InputRecord {
        path: path.into(),
        kind: kind.into(),
        size: Some(size),
        sha256: sha.map(String::from),
        ..InputRecord::default()
    }
}

fn hex(c: char) -> String {
    std::iter::repeat_n(c, 64).collect()
}

/// A run of task 1 in `/w` at commit `c…`, one input, one output, on a H200.
fn run(id: i64) -> RunRecord {
    let mut m = Manifest::new(Phase::Start, 0, "/w".into());
    m.run = Some(id);
    m.git = GitRecord {
        repo: Some("/w".into()),
        commit: Some("c".repeat(40)),
        branch: Some("main".into()),
        dirty: Some(false),
        ..GitRecord::default()
    };
    let out = format!("/state/runs/{id}/output");
    m.command = vec![
        "/bin/sh".into(),
        "-c".into(),
        format!("sha256sum in.txt > {out}/digest.txt"),
    ];
    m.env = [
        ("NIGHTJAR_RUN_ID", id.to_string()),
        ("NIGHTJAR_TASK_ID", id.to_string()),
        ("NIGHTJAR_ATTEMPT", "1".into()),
        ("NIGHTJAR_OUTPUT_PATH", out.clone()),
        ("API_TOKEN", "<redacted>".into()),
        ("OMP_NUM_THREADS", "2".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    m.inputs = vec![input("/w/in.txt", Some(&hex('a')), "file", 12)];
    m.python = Some(PythonEnv {
        kind: "venv".into(),
        prefix: "/w/.venv".into(),
        packages: vec!["numpy==1.26.0".into(), "torch==2.3.0".into()],
        source: "pip freeze".into(),
        note: None,
    });
    m.system = Some(SystemInfo {
        hostname: "gpu1".into(),
        kernel: "Linux 6.8".into(),
        nightjar: "0.3.0".into(),
    });
    m.gpus = Some(GpuRecord {
        driver: Some("550.54".into()),
        cuda: Some("12.4".into()),
        devices: vec![GpuDevice {
            index: 0,
            name: Some("NVIDIA H200".into()),
            uuid: Some(format!("GPU-{id}")),
        }],
    });
    m.policies = vec![PolicyRecord {
        name: "fair-share".into(),
        source: "built in".into(),
        sha256: Some(hex('f')),
        api_version: None,
    }];
    RunRecord {
        run: id,
        task: id,
        state: "finished".into(),
        start: m,
        outputs: Some(OutputManifest {
            format: FORMAT.into(),
            run: id,
            folder: out.into(),
            captured_at: 0,
            files: vec![OutputFile {
                path: "digest.txt".into(),
                size: 75,
                sha256: hex('d'),
            }],
            omitted: 0,
            skipped: vec![],
            note: None,
        }),
    }
}

fn rows(d: &RunDiff) -> Vec<(Section, &str, ChangeKind)> {
    d.changes
        .iter()
        .map(|c| (c.section, c.what.as_str(), c.change))
        .collect()
}

#[test]
fn two_runs_of_the_same_work_differ_in_nothing_however_their_ids_and_folders_differ() {
    let d = diff(&run(5), &run(9));
    assert_eq!(
        d.changes,
        vec![],
        "per-run ids and output folders are not differences"
    );
    assert_eq!(d.same, Section::ALL.to_vec());
    assert_eq!((d.a.run, d.b.run), (5, 9));
}

#[test]
fn a_changed_input_and_output_are_named_by_path_with_both_hashes() {
    let (a, mut b) = (run(5), run(9));
    b.start.inputs[0].sha256 = Some(hex('b'));
    b.start
        .inputs
        .push(input("/w/extra.csv", Some(&hex('e')), "file", 3));
    let o = b.outputs.as_mut().unwrap();
    o.files[0].sha256 = hex('9');
    o.files.insert(
        0,
        OutputFile {
            path: "a.log".into(),
            size: 1,
            sha256: hex('1'),
        },
    );
    let d = diff(&a, &b);
    assert_eq!(
        rows(&d),
        [
            (Section::Inputs, "/w/extra.csv", ChangeKind::Added),
            (Section::Inputs, "/w/in.txt", ChangeKind::Changed),
            (Section::Outputs, "a.log", ChangeKind::Added),
            (Section::Outputs, "digest.txt", ChangeKind::Changed),
        ]
    );
    let input = &d.changes[1];
    assert_eq!(
        (input.a.clone(), input.b.clone()),
        (Some(hex('a')), Some(hex('b')))
    );
    assert!(!d.same.contains(&Section::Inputs) && !d.same.contains(&Section::Outputs));
    assert!(d.same.contains(&Section::Code));
}

#[test]
fn an_input_that_became_a_fifo_or_vanished_reads_as_its_kind() {
    let (a, mut b) = (run(5), run(9));
    b.start.inputs[0] = input("/w/in.txt", None, "fifo", 0);
    let d = diff(&a, &b);
    assert_eq!(d.changes[0].b.as_deref(), Some("<fifo>"));
    b.start.inputs.clear();
    let d = diff(&a, &b);
    assert_eq!(
        rows(&d),
        [(Section::Inputs, "/w/in.txt", ChangeKind::Removed)]
    );
}

#[test]
fn code_rows_name_commit_dirty_and_diff_hash() {
    let (a, mut b) = (run(5), run(9));
    b.start.git.commit = Some("d".repeat(40));
    b.start.git.dirty = Some(true);
    b.start.git.diff_sha256 = Some(hex('7'));
    let d = diff(&a, &b);
    assert_eq!(
        rows(&d),
        [
            (Section::Code, "commit", ChangeKind::Changed),
            (Section::Code, "dirty", ChangeKind::Changed),
            (Section::Code, "diff sha256", ChangeKind::Added),
        ]
    );
    assert_eq!(d.changes[1].a.as_deref(), Some("clean"));
}

#[test]
fn env_keys_added_removed_changed_and_redacted_values_stay_redacted() {
    let (a, mut b) = (run(5), run(9));
    b.start.env.remove("OMP_NUM_THREADS");
    b.start.env.insert("SEED".into(), "7".into());
    b.start.env.insert("HF_TOKEN".into(), "<redacted>".into());
    let d = diff(&a, &b);
    assert_eq!(
        rows(&d),
        [
            (Section::Env, "HF_TOKEN", ChangeKind::Added),
            (Section::Env, "OMP_NUM_THREADS", ChangeKind::Removed),
            (Section::Env, "SEED", ChangeKind::Added),
        ]
    );
    assert_eq!(d.changes[0].b.as_deref(), Some("<redacted>"));
    let text = serde_json::to_string(&d).unwrap();
    assert!(
        !text.contains("API_TOKEN"),
        "equal redacted values are no row: {text}"
    );
}

#[test]
fn a_command_that_really_differs_is_a_row_with_the_folders_put_back() {
    let (a, mut b) = (run(5), run(9));
    b.start.command[2] = "sha256sum in.txt other.txt > /state/runs/9/output/digest.txt".into();
    let d = diff(&a, &b);
    assert_eq!(rows(&d), [(Section::Command, "argv", ChangeKind::Changed)]);
    assert_eq!(
        d.changes[0].b.as_deref(),
        Some("/bin/sh -c sha256sum in.txt other.txt > ${OUTPUT_PATH}/digest.txt")
    );
}

#[test]
fn packages_gpus_system_and_policies_are_compared_by_name() {
    let (a, mut b) = (run(5), run(9));
    let p = b.start.python.as_mut().unwrap();
    p.packages = vec!["NumPy==2.0.0".into(), "scipy==1.13".into()];
    let g = b.start.gpus.as_mut().unwrap();
    g.driver = Some("555.1".into());
    g.devices[0].name = Some("NVIDIA A100".into());
    b.start.system.as_mut().unwrap().kernel = "Linux 6.9".into();
    b.start.policies[0].sha256 = Some(hex('e'));
    let d = diff(&a, &b);
    assert_eq!(
        rows(&d),
        [
            (Section::Python, "numpy", ChangeKind::Changed),
            (Section::Python, "scipy", ChangeKind::Added),
            (Section::Python, "torch", ChangeKind::Removed),
            (Section::Gpus, "driver", ChangeKind::Changed),
            (Section::Gpus, "models", ChangeKind::Changed),
            (Section::System, "kernel", ChangeKind::Changed),
            (Section::Policies, "fair-share", ChangeKind::Changed),
        ]
    );
    assert_eq!(d.changes[0].b.as_deref(), Some("NumPy==2.0.0"));
    assert_eq!(sections::package_name("torch @ file:///x"), "torch");
    assert_eq!(sections::package_name("cudatoolkit=11.8=h1"), "cudatoolkit");
}

#[test]
fn runs_without_output_manifests_are_said_so_and_not_counted_same() {
    let (a, mut b) = (run(5), run(9));
    b.outputs = None;
    let d = diff(&a, &b);
    assert_eq!(
        rows(&d),
        [(Section::Outputs, "output manifest", ChangeKind::Removed)]
    );
    assert!(
        d.notes[0].contains("run 9 has no output manifest"),
        "{:?}",
        d.notes
    );
    let mut a = a;
    a.outputs = None;
    b.state = "running".into();
    let d = diff(&a, &b);
    assert!(d.changes.is_empty());
    assert!(
        !d.same.contains(&Section::Outputs),
        "not compared is not same"
    );
    assert!(d.notes[0].contains("has not ended"), "{:?}", d.notes);
}

#[test]
fn digests_and_commits_are_shortened_for_tables_and_other_text_is_kept() {
    assert_eq!(shorten(&hex('a')), "aaaaaaaaaaaa");
    assert_eq!(
        shorten(&format!("{} (12 B)", "c".repeat(40))),
        "cccccccccccc (12 B)"
    );
    assert_eq!(shorten("run 1234 deadbeef"), "run 1234 deadbeef");
    assert_eq!(shorten("/x/é"), "/x/é");
}
