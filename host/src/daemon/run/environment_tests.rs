use super::*;
use crate::task::environment::{Container, Mount};

fn base_env() -> BTreeMap<String, String> {
    BTreeMap::from([
        ("PATH".to_string(), "/usr/bin:/bin".to_string()),
        ("PYTHONHOME".to_string(), "/somewhere".to_string()),
        ("CONDA_PREFIX".to_string(), "/stale".to_string()),
    ])
}

#[test]
fn a_venv_goes_first_on_path_with_virtual_env_set_and_pythonhome_unset() {
    let mut env = base_env();
    activate(
        &mut env,
        &Environment::Venv {
            path: "/srv/my venv".into(),
        },
    );
    assert_eq!(env["PATH"], "/srv/my venv/bin:/usr/bin:/bin");
    assert_eq!(env["VIRTUAL_ENV"], "/srv/my venv");
    assert!(!env.contains_key("PYTHONHOME"));
    // A stale conda variable would make the manifest record the wrong environment.
    assert!(!env.contains_key("CONDA_PREFIX"));
}

#[test]
fn a_conda_env_sets_its_prefix_name_and_level() {
    let mut env = base_env();
    env.remove("PATH");
    activate(
        &mut env,
        &Environment::Conda {
            name: Some("torch".into()),
            prefix: "/opt/conda/envs/torch".into(),
        },
    );
    assert_eq!(env["CONDA_PREFIX"], "/opt/conda/envs/torch");
    assert_eq!(env["CONDA_DEFAULT_ENV"], "torch");
    assert_eq!(env["CONDA_SHLVL"], "1");
    assert!(env["PATH"].starts_with("/opt/conda/envs/torch/bin:"));
    assert!(!env.contains_key("PYTHONHOME"));
    let mut env = BTreeMap::new();
    activate(
        &mut env,
        &Environment::Conda {
            name: None,
            prefix: "/p/x".into(),
        },
    );
    assert_eq!(env["CONDA_DEFAULT_ENV"], "/p/x");
}

#[test]
fn skipped_activation_scripts_are_listed() {
    let d = tempfile::tempdir().unwrap();
    let ad = d.path().join("etc/conda/activate.d");
    std::fs::create_dir_all(&ad).unwrap();
    std::fs::write(ad.join("gdal-activate.sh"), "").unwrap();
    let e = Environment::Conda {
        name: None,
        prefix: d.path().to_path_buf(),
    };
    assert_eq!(skipped_scripts(&e), ["gdal-activate.sh"]);
}

fn cfg_in(dir: &Path) -> Config {
    let text = format!("state_dir = \"{}\"\n", dir.join("state").display());
    Config::parse(&text, &dir.join("nightjar.toml")).unwrap()
}

#[test]
fn a_mount_of_the_state_dir_or_above_it_is_refused() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(d.path().join("state/runs")).unwrap();
    let cfg = cfg_in(d.path());
    for host in [
        d.path().to_path_buf(),
        d.path().join("state"),
        d.path().join("state/runs"),
    ] {
        let mut e = Environment::Container(Container {
            image: "img".into(),
            runtime: Some(Runtime::Podman),
            mounts: vec![Mount {
                host: host.clone(),
                target: "/x".into(),
                read_only: true,
            }],
        });
        let err = check(&cfg, &mut e, None).unwrap_err();
        assert!(err.contains("state folder"), "{host:?}: {err}");
    }
}

#[test]
fn a_runtime_that_is_not_installed_is_named_at_submit() {
    let d = tempfile::tempdir().unwrap();
    let mut cfg = cfg_in(d.path());
    cfg.containers.runtime = Runtime::Apptainer;
    // Where apptainer is installed the check gets past the runtime (and
    // fails on the missing image instead): it must not say "not installed".
    let installed = find_program("apptainer").is_some();
    let mut e = Environment::Container(Container {
        image: "/x.sif".into(),
        runtime: None,
        mounts: vec![],
    });
    let err = check(&cfg, &mut e, None).unwrap_err();
    assert_eq!(
        err.contains("`apptainer` is not installed"),
        !installed,
        "{err}"
    );
    // The daemon's default runtime was filled in before the check failed.
    let Environment::Container(c) = &e else {
        unreachable!()
    };
    assert_eq!(c.runtime, Some(Runtime::Apptainer));
}

#[test]
fn a_venv_submitted_through_a_symlink_is_refused_by_the_daemon() {
    let d = tempfile::tempdir().unwrap();
    let real = d.path().join("v");
    std::fs::create_dir_all(real.join("bin")).unwrap();
    std::fs::write(real.join("pyvenv.cfg"), "").unwrap();
    std::fs::write(real.join("bin/python"), "").unwrap();
    let link = d.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let cfg = cfg_in(d.path());
    let mut e = Environment::Venv { path: link };
    let err = check(&cfg, &mut e, None).unwrap_err();
    assert!(err.contains("resolves to"), "{err}");
    let mut e = Environment::Venv {
        path: std::fs::canonicalize(&real).unwrap(),
    };
    check(&cfg, &mut e, None).unwrap();
}

#[test]
fn config_flags_must_be_flags() {
    let d = tempfile::tempdir().unwrap();
    let text = "[containers]\npodman_args = [\"run\"]\n";
    let err = Config::parse(text, &d.path().join("c.toml")).unwrap_err();
    assert!(
        format!("{err:#}").contains("containers.podman_args"),
        "{err:#}"
    );
    let text = "[containers]\nruntime = \"docker\"\npodman_run_args = [\"--network=none\"]\n";
    let cfg = Config::parse(text, &d.path().join("c.toml")).unwrap();
    assert_eq!(cfg.containers.runtime, Runtime::Docker);
}
