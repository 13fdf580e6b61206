use super::*;

#[test]
fn toml_single_task_with_all_field_kinds() {
    let defs = parse(
        r#"
name = "train"
project = "vision"
command = ["python", "train.py", "--lr", "${lr}"]
priority = "high"
after = ["prep", 12]
[resources]
gpus = 1
mem = "8GiB"
timeout = "2h"
[retry]
max_attempts = 3
backoff = "30s"
[sweep]
lr = [0.1, 0.01]
seed = [1, 2]
"#,
        Format::Toml,
    )
    .unwrap();
    let t = &defs[0];
    assert_eq!(t.priority, Priority::High);
    assert_eq!(t.resources.gpus, 1);
    assert_eq!(
        t.resources.timeout,
        Some(std::time::Duration::from_secs(7200))
    );
    assert_eq!(t.after, vec![DepRef::Name("prep".into()), DepRef::Id(12)]);
    assert_eq!(
        t.sweep["lr"],
        vec![Scalar("0.1".into()), Scalar("0.01".into())]
    );
    assert_eq!(t.retry.max_attempts, 3);
}

#[test]
fn toml_unknown_key_names_line_and_key() {
    let err = parse("command = \"true\"\n\n[resources]\ngpu = 1\n", Format::Toml).unwrap_err();
    assert!(err.contains("line 4"), "{err}");
    assert!(err.contains("gpu"), "{err}");
}

#[test]
fn toml_wrong_type_names_line() {
    let err = parse("command = \"true\"\npriority = 3\n", Format::Toml).unwrap_err();
    assert!(err.contains("line 2"), "{err}");
}

#[test]
fn yaml_many_tasks_and_errors_with_lines() {
    let defs = parse(
        "tasks:\n  - name: a\n    command: echo a\n  - name: b\n    command: [echo, b]\n    after: [a]\n",
        Format::Yaml,
    )
    .unwrap();
    assert_eq!(defs.len(), 2);
    let err = parse("command: echo\npriorty: high\n", Format::Yaml).unwrap_err();
    assert!(err.contains("priorty"), "{err}");
    assert!(err.contains("line 2"), "{err}");
}

#[test]
fn nested_yaml_aliases_are_refused_early_with_a_clear_error() {
    let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..30 {
        let refs = vec![format!("*a{}", i - 1); 10].join(", ");
        text.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
    }
    text.push_str("command: echo\n");
    let err = parse(&text, Format::Yaml).unwrap_err();
    assert!(
        err.contains("expands to more than") && err.contains("aliases"),
        "{err}"
    );
    // A few aliases are fine.
    let ok = "base: &b [1, 2]\ncommand: echo\nsweep:\n  lr: *b\n";
    let err = parse(ok, Format::Yaml).unwrap_err();
    assert!(err.contains("base"), "only the unknown key is wrong: {err}");
}

#[test]
fn empty_command_is_rejected() {
    assert!(parse("command = \"  \"\n", Format::Toml).is_err());
    assert!(parse("command = []\n", Format::Toml).is_err());
}

#[test]
fn checkpoint_as_inline_table_table_or_yaml_mapping() {
    let inline = "command = \"python train.py\"\ncheckpoint = { pattern = \"ckpt/*.pt\", resume = \"--resume-from ${CHECKPOINT}\" }\n";
    let table = "command = \"python train.py\"\n[checkpoint]\npattern = \"ckpt/*.pt\"\nresume = \"--resume-from ${CHECKPOINT}\"\nmarker = \"{}.done\"\nsignal = \"USR1\"\ngrace = \"2m\"\n";
    let yaml = "command: python train.py\ncheckpoint:\n  pattern: ckpt/*.pt\n  resume: --resume-from ${CHECKPOINT}\n  settle: 30s\n";
    for (text, format) in [
        (inline, Format::Toml),
        (table, Format::Toml),
        (yaml, Format::Yaml),
    ] {
        let defs = parse(text, format).unwrap();
        let c = defs[0].checkpoint.as_ref().expect("checkpoint");
        assert_eq!(c.pattern, "ckpt/*.pt");
        assert_eq!(c.resume.as_deref(), Some("--resume-from ${CHECKPOINT}"));
    }
    let err = parse(
        "command = \"true\"\n[checkpoint]\npattern = \"a\"\nsetle = \"1s\"\n",
        Format::Toml,
    )
    .unwrap_err();
    assert!(err.contains("setle") && err.contains("line 4"), "{err}");
}
