//! `nightjar plugins new`: each kind's crate, as written, passes its own
//! unit tests, builds for wasm32-wasip2 offline and passes `plugins check`;
//! the policy, loaded into a real daemon, gives its reason in `why`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::harness::*;

/// Runs the client with `args` in `cwd`.
fn nightjar(cwd: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(cwd)
        .env_remove("NIGHTJAR_SDK")
        .output()
        .expect("run nightjar")
}

/// Cargo for a generated crate: offline (every dependency is in the local
/// cache once the workspace built), in a target folder the tests share, with
/// none of the outer build's settings.
fn cargo(krate: &Path, args: &[&str]) -> Output {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    Command::new(cargo)
        .args(args)
        .args(["--offline", "--manifest-path"])
        .arg(krate.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(concat!(env!("CARGO_TARGET_TMPDIR"), "/plugin-new"))
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("RUSTC_WRAPPER")
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("CARGO_BUILD_TARGET")
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .expect("run cargo")
}

fn ok(what: &str, out: Output) -> String {
    assert!(
        out.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Makes plugin `name` of `kind` in `dir`, runs its unit tests, builds it
/// and checks it; returns the component.
fn made_and_checked(dir: &Path, name: &str, kind: &str, world: &str) -> PathBuf {
    ok(
        "plugins new",
        nightjar(dir, &["plugins", "new", name, "--kind", kind]),
    );
    let krate = dir.join(name);
    let fmt = Command::new("rustfmt")
        .args(["--edition", "2024", "--check"])
        .arg(krate.join("src/lib.rs"))
        .output()
        .expect("run rustfmt");
    ok(&format!("rustfmt --check of the new {kind}"), fmt);
    ok(
        &format!("cargo test of the new {kind}"),
        cargo(&krate, &["test"]),
    );
    ok(
        &format!("building the new {kind}"),
        cargo(&krate, &["build", "--release", "--target", "wasm32-wasip2"]),
    );
    let wasm = Path::new(concat!(env!("CARGO_TARGET_TMPDIR"), "/plugin-new"))
        .join("wasm32-wasip2/release")
        .join(format!("{}.wasm", name.replace('-', "_")));
    let checked = ok(
        "plugins check",
        nightjar(dir, &["plugins", "check", wasm.to_str().unwrap()]),
    );
    assert!(checked.contains(&format!("ok ({world}")), "{checked}");
    wasm
}

#[test]
fn a_new_policy_builds_passes_check_and_its_reason_shows_in_why() {
    let dir = tempfile::tempdir().unwrap();
    let wasm = made_and_checked(
        dir.path(),
        "night-hold",
        "policy",
        "delta-scheduling-policy",
    );
    let mut nj = Nj::new(
        "[plugins]\nchain = [\"priority\", \"night_hold\"]\n[plugin.night_hold.config]\nhold = [\"render\"]\n",
    );
    let plugins = nj.state.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::copy(&wasm, plugins.join("night_hold.wasm")).unwrap();
    nj.start();
    let held = nj.submit(&["--project", "render", "--", "true"]);
    let other = nj.submit(&["--project", "vision", "--", "true"]);
    assert_eq!(nj.wait(other), 0, "a project it does not hold runs");
    nj.until("deferred", || {
        nj.show(held)["task"]["reason"].as_str().is_some()
    });
    let why = nj.ok(&["why", &held.to_string()]);
    assert!(
        why.contains("deferred by night_hold: project render is on hold"),
        "{why}"
    );
}

#[test]
fn a_new_notifier_and_a_new_validator_build_and_pass_check_and_a_bad_config_fails_it() {
    let dir = tempfile::tempdir().unwrap();
    let hook = made_and_checked(dir.path(), "night-hook", "notifier", "notifier");
    // A config the notifier refuses fails the check, naming the key.
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "url = \"ftp://x\"\n").unwrap();
    let out = nightjar(
        dir.path(),
        &[
            "plugins",
            "check",
            hook.to_str().unwrap(),
            "--plugin-config",
            bad.to_str().unwrap(),
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("`url`") && err.contains("ftp://x"), "{err}");
    made_and_checked(dir.path(), "night-files", "validator", "result-validator");
}

#[test]
fn plugins_new_refuses_a_bad_name_an_existing_folder_and_a_wrong_sdk() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = nightjar(d, &["plugins", "new", "../up", "--kind", "policy"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("plugin name `../up`"), "{err}");
    assert!(!d.join("../up").exists());

    std::fs::create_dir(d.join("mine")).unwrap();
    std::fs::write(d.join("mine/keep"), "mine").unwrap();
    let out = nightjar(d, &["plugins", "new", "mine"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("already exists") && err.contains("mine"),
        "{err}"
    );
    assert_eq!(read(&d.join("mine/keep")), "mine");
    assert_eq!(std::fs::read_dir(d.join("mine")).unwrap().count(), 1);

    let out = nightjar(d, &["plugins", "new", "fresh", "--sdk", "/nonexistent/sdk"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("/nonexistent/sdk") && err.contains("is not the nightjar SDK"),
        "{err}"
    );
    assert!(
        !d.join("fresh").exists(),
        "nothing is written without an SDK"
    );

    let out = nightjar(d, &["plugins", "new", "fresh", "--kind", "scheduler"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "an unknown kind is a usage error"
    );
}
