//! Build-time work:
//! - compiles the stand-in NVML library (tests/nvml-standin) that the tests
//!   load through nvml-wrapper's library path, so the real NVML code path
//!   runs on machines without a GPU (the daemon never loads it unless told to);
//! - builds the first-party plugins (plugins/, a workspace of its own) for
//!   wasm32-wasip2 and generates `first_party.rs`, which embeds them, so the
//!   daemon schedules with its policies (`FIRST_PARTY`), validates with
//!   its validators (`VALIDATORS`) and notifies with its notifiers
//!   (`NOTIFIERS`) even with no plugin folder;
//! - builds the test plugins (tests/plugins) and the example plugins
//!   (examples/policy-weekends, examples/validator-loss-curve,
//!   examples/policy-shortest-first) and exports
//!   their paths to the tests as `NIGHTJAR_TEST_PLUGIN_*` and
//!   `NIGHTJAR_EXAMPLE_*`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The first-party plugins: (name in `plugins.chain`, crate folder, wasm file stem).
const FIRST_PARTY: &[(&str, &str, &str)] = &[
    ("priority", "priority", "priority"),
    ("offpeak-tariff", "offpeak-tariff", "offpeak_tariff"),
    ("thermal", "thermal", "thermal"),
    ("fair-share", "fair-share", "fair_share"),
    ("reserve", "reserve", "reserve"),
];

/// The first-party result validators: (name a task file's `plugin` gives,
/// crate folder, wasm file stem).
const VALIDATORS: &[(&str, &str, &str)] = &[("outputs", "outputs", "outputs")];

/// The first-party notifiers: (name a `[notifier.NAME]` table's `plugin`
/// gives, crate folder, wasm file stem).
const NOTIFIERS: &[(&str, &str, &str)] = &[
    ("webhook", "webhook", "webhook"),
    ("wecom", "wecom", "wecom"),
    ("email", "email", "email"),
];

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    standin(&out);
    plugins(&out);
}

/// Builds the wasm32-wasip2 workspace at `manifest` into `<target>/plugins-wasm`;
/// returns the folder holding the `.wasm` files.
fn build_wasm(out: &Path, manifest: &str) -> PathBuf {
    // target/<profile>/build/<pkg>/out -> target/plugins-wasm, shared by every profile.
    let target_dir = out
        .ancestors()
        .nth(4)
        .map(|t| t.join("plugins-wasm"))
        .unwrap_or_else(|| out.join("plugins-wasm"));
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .args([
            "build",
            "--release",
            "--locked",
            "--target",
            "wasm32-wasip2",
            "--manifest-path",
            manifest,
        ])
        .arg("--target-dir")
        .arg(&target_dir)
        // The outer build's settings (clippy's wrapper, host rustflags) are not the plugins'.
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("RUSTC_WRAPPER")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        .env_remove("CARGO_TARGET_DIR")
        .status()
        .expect("run cargo for the wasm plugins");
    assert!(
        status.success(),
        "building {manifest} failed; is the wasm32-wasip2 target installed? (rustup target add wasm32-wasip2)"
    );
    target_dir.join("wasm32-wasip2/release")
}

fn standin(out: &Path) {
    let src = PathBuf::from("../tests/nvml-standin/nvml_standin.c");
    println!("cargo:rerun-if-changed={}", src.display());
    let lib = out.join("libnvidia-ml-standin.so");
    let status = cc::Build::new()
        .get_compiler()
        .to_command()
        .args(["-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-o"])
        .arg(&lib)
        .arg(&src)
        .args(["-lpthread", "-ldl"])
        .status()
        .expect("run the C compiler for the NVML stand-in");
    assert!(status.success(), "building the NVML stand-in failed");
    println!("cargo:rustc-env=NIGHTJAR_NVML_STANDIN={}", lib.display());
}

fn plugins(out: &Path) {
    for p in [
        "../plugins/Cargo.toml",
        "../plugins/Cargo.lock",
        "../sdk/src",
        "../sdk/Cargo.toml",
        "../wit",
    ] {
        println!("cargo:rerun-if-changed={p}");
    }
    for (_, dir, _) in FIRST_PARTY.iter().chain(VALIDATORS).chain(NOTIFIERS) {
        println!("cargo:rerun-if-changed=../plugins/{dir}/src");
        println!("cargo:rerun-if-changed=../plugins/{dir}/Cargo.toml");
    }
    let built = build_wasm(out, "../plugins/Cargo.toml");
    // Test fixtures, compiled from source, never committed: misbehaving
    // plugins, and plugins of the frozen 0.1, 0.2.0 and 0.2.2 contracts.
    for p in [
        "../tests/plugins/Cargo.toml",
        "../tests/plugins/Cargo.lock",
        "../tests/plugins/hostile/src",
        "../tests/plugins/hostile/Cargo.toml",
        "../tests/plugins/hostile-validator/src",
        "../tests/plugins/hostile-validator/Cargo.toml",
        "../tests/plugins/legacy-v0_1/src",
        "../tests/plugins/legacy-v0_1/Cargo.toml",
        "../tests/plugins/first-v0_2_0/src",
        "../tests/plugins/first-v0_2_0/Cargo.toml",
        "../tests/plugins/kept-v0_2_2/src",
        "../tests/plugins/kept-v0_2_2/Cargo.toml",
    ] {
        println!("cargo:rerun-if-changed={p}");
    }
    let fixtures = build_wasm(out, "../tests/plugins/Cargo.toml");
    for (stem, var) in [
        ("hostile", "NIGHTJAR_TEST_PLUGIN_HOSTILE"),
        ("legacy_v0_1", "NIGHTJAR_TEST_PLUGIN_V0_1"),
        ("first_v0_2_0", "NIGHTJAR_TEST_PLUGIN_V0_2_0"),
        ("kept_v0_2_2", "NIGHTJAR_TEST_PLUGIN_V0_2_2"),
        (
            "hostile_validator",
            "NIGHTJAR_TEST_PLUGIN_HOSTILE_VALIDATOR",
        ),
    ] {
        let copy = out.join(format!("{stem}.wasm"));
        std::fs::copy(fixtures.join(format!("{stem}.wasm")), &copy)
            .unwrap_or_else(|e| panic!("copy {stem}.wasm: {e}"));
        println!("cargo:rustc-env={var}={}", copy.display());
    }
    // The lab-written examples, so the tests prove the authors' READMEs work.
    for (dir, stem, var) in [
        (
            "policy-weekends",
            "weekends",
            "NIGHTJAR_EXAMPLE_POLICY_WEEKENDS",
        ),
        (
            "validator-loss-curve",
            "loss_curve",
            "NIGHTJAR_EXAMPLE_VALIDATOR_LOSS_CURVE",
        ),
        (
            "policy-shortest-first",
            "shortest_first",
            "NIGHTJAR_EXAMPLE_POLICY_SHORTEST_FIRST",
        ),
    ] {
        for p in ["src", "Cargo.toml", "Cargo.lock"] {
            println!("cargo:rerun-if-changed=../examples/{dir}/{p}");
        }
        let example = build_wasm(out, &format!("../examples/{dir}/Cargo.toml"));
        let copy = out.join(format!("{stem}.wasm"));
        std::fs::copy(example.join(format!("{stem}.wasm")), &copy)
            .unwrap_or_else(|e| panic!("copy {stem}.wasm: {e}"));
        println!("cargo:rustc-env={var}={}", copy.display());
    }
    let mut rs = embed(
        out,
        &built,
        "The first-party scheduling policies embedded in the binary: (name, component bytes).",
        "FIRST_PARTY",
        FIRST_PARTY,
    );
    rs.push_str(&embed(
        out,
        &built,
        "The first-party result validators embedded in the binary: (name, component bytes).",
        "VALIDATORS",
        VALIDATORS,
    ));
    rs.push_str(&embed(
        out,
        &built,
        "The first-party notifiers embedded in the binary: (name, component bytes).",
        "NOTIFIERS",
        NOTIFIERS,
    ));
    std::fs::write(out.join("first_party.rs"), rs).expect("write first_party.rs");
    // fair-share as a file too, for the tests of `plugins test` on a
    // snapshot's usage (embed copied it there).
    println!(
        "cargo:rustc-env=NIGHTJAR_FIRST_PARTY_FAIR_SHARE={}",
        out.join("fair_share.wasm").display()
    );
}

/// The Rust source of `pub const NAME: &[(&str, &[u8])]`, embedding each
/// plugin's component (copied from `built` into `out`).
fn embed(
    out: &Path,
    built: &Path,
    doc: &str,
    name: &str,
    plugins: &[(&str, &str, &str)],
) -> String {
    let mut rs = format!("/// {doc}\npub const {name}: &[(&str, &[u8])] = &[\n");
    for (plugin, _, stem) in plugins {
        let wasm = built.join(format!("{stem}.wasm"));
        let copy = out.join(format!("{stem}.wasm"));
        std::fs::copy(&wasm, &copy).unwrap_or_else(|e| panic!("copy {}: {e}", wasm.display()));
        rs.push_str(&format!(
            "    ({plugin:?}, include_bytes!({:?})),\n",
            copy.display().to_string()
        ));
    }
    rs.push_str("];\n");
    rs
}
