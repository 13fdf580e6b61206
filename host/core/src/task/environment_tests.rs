use super::*;
use crate::task::file::{Format, parse};

fn def(text: &str) -> EnvironmentDef {
    parse(text, Format::Toml).unwrap()[0]
        .environment
        .clone()
        .unwrap()
}

fn fake_venv(at: &Path) {
    std::fs::create_dir_all(at.join("bin")).unwrap();
    std::fs::write(at.join("pyvenv.cfg"), "home = /usr/bin\n").unwrap();
    std::fs::write(at.join("bin/python"), "").unwrap();
}

#[test]
fn two_environments_at_once_are_named_and_refused() {
    let d = tempfile::tempdir().unwrap();
    let e = def("command = \"x\"\n[environment]\nvenv = \"v\"\nconda = \"c\"\n");
    let err = resolve(&e, d.path()).unwrap_err();
    assert!(err.contains("conda and venv are given"), "{err}");
    assert!(err.contains("exactly one"), "{err}");
}

#[test]
fn unknown_keys_in_the_environment_table_are_errors() {
    let err = parse(
        "command = \"x\"\n[environment]\nvenvv = \"v\"\n",
        Format::Toml,
    )
    .unwrap_err();
    assert!(err.contains("venvv"), "{err}");
    let err = parse(
        "command = \"x\"\n[environment]\ncontainer = { image = \"a\", runtime = \"lxc\" }\n",
        Format::Toml,
    )
    .unwrap_err();
    assert!(err.contains("lxc"), "{err}");
}

#[test]
fn a_venv_is_resolved_from_the_file_folder_through_symlinks_and_dotdot() {
    let d = tempfile::tempdir().unwrap();
    let real = d.path().join("envs/my venv");
    fake_venv(&real);
    std::os::unix::fs::symlink(&real, d.path().join("link")).unwrap();
    std::fs::create_dir(d.path().join("sub")).unwrap();
    let e = def("command = \"x\"\n[environment]\nvenv = \"sub/../link\"\n");
    let got = resolve(&e, d.path()).unwrap().unwrap();
    let want = std::fs::canonicalize(&real).unwrap();
    assert_eq!(got, Environment::Venv { path: want });
}

#[test]
fn a_folder_that_is_no_venv_or_has_a_broken_python_is_refused_with_the_fix() {
    let d = tempfile::tempdir().unwrap();
    // `/` has a bin/python on many machines: pyvenv.cfg is what makes a venv.
    let err = venv(Path::new("/")).unwrap_err();
    assert!(err.contains("no pyvenv.cfg"), "{err}");
    let v = d.path().join("v");
    fake_venv(&v);
    std::fs::remove_file(v.join("bin/python")).unwrap();
    std::os::unix::fs::symlink("/nonexistent/python3.99", v.join("bin/python")).unwrap();
    let err = venv(&v).unwrap_err();
    assert!(err.contains("missing or a broken link"), "{err}");
    assert!(err.contains("python3 -m venv --clear"), "{err}");
    let err = venv(&d.path().join("absent")).unwrap_err();
    assert!(
        err.contains("absent") && err.contains("python3 -m venv"),
        "{err}"
    );
}

#[test]
fn a_path_with_a_line_break_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let v = d.path().join("a\nb");
    fake_venv(&v);
    let err = venv(&v).unwrap_err();
    assert!(err.contains("line break"), "{err}");
}

#[test]
fn a_conda_prefix_path_needs_conda_meta() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("env with space");
    std::fs::create_dir_all(&p).unwrap();
    let e = def(&format!(
        "command = \"x\"\n[environment]\nconda = \"{}\"\n",
        p.display()
    ));
    let err = resolve(&e, d.path()).unwrap_err();
    assert!(err.contains("no conda-meta/"), "{err}");
    std::fs::create_dir(p.join("conda-meta")).unwrap();
    let got = resolve(&e, d.path()).unwrap().unwrap();
    assert_eq!(
        got,
        Environment::Conda {
            name: None,
            prefix: std::fs::canonicalize(&p).unwrap()
        }
    );
}

#[test]
fn conda_names_that_could_be_flags_or_paths_are_refused() {
    for bad in ["-n", "..", "a b", ""] {
        assert!(check_conda_name(bad).is_err(), "{bad:?}");
    }
    assert!(check_conda_name("torch-2.1_cu12").is_ok());
}

#[test]
fn env_list_picks_by_folder_name_and_base_is_the_root() {
    let list = parse_list(
        br#"{"envs": ["/opt/conda", "/opt/conda/envs/torch", "/home/u/.conda/envs/x"]}"#,
    )
    .unwrap();
    assert_eq!(
        crate::task::environment_find::pick("torch", &list),
        Some(PathBuf::from("/opt/conda/envs/torch"))
    );
    assert_eq!(
        crate::task::environment_find::pick("base", &list),
        Some(PathBuf::from("/opt/conda"))
    );
    assert_eq!(crate::task::environment_find::pick("conda", &list), None);
    assert!(parse_list(b"not json").is_err());
}

use crate::task::environment_find::parse_list;

#[test]
fn an_image_name_starting_with_a_dash_never_reaches_a_runtime() {
    for bad in [
        "--privileged",
        "-v/:/host",
        "",
        "a b",
        "img\nx",
        "a,b",
        &"x".repeat(600),
    ] {
        let err = check_image(bad).unwrap_err();
        assert!(err.contains("environment.container.image"), "{err}");
    }
    let err = check_image("--privileged").unwrap_err();
    assert!(err.contains("starts with `-`"), "{err}");
    assert!(check_image("docker.io/library/python:3.12@sha256:abc").is_ok());
}

#[test]
fn mounts_resolve_and_refuse_the_root_and_odd_paths() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join("data")).unwrap();
    let m = mount("data:/in:ro", d.path()).unwrap();
    assert_eq!(m.target, PathBuf::from("/in"));
    assert!(m.read_only);
    let m = mount("data", d.path()).unwrap();
    assert_eq!(m.target, m.host);
    assert!(!m.read_only);
    // `/` itself, and `/` reached through `..`.
    let err = mount("/", d.path()).unwrap_err();
    assert!(err.contains("whole file system"), "{err}");
    let up = "../".repeat(40);
    let err = mount(&up, d.path()).unwrap_err();
    assert!(err.contains("whole file system"), "{err}");
    let err = mount("data:/a:/b:/c", d.path()).unwrap_err();
    assert!(err.contains("not HOST"), "{err}");
    let err = mount("data:relative", d.path()).unwrap_err();
    assert!(err.contains("not an absolute path"), "{err}");
    let err = mount("data:/x/../..", d.path()).unwrap_err();
    assert!(err.contains("without `..`"), "{err}");
    let err = mount("absent", d.path()).unwrap_err();
    assert!(err.contains("create it or fix the mount"), "{err}");
    std::fs::create_dir(d.path().join("a,b")).unwrap();
    let err = mount("a,b", d.path()).unwrap_err();
    assert!(err.contains("contains `,`"), "{err}");
}

#[test]
fn an_apptainer_image_is_a_file_made_absolute() {
    let d = tempfile::tempdir().unwrap();
    let e = def(
        "command = \"x\"\n[environment]\ncontainer = { image = \"img.sif\", runtime = \"apptainer\" }\n",
    );
    let err = resolve(&e, d.path()).unwrap_err();
    assert!(err.contains("no such image file"), "{err}");
    std::fs::write(d.path().join("img.sif"), "").unwrap();
    let Some(Environment::Container(c)) = resolve(&e, d.path()).unwrap() else {
        panic!("not a container")
    };
    assert_eq!(c.image, d.path().join("img.sif").display().to_string());
    assert_eq!(c.runtime, Some(Runtime::Apptainer));
}

#[test]
fn a_stored_spec_without_environment_still_decodes_and_none_is_not_written() {
    let spec: crate::task::model::TaskSpec = serde_json::from_value(serde_json::json!({
        "name": "t", "project": "p", "command": {"shell": "x"}, "workdir": "/",
        "env": {}, "inputs": [], "output": null, "priority": "normal",
        "resources": {}, "retry": {}, "params": {}
    }))
    .unwrap();
    assert_eq!(spec.environment, None);
    let text = serde_json::to_string(&spec).unwrap();
    assert!(!text.contains("environment"), "{text}");
}
