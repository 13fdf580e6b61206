//! `weekends`: tasks of the listed projects run only on Saturdays and
//! Sundays (in the daemon's time zone). Everything else is left alone.
//!
//! Config (`[plugin.weekends.config]` in the daemon config):
//!
//! ```toml
//! projects = "render,archive"
//! ```

use std::sync::Mutex;

use nightjar_sdk::time::{DAY_MS, is_weekend, weekday};
use nightjar_sdk::*;

static PROJECTS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// The policy.
pub struct Weekends;

impl Policy for Weekends {
    fn configure(config: String) -> Result<(), ConfigError> {
        // One key, `projects = "a,b"`: simple enough to read without a TOML parser.
        let mut projects = Vec::new();
        for line in config.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let Some(value) = line
                .strip_prefix("projects")
                .map(|r| r.trim_start_matches([' ', '=']))
            else {
                return Err(ConfigError {
                    key: None,
                    message: format!("unknown line `{line}`: only `projects = \"a,b\"`"),
                });
            };
            projects.extend(
                value
                    .trim_matches('"')
                    .split(',')
                    .map(|p| p.trim().to_string())
                    .filter(|p| !p.is_empty()),
            );
        }
        *PROJECTS.lock().unwrap_or_else(|p| p.into_inner()) = projects;
        Ok(())
    }

    fn evaluate(s: Snapshot) -> Evaluation {
        let mut e = Evaluation::default();
        if is_weekend(&s) {
            return e;
        }
        // Next Saturday 00:00 local time, as Unix ms.
        let local = s.now + s.utc_offset as i64 * 1000;
        let days = (5 - weekday(&s) as i64).rem_euclid(7);
        let saturday = (local.div_euclid(DAY_MS) + days) * DAY_MS - s.utc_offset as i64 * 1000;
        let projects = PROJECTS.lock().unwrap_or_else(|p| p.into_inner()).clone();
        for t in s.queue.iter().filter(|t| projects.contains(&t.project)) {
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
        Weekends::configure("projects = \"render\"".into()).unwrap();
        // 2026-11-30 12:00 UTC is a Monday.
        let monday = 1_796_040_000_000;
        let s = SnapshotBuilder::at(monday)
            .queued(1, "render", Priority::Normal, 0)
            .queued(2, "vision", Priority::Normal, 0)
            .build();
        let e = Weekends::evaluate(s);
        assert_eq!(e.verdicts.len(), 1);
        match &e.verdicts[0].verdict {
            // Saturday 2026-12-05 00:00 UTC.
            Verdict::Defer(d) => assert_eq!(d.until, Some(1_796_428_800_000)),
            other => panic!("{other:?}"),
        }
        let saturday = SnapshotBuilder::at(1_796_428_800_000 + 3_600_000)
            .queued(1, "render", Priority::Normal, 0)
            .build();
        assert!(Weekends::evaluate(saturday).verdicts.is_empty());
    }
}
