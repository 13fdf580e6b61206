//! The Debian package's files, held to what they are made from (the package
//! itself is built, installed and used by `scripts/package-test`, which CI
//! runs).

use std::path::Path;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

fn text(rel: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// A unit's settings (`Key=value` lines), comments and blank lines left out.
fn settings(unit: &str) -> Vec<String> {
    unit.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(String::from)
        .collect()
}

fn exec_start(unit: &[String]) -> String {
    unit.iter()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .expect("ExecStart")
        .to_string()
}

#[test]
fn the_package_units_are_the_examples_but_for_the_installed_paths() {
    for (example, packaged, exec) in [
        (
            "examples/nightjar.service",
            "host/debian/nightjar.service",
            "/usr/bin/nightjard --config /etc/nightjar/nightjar.toml daemon",
        ),
        (
            "examples/nightjar-user.service",
            "host/debian/user/nightjar.service",
            "/usr/bin/nightjard daemon",
        ),
    ] {
        let (e, p) = (settings(&text(example)), settings(&text(packaged)));
        let others = |u: &[String]| {
            u.iter()
                .filter(|l| !l.starts_with("ExecStart="))
                .cloned()
                .collect::<Vec<_>>()
        };
        assert_eq!(others(&e), others(&p), "{packaged} drifted from {example}");
        assert_eq!(exec_start(&p), exec, "{packaged}");
        // What systemd runs is a command line the daemon binary accepts.
        let argv: Vec<&str> = exec.split(' ').collect();
        nightjar_cli::daemon_command()
            .try_get_matches_from(&argv)
            .unwrap_or_else(|e| panic!("{packaged}: {exec}: {e}"));
    }
}

#[test]
fn every_packaged_source_file_exists_and_the_config_is_the_documented_example() {
    let manifest: toml::Table = toml::from_str(&text("host/Cargo.toml")).unwrap();
    let deb = &manifest["package"]["metadata"]["deb"];
    let assets = deb["assets"].as_array().unwrap();
    let mut config = None;
    for a in assets {
        let (src, dest) = (a[0].as_str().unwrap(), a[1].as_str().unwrap());
        if dest == "etc/nightjar/nightjar.toml" {
            config = Some(src);
        }
        if src.starts_with("target/release/") || src.contains('*') {
            continue; // built or staged by scripts/package, or a glob
        }
        assert!(
            Path::new(ROOT).join("host").join(src).is_file(),
            "asset {src} is missing"
        );
    }
    assert_eq!(config, Some("../examples/nightjar.toml"));
    // The daemon as built here; the client and the supervisor as
    // scripts/package stages them (static builds of host/static).
    for (bin, from) in [
        ("nightjard", "target/release/nightjard"),
        ("nightjar", "target/release/package/bin/nightjar"),
        (
            "nightjar-supervise",
            "target/release/package/bin/nightjar-supervise",
        ),
    ] {
        assert!(
            assets.iter().any(|a| a[0].as_str() == Some(from)),
            "{bin} is packaged from {from}"
        );
    }
    let package = text("scripts/package");
    assert!(
        package.contains("--manifest-path host/static/Cargo.toml")
            && package.contains("$stage/bin/$bin"),
        "scripts/package stages the static builds"
    );
}
