//! `weekends`: tasks of the listed projects run only on Saturdays and
//! Sundays (in the daemon's time zone). Everything else is left alone.
//!
//! Config (`[plugin.weekends.config]` in the daemon config):
//!
//! ```toml
//! projects = ["render", "archive"]   # or one string: "render,archive"
//! ```

use nightjar_sdk::time::{DAY_MS, is_weekend, weekday};
use nightjar_sdk::*;

/// The configuration: every key has a default, a misspelt key is an error.
#[derive(serde::Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
struct Config {
    /// The projects that wait for the weekend.
    #[serde(deserialize_with = "nightjar_sdk::config::string_list")]
    projects: Vec<String>,
}

/// The policy.
struct Weekends;

impl Policy for Weekends {
    type Config = Config;

    fn evaluate(config: &Config, s: &Snapshot) -> Evaluation {
        let mut e = Evaluation::default();
        if is_weekend(s) {
            return e;
        }
        // Next Saturday 00:00 local time, as Unix ms.
        let offset = s.utc_offset as i64 * 1000;
        let days = (5 - weekday(s) as i64).rem_euclid(7);
        let saturday = ((s.now + offset).div_euclid(DAY_MS) + days) * DAY_MS - offset;
        for t in s
            .queue
            .iter()
            .filter(|t| config.projects.iter().any(|p| p == t.project))
        {
            e.defer(
                t.id,
                format!("project {} runs at weekends only", t.project),
                Some(saturday),
            );
        }
        e
    }
}

export_policy!(Weekends);

#[cfg(test)]
mod tests {
    use super::*;
    use nightjar_sdk::testing::SnapshotBuilder;

    #[test]
    fn render_waits_until_saturday_and_others_are_left_alone() {
        let config = Weekends::configure("projects = [\"render\"]").unwrap();
        // 2026-11-30 12:00 UTC is a Monday.
        let monday = 1_796_040_000_000;
        let s = SnapshotBuilder::at(monday)
            .queued(1, "render", Priority::Normal, 0)
            .queued(2, "vision", Priority::Normal, 0)
            .build();
        let e = Weekends::evaluate(&config, &s);
        assert_eq!(e.verdicts.len(), 1);
        match &e.verdicts[0].verdict {
            // Saturday 2026-12-05 00:00 UTC.
            Verdict::Defer(d) => assert_eq!(d.until, Some(1_796_428_800_000)),
            other => panic!("{other:?}"),
        }
        let saturday = SnapshotBuilder::at(1_796_428_800_000 + 3_600_000)
            .queued(1, "render", Priority::Normal, 0)
            .build();
        assert!(Weekends::evaluate(&config, &saturday).verdicts.is_empty());
    }

    #[test]
    fn the_config_reads_a_list_or_one_string_and_names_a_bad_key() {
        let one = Weekends::configure("projects = \"render, archive\"").unwrap();
        assert_eq!(one.projects, ["render", "archive"]);
        assert!(Weekends::configure("").unwrap().projects.is_empty());
        let e = Weekends::configure("project = [\"render\"]").err().unwrap();
        assert_eq!(e.key.as_deref(), Some("project"));
        let e = Weekends::configure("projects = 3").err().unwrap();
        assert_eq!(e.key.as_deref(), Some("projects"));
    }
}
