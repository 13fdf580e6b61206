//! `{{name}}`: a nightjar scheduling policy, made by `nightjar plugins new`.
//!
//! As written it defers the queued tasks of the projects its config lists
//! and leaves every other task alone. Replace `evaluate` with your rule:
//! allow with a score (`e.allow(id, score)`), defer with a reason (and
//! optionally until when), or reject.
//!
//! Config (`[plugin.{{stem}}.config]` in the daemon config, when this
//! component is `{{stem}}.wasm` in the plugin folder):
//!
//! ```toml
//! hold = ["render", "archive"]   # or one string: "render,archive"
//! ```

use nightjar_sdk::{Evaluation, Policy, Snapshot};

/// The configuration: every key has a default, a misspelt key is an error.
#[derive(serde::Deserialize, Default, Debug)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// The projects whose tasks wait.
    #[serde(deserialize_with = "nightjar_sdk::config::string_list")]
    hold: Vec<String>,
}

/// The policy.
pub struct {{Type}};

impl Policy for {{Type}} {
    type Config = Config;

    fn evaluate(config: &Config, s: &Snapshot) -> Evaluation {
        let mut e = Evaluation::default();
        for t in s
            .queue
            .iter()
            .filter(|t| config.hold.iter().any(|p| p == t.project))
        {
            e.defer(t.id, format!("project {} is on hold", t.project), None);
        }
        e
    }
}

nightjar_sdk::export_policy!({{Type}});

#[cfg(test)]
mod tests {
    use super::*;
    use nightjar_sdk::testing::SnapshotBuilder;
    use nightjar_sdk::{Priority, Verdict};

    /// The plugin under test.
    type P = {{Type}};

    #[test]
    fn tasks_of_a_held_project_wait_and_others_are_left_alone() {
        let config = P::configure("hold = [\"render\"]").unwrap();
        let s = SnapshotBuilder::at(1_796_040_000_000)
            .queued(1, "render", Priority::Normal, 0)
            .queued(2, "vision", Priority::Normal, 0)
            .build();
        let e = P::evaluate(&config, &s);
        assert_eq!(e.verdicts.len(), 1);
        assert_eq!(e.verdicts[0].task, 1);
        assert!(matches!(e.verdicts[0].verdict, Verdict::Defer(_)));
    }

    #[test]
    fn a_misspelt_key_is_an_error_naming_it() {
        let e = P::configure("holds = [\"render\"]").unwrap_err();
        assert_eq!(e.key.as_deref(), Some("holds"));
    }
}
