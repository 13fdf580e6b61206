use std::io::ErrorKind;

use super::private::{configure_into, validate_with};
use super::*;
use crate::__private::ConfigSlot;
use crate::testing::{OutputDir, RunBuilder};

#[derive(serde::Deserialize, Debug)]
#[serde(default, deny_unknown_fields)]
struct Config {
    file: String,
    max: u64,
    severity: Severity,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            file: "out.txt".into(),
            max: 10,
            severity: Severity::Error,
        }
    }
}

/// One finding when `file` is missing or longer than `max` bytes.
struct Short;

impl Validator for Short {
    type Config = Config;
    fn validate(c: &Config, run: &Run) -> Vec<Finding> {
        match run.read(&c.file, c.max) {
            Ok(_) => Vec::new(),
            Err(e) => vec![Finding::new(c.severity, &c.file, e.to_string())],
        }
    }
    fn check_config(c: &Config) -> Result<(), ConfigError> {
        if c.max == 0 {
            return Err(ConfigError::at("max", "must be above 0"));
        }
        Ok(())
    }
}

#[test]
fn configure_parses_then_checks_and_names_the_key() {
    let e = Short::configure("max = 0").unwrap_err();
    assert_eq!(e.key.as_deref(), Some("max"));
    let e = Short::configure("fiel = \"a\"").unwrap_err();
    assert_eq!(e.key.as_deref(), Some("fiel"));
    let e = Short::configure("severity = \"fatal\"").unwrap_err();
    assert_eq!(e.key.as_deref(), Some("severity"));
    assert!(e.message.contains("\"warning\""), "{}", e.message);
    let c = Short::configure("severity = \"warning\"").unwrap();
    assert_eq!(c.severity, Severity::Warning);
}

#[test]
fn validate_uses_the_kept_config_and_reads_the_output_folder() {
    let out = OutputDir::new();
    out.write("out.txt", "12345")
        .write("deep/big.txt", "x".repeat(100));
    let run = out.run().build();
    assert_eq!(run.files.len(), 2);
    assert_eq!(run.files[0].path, "deep/big.txt");
    assert_eq!(run.file("out.txt").map(|f| f.size), Some(5));

    let slot = ConfigSlot::new();
    assert!(validate_with::<Short>(&slot, &run).is_empty(), "defaults");
    configure_into::<Short>(&slot, "file = \"deep/big.txt\"\nseverity = \"info\"").unwrap();
    let found = validate_with::<Short>(&slot, &run);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].severity, Severity::Info);
    assert_eq!(found[0].path.as_deref(), Some("deep/big.txt"));
    assert!(
        found[0].message.contains("100 bytes"),
        "{}",
        found[0].message
    );
    assert!(configure_into::<Short>(&slot, "max = 0").is_err());
    assert_eq!(validate_with::<Short>(&slot, &run).len(), 1, "unchanged");
}

#[test]
fn reading_stays_in_the_output_folder_and_caps_size() {
    let out = OutputDir::new();
    out.write("a.txt", "hello");
    let run = out.run().build();
    assert_eq!(run.read_to_string("a.txt", 5).unwrap(), "hello");
    assert_eq!(
        run.read("a.txt", 4).unwrap_err().kind(),
        ErrorKind::FileTooLarge
    );
    for bad in ["", "/etc/passwd", "../a.txt", "x/../../a.txt"] {
        assert_eq!(
            run.read(bad, 100).unwrap_err().kind(),
            ErrorKind::InvalidInput,
            "{bad}"
        );
    }
    assert_eq!(
        run.read("missing", 100).unwrap_err().kind(),
        ErrorKind::NotFound
    );
    out.write("bad.txt", [0xff, 0xfe]);
    assert_eq!(
        run.read_to_string("bad.txt", 100).unwrap_err().kind(),
        ErrorKind::InvalidData
    );
}

#[test]
fn a_validator_that_cannot_be_configured_by_default_says_so() {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Needs {
        #[allow(dead_code)]
        file: String,
    }
    struct Strict;
    impl Validator for Strict {
        type Config = Needs;
        fn validate(_: &Needs, _: &Run) -> Vec<Finding> {
            Vec::new()
        }
    }
    let found = validate_with::<Strict>(&ConfigSlot::new(), &RunBuilder::new().build());
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].severity, Severity::Error);
    assert_eq!(found[0].path, None);
}

#[test]
fn findings_cross_to_the_abi_as_they_are() {
    let w = Finding::warning("m.json", "loss is 2, wanted < 1").into_abi();
    assert!(matches!(
        w.severity,
        crate::validator_abi::Severity::Warning
    ));
    assert_eq!(w.path.as_deref(), Some("m.json"));
    let w = Finding::about_run(Severity::Info, "fine").into_abi();
    assert!(matches!(w.severity, crate::validator_abi::Severity::Info));
    assert_eq!(w.path, None);
    assert_eq!(Finding::error("a", "b").severity, Severity::Error);
    assert_eq!(Finding::info("a", "b").severity, Severity::Info);
    assert_eq!(Severity::default(), Severity::Error);
}

#[test]
fn the_builder_keeps_files_sorted_and_unique() {
    let run = RunBuilder::new()
        .file("b", 1)
        .file("a", 2)
        .file("b", 3)
        .root("/tmp/x")
        .build();
    let listed: Vec<_> = run
        .files
        .iter()
        .map(|f| (f.path.as_str(), f.size))
        .collect();
    assert_eq!(listed, [("a", 2), ("b", 3)]);
    assert_eq!(run.root(), std::path::Path::new("/tmp/x"));
}

/// A validator written before `check_config`: only the earlier `check`.
struct Earlier;

impl Validator for Earlier {
    type Config = Config;
    fn validate(_: &Config, _: &Run) -> Vec<Finding> {
        Vec::new()
    }
    #[allow(deprecated)]
    fn check(c: &Config) -> Result<(), ConfigError> {
        Short::check_config(c)
    }
}

#[test]
fn a_validator_that_implements_only_the_earlier_check_is_still_checked() {
    let e = Earlier::configure("max = 0").unwrap_err();
    assert_eq!(e.key.as_deref(), Some("max"));
    assert!(Earlier::configure("max = 5").is_ok());
}
