//! `{{name}}`: a nightjar result validator, made by `nightjar plugins new`.
//!
//! As written it checks that the files its config lists exist in the run's
//! output folder and are not empty. Replace `validate` with your check:
//! `Finding::error` fails the run, `Finding::warning` and `Finding::info`
//! are shown.
//!
//! Config (a `[[validate]]` table of a task file):
//!
//! ```toml
//! [[validate]]
//! plugin = "validators/{{stem}}.wasm"   # relative to the task file
//! files = ["model.pt", "metrics.json"]  # relative to the output folder
//! ```

use nightjar_sdk::{Finding, Run, Validator};

/// The configuration: every key has a default, a misspelt key is an error.
#[derive(serde::Deserialize, Default, Debug)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Files that must be in the output folder, not empty.
    #[serde(deserialize_with = "nightjar_sdk::config::string_list")]
    files: Vec<String>,
}

/// The validator.
pub struct {{Type}};

impl Validator for {{Type}} {
    type Config = Config;

    fn validate(config: &Config, run: &Run) -> Vec<Finding> {
        config
            .files
            .iter()
            .filter_map(|name| match run.file(name) {
                Some(f) if f.size > 0 => None,
                Some(_) => Some(Finding::error(name, format!("{name} is empty"))),
                None => Some(Finding::error(name, format!("{name} is missing"))),
            })
            .collect()
    }
}

nightjar_sdk::export_validator!({{Type}});

#[cfg(test)]
mod tests {
    use super::*;
    use nightjar_sdk::testing::RunBuilder;

    /// The plugin under test.
    type P = {{Type}};

    #[test]
    fn a_missing_or_empty_file_is_an_error() {
        let config = P::configure("files = [\"a\", \"b\", \"c\"]").unwrap();
        let run = RunBuilder::new().file("a", 10).file("b", 0).build();
        let findings = P::validate(&config, &run);
        assert_eq!(findings.len(), 2, "{findings:?}");
    }

    #[test]
    fn a_misspelt_key_is_an_error_naming_it() {
        let e = P::configure("file = \"a\"").unwrap_err();
        assert_eq!(e.key.as_deref(), Some("file"));
    }
}
