//! The Python client's own tests (`python/tests`, pytest) against this
//! build's binaries: each starts real daemons, checks every request and
//! reply against `nightjar protocol-schema`, and installs the package with
//! `pip install ./python` into a fresh virtual environment.

use std::process::Command;

use crate::harness::BIN;

#[test]
fn the_python_clients_tests_pass_against_this_build() {
    let repo = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let out = Command::new("python3")
        .args([
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "python/tests",
        ])
        .current_dir(repo)
        .env("NIGHTJAR_BIN", BIN)
        .env_remove("NIGHTJAR_SOCKET")
        .env_remove("NIGHTJAR_CONFIG")
        .output()
        .unwrap_or_else(|e| crate::harness::needs("python3 with pytest and jsonschema", e));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "pytest failed:\n{text}");
    let passed: usize = text
        .split_whitespace()
        .collect::<Vec<_>>()
        .windows(2)
        .find(|w| w[1] == "passed" || w[1].starts_with("passed"))
        .and_then(|w| w[0].parse().ok())
        .unwrap_or(0);
    assert!(passed >= 16, "pytest ran {passed} tests:\n{text}");
    assert!(
        !text.contains("skipped"),
        "a skipped test is a test not run:\n{text}"
    );
}
