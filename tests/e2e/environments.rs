//! Environments: a real venv (made here, one package installed from a
//! wheel built here offline), a conda prefix (a real folder with
//! `conda-meta/`; a conda binary where one exists), and a real podman
//! container on an image imported here from Debian's busybox-static.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::harness::{Nj, read};

fn stdout_of(nj: &Nj, id: i64) -> String {
    let show = nj.show(id);
    let dir = show["runs"][0]["run_dir"].as_str().unwrap().to_string();
    read(&Path::new(&dir).join("stdout.log"))
}

fn refused(nj: &Nj, args: &[&str], want: &str) {
    let mut a = vec!["submit"];
    a.extend_from_slice(args);
    let out = nj.cli(&a);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{args:?} was accepted");
    assert!(err.contains(want), "{args:?}: {err}");
}

/// A wheel of the package `njprobe` (VALUE = 42), zipped by Python itself.
fn wheel(dir: &Path) -> PathBuf {
    let whl = dir.join("njprobe-1.0-py3-none-any.whl");
    let script = r#"
import sys, zipfile
files = {
  "njprobe/__init__.py": "VALUE = 42\n",
  "njprobe-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: njprobe\nVersion: 1.0\n",
  "njprobe-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
record = "".join(f"{n},,\n" for n in files) + "njprobe-1.0.dist-info/RECORD,,\n"
with zipfile.ZipFile(sys.argv[1], "w") as z:
    for n, t in files.items():
        z.writestr(n, t)
    z.writestr("njprobe-1.0.dist-info/RECORD", record)
"#;
    let ok = Command::new("python3")
        .args(["-c", script, whl.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(ok.success());
    whl
}

#[test]
fn a_task_runs_in_a_real_venv_with_its_package_and_the_manifest_lists_it() {
    let mut nj = Nj::new("");
    let base = nj.path("envs with space");
    let venv = base.join("my venv");
    let made = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .output()
        .unwrap();
    assert!(made.status.success(), "python3 -m venv: {made:?}");
    let whl = wheel(&base);
    let pip = Command::new(venv.join("bin/python"))
        .args([
            "-m",
            "pip",
            "install",
            "--no-index",
            "--disable-pip-version-check",
            "-q",
        ])
        .arg(&whl)
        .output()
        .unwrap();
    assert!(pip.status.success(), "pip install: {pip:?}");
    nj.start();
    // Given through a symlink and `..`: the real folder is what runs.
    let link = nj.path("links").join("v");
    std::os::unix::fs::symlink(&venv, &link).unwrap();
    let via = nj.path("links").join("../links/v");
    let id = nj.submit(&[
        "--venv",
        via.to_str().unwrap(),
        "--",
        "python",
        "-c",
        "import os, sys, njprobe; print(sys.prefix); print(njprobe.VALUE); print(os.environ.get('PYTHONHOME'))",
    ]);
    assert_eq!(nj.wait(id), 0, "{}", nj.daemon_log());
    let real = std::fs::canonicalize(&venv).unwrap();
    let out = stdout_of(&nj, id);
    assert_eq!(
        out,
        format!("{}\n42\nNone\n", real.display()),
        "sys.prefix, the package, no PYTHONHOME"
    );
    let show = nj.show(id);
    assert_eq!(
        show["spec"]["environment"]["venv"]["path"],
        real.to_str().unwrap()
    );
    let m = &show["manifests"]["runs"][0];
    assert_eq!(m["environment"]["kind"], "venv");
    let pkgs = m["python"]["packages"].as_array().unwrap();
    assert!(
        pkgs.iter()
            .any(|p| p.as_str().unwrap().starts_with("njprobe")),
        "{pkgs:?}"
    );
    assert_eq!(m["env"]["VIRTUAL_ENV"], real.to_str().unwrap());
    let text = nj.ok(&["show", &id.to_string()]);
    assert!(
        text.contains(&format!("environment venv {}", real.display())),
        "{text}"
    );
    // The guide's example file (docs/src/guide/environments.md), next to a `.venv` (here a link to the same venv).
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/tasks/environment/venv.toml"),
        base.join("venv.toml"),
    )
    .unwrap();
    std::os::unix::fs::symlink(&venv, base.join(".venv")).unwrap();
    let ex = nj.json(&["submit", base.join("venv.toml").to_str().unwrap()])[0]["id"]
        .as_i64()
        .unwrap();
    assert_eq!(nj.wait(ex), 0, "{}", nj.daemon_log());
    assert_eq!(stdout_of(&nj, ex), format!("{}\n", real.display()));
}

#[test]
fn a_missing_or_broken_venv_is_refused_at_submit_naming_it() {
    let mut nj = Nj::new("");
    nj.start();
    let nowhere = nj.path("x").join("no-venv-here");
    refused(
        &nj,
        &["--venv", nowhere.to_str().unwrap(), "--", "true"],
        "no-venv-here",
    );
    // A venv whose python points at an interpreter that is gone.
    let broken = nj.path("broken");
    std::fs::create_dir_all(broken.join("bin")).unwrap();
    std::fs::write(broken.join("pyvenv.cfg"), "home = /gone\n").unwrap();
    std::os::unix::fs::symlink("/gone/python3", broken.join("bin/python")).unwrap();
    refused(
        &nj,
        &["--venv", broken.to_str().unwrap(), "--", "true"],
        "broken link",
    );
    // A line break in the path.
    let nl = nj.path("a\nb");
    refused(
        &nj,
        &["--venv", nl.to_str().unwrap(), "--", "true"],
        "line break",
    );
    // Two environments at once, in a task file.
    let f = nj.path("work").join("two.toml");
    std::fs::write(
        &f,
        "command = \"true\"\n[environment]\nvenv = \"v\"\ncontainer = { image = \"x\" }\n",
    )
    .unwrap();
    refused(&nj, &[f.to_str().unwrap()], "venv and container are given");
    assert_eq!(
        nj.json(&["ls"]).as_array().unwrap().len(),
        0,
        "nothing queued"
    );
}

/// A conda prefix: a real folder with `conda-meta/` (what conda makes),
/// its `bin` first on PATH, and `count` package records in it.
fn conda_prefix(at: &Path, count: usize, long: bool) {
    std::fs::create_dir_all(at.join("conda-meta")).unwrap();
    std::fs::create_dir_all(at.join("bin")).unwrap();
    std::fs::write(at.join("bin/njtool"), "#!/bin/sh\necho tool-from-prefix\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        at.join("bin/njtool"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    std::fs::write(at.join("conda-meta/history"), "").unwrap();
    std::fs::write(
        at.join("conda-meta/numpy-1.26.4-py311h64a7726_0.json"),
        "{}",
    )
    .unwrap();
    let pad = if long { "x".repeat(180) } else { String::new() };
    for i in 0..count {
        std::fs::write(at.join(format!("conda-meta/pkg{pad}{i}-1.0-h0_0.json")), "").unwrap();
    }
}

#[test]
fn a_conda_prefix_is_activated_and_its_packages_read_from_conda_meta() {
    let mut nj = Nj::new("");
    let prefix = nj.path("conda root/envs/ml");
    conda_prefix(&prefix, 0, false);
    nj.start();
    let id = nj.submit(&[
        "--conda",
        prefix.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        "njtool; echo \"$CONDA_PREFIX|$CONDA_DEFAULT_ENV|$CONDA_SHLVL\"",
    ]);
    assert_eq!(nj.wait(id), 0, "{}", nj.daemon_log());
    let p = std::fs::canonicalize(&prefix).unwrap();
    assert_eq!(
        stdout_of(&nj, id),
        format!("tool-from-prefix\n{0}|{0}|1\n", p.display())
    );
    let m = &nj.show(id)["manifests"]["runs"][0];
    assert_eq!(m["environment"]["kind"], "conda");
    assert_eq!(
        m["python"]["packages"],
        serde_json::json!(["numpy=1.26.4=py311h64a7726_0"])
    );
    // Not a conda environment: said at submit.
    let plain = nj.path("plain");
    refused(
        &nj,
        &["--conda", plain.to_str().unwrap(), "--", "true"],
        "no conda-meta/",
    );
    refused(
        &nj,
        &["--conda", "no-such-env-njtest", "--", "true"],
        "no conda environment named `no-such-env-njtest`",
    );
}

#[test]
fn a_huge_conda_package_list_is_cut_in_the_manifest() {
    let mut nj = Nj::new("");
    let prefix = nj.path("huge");
    // 8,000 records of ~200 bytes: 1.6 MB of names, more than the 1 MiB kept.
    conda_prefix(&prefix, 8000, true);
    nj.start();
    let id = nj.submit(&["--conda", prefix.to_str().unwrap(), "--", "true"]);
    assert_eq!(nj.wait(id), 0, "{}", nj.daemon_log());
    let m = &nj.show(id)["manifests"]["runs"][0]["python"];
    let kept = m["packages"].as_array().unwrap();
    assert!(kept.len() < 8000 && !kept.is_empty(), "{}", kept.len());
    let bytes: usize = kept.iter().map(|p| p.as_str().unwrap().len() + 1).sum();
    assert!(bytes <= (1 << 20) + 300, "{bytes}");
    assert!(m["note"].as_str().unwrap().contains("cut"), "{m}");
}

#[test]
#[ignore = "needs conda, mamba or micromamba with an offline package cache; .ci/run cannot install one from the registries it reaches. Run it with `cargo test -- --ignored` where one is"]
fn a_conda_env_by_name_through_a_conda_binary() {
    let Some(bin) = ["micromamba", "mamba", "conda"].into_iter().find(|b| {
        Command::new(b)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    }) else {
        crate::harness::needs("conda, mamba or micromamba", "none is on PATH")
    };
    let mut nj = Nj::new("");
    let made = Command::new(bin)
        .args(["create", "-y", "--offline", "-n", "njtest-empty"])
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "`{bin} create --offline -n njtest-empty` failed: {}",
        String::from_utf8_lossy(&made.stderr)
    );
    nj.start();
    let id = nj.submit(&[
        "--conda",
        "njtest-empty",
        "--",
        "sh",
        "-c",
        "echo $CONDA_DEFAULT_ENV",
    ]);
    assert_eq!(nj.wait(id), 0, "{}", nj.daemon_log());
    assert_eq!(stdout_of(&nj, id), "njtest-empty\n");
}

#[path = "environments_podman.rs"]
mod podman;
