//! `shortest-first`: waiting tasks start shortest first, by their
//! estimated runtime (the task's `timeout`, or in `nightjar simulate` the
//! trace's `estimate_s`). With this policy as the whole chain and
//! `--order first-fit`, the simulator gives the textbook non-preemptive
//! shortest-job-first schedule: ties fall to the built-in order (priority,
//! then arrival, then id). A task without an estimate is scored as the
//! longest (`unknown_last = true`, the default) or left at 0.
//!
//! Config (`[plugin.shortest-first.config]` in the daemon config):
//!
//! ```toml
//! unknown_last = true   # a task with no estimate starts after those with one
//! ```

use nightjar_sdk::*;

/// The configuration: every key has a default, a misspelt key is an error.
#[derive(serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
struct Config {
    /// Whether a task without an estimate goes after every task with one.
    unknown_last: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config { unknown_last: true }
    }
}

/// The policy.
struct ShortestFirst;

/// A score from an estimate: one point less per whole second, so shorter
/// scores higher; runtimes past `i32::MAX` seconds (68 years) tie.
fn score(estimate_ms: u64) -> i32 {
    let secs = (estimate_ms / 1000).min(i32::MAX as u64 - 1) as i32;
    -secs
}

impl Policy for ShortestFirst {
    type Config = Config;

    fn evaluate(config: &Config, s: &Snapshot) -> Evaluation {
        let mut e = Evaluation::default();
        for t in &s.queue {
            match t.estimated_runtime {
                Some(ms) => e.allow(t.id, score(ms)),
                None if config.unknown_last => e.allow(t.id, i32::MIN),
                None => {}
            }
        }
        e
    }
}

export_policy!(ShortestFirst);

#[cfg(test)]
mod tests {
    use super::*;
    use nightjar_sdk::testing::{SnapshotBuilder, queued_task};

    fn task(id: i64, estimate_s: Option<u64>) -> QueuedTask<'static> {
        let mut t = queued_task(id, "p", Priority::Normal, id);
        t.estimated_runtime = estimate_s.map(|s| s * 1000);
        t
    }

    fn scores(config: &Config, tasks: Vec<QueuedTask<'static>>) -> Vec<(i64, i32)> {
        let mut b = SnapshotBuilder::at(0);
        for t in tasks {
            b = b.queued_task(t);
        }
        let e = ShortestFirst::evaluate(config, &b.build());
        e.verdicts
            .iter()
            .map(|v| match v.verdict {
                Verdict::Allow(s) => (v.task, s),
                ref other => panic!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn shorter_estimates_score_higher_and_unknown_ones_last() {
        let config = Config::default();
        let got = scores(
            &config,
            vec![task(1, Some(600)), task(2, Some(60)), task(3, None)],
        );
        assert_eq!(got, [(1, -600), (2, -60), (3, i32::MIN)]);
    }

    #[test]
    fn unknown_estimates_can_be_left_unscored() {
        let config = ShortestFirst::configure("unknown_last = false").unwrap();
        let got = scores(&config, vec![task(1, Some(5)), task(2, None)]);
        assert_eq!(got, [(1, -5)]);
        let e = ShortestFirst::configure("unknown_first = true")
            .err()
            .unwrap();
        assert_eq!(e.key.as_deref(), Some("unknown_first"));
    }

    #[test]
    fn very_long_estimates_saturate_instead_of_wrapping() {
        assert_eq!(score(u64::MAX), -(i32::MAX - 1));
        assert!(
            score(u64::MAX) > i32::MIN,
            "still ahead of an unknown estimate"
        );
    }
}
