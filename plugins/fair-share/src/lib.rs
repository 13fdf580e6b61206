//! `fair-share`: fair turns between projects. Each project has a share;
//! its usage (GPU-hours, CPU-only runs count as one GPU) decays with a
//! half-life. A waiting task scores by its project's share deficit (its
//! target fraction minus its fraction of the decayed usage), so projects
//! below their share go first. Per-project caps on running tasks defer the
//! rest. When a project far below its share waits while a project over its
//! share runs, the policy asks the host to preempt that project's newest run.
//!
//! ```toml
//! [plugin.fair-share.config]
//! half_life = "24h"
//! default_share = 1
//! max_score = 100          # score of a full deficit
//! preempt_below = 0.25     # ask for preemption below this fraction of the share (0: never)
//! [plugin.fair-share.config.shares]
//! vision = 2
//! bio = 1
//! [plugin.fair-share.config.caps]
//! bio = 2                  # at most 2 running tasks
//! ```

use nightjar_sdk::config::Duration;
use nightjar_sdk::*;
use serde::Deserialize;
use std::collections::BTreeMap;

mod usage;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct Config {
    half_life: Duration,
    default_share: f64,
    max_score: i32,
    preempt_below: f64,
    shares: BTreeMap<String, f64>,
    caps: BTreeMap<String, u32>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            half_life: Duration::from_ms(24 * 3_600_000),
            default_share: 1.0,
            max_score: 100,
            preempt_below: 0.0,
            shares: BTreeMap::new(),
            caps: BTreeMap::new(),
        }
    }
}

/// The distinct projects of a snapshot, by first appearance. The SDK hands
/// out one `&str` per project of a snapshot, so a lookup compares addresses
/// before it compares text; past a few dozen projects it looks them up by
/// name instead.
#[derive(Default)]
struct Projects<'a> {
    names: Vec<&'a str>,
    index: BTreeMap<&'a str, usize>,
}

impl<'a> Projects<'a> {
    const SCAN: usize = 32;

    fn of(&mut self, p: &'a str) -> usize {
        let found = if self.names.len() <= Self::SCAN {
            (self.names.iter().position(|q| std::ptr::eq(*q, p)))
                .or_else(|| self.names.iter().position(|q| *q == p))
        } else {
            self.index.get(p).copied()
        };
        found.unwrap_or_else(|| {
            self.names.push(p);
            self.index.insert(p, self.names.len() - 1);
            self.names.len() - 1
        })
    }
}

/// The policy.
struct FairShare;

impl Policy for FairShare {
    type Config = Config;

    fn check_config(cfg: &Config) -> Result<(), ConfigError> {
        if cfg.half_life.ms() <= 0 {
            return Err(ConfigError::at(
                "half_life",
                "must be longer than 0; use a duration like 24h",
            ));
        }
        if let Some((p, s)) = cfg.shares.iter().find(|(_, s)| **s <= 0.0) {
            return Err(ConfigError::at(
                format!("shares.{p}"),
                format!(
                    "share {s} must be above 0; leave the project out to give it default_share"
                ),
            ));
        }
        if cfg.default_share <= 0.0 {
            return Err(ConfigError::at("default_share", "must be above 0"));
        }
        Ok(())
    }

    fn evaluate(cfg: &Config, s: &Snapshot) -> Evaluation {
        // A verdict per task: sized once.
        let mut e = Evaluation::with_capacity(s.queue.len());
        let edit = nightjar_sdk::usage_edit::usage_edit();
        let used = usage::usage(cfg.half_life.ms(), s, edit.as_ref());
        let mut projects = Projects::default();
        let of_task: Vec<usize> = s.queue.iter().map(|t| projects.of(t.project)).collect();
        for p in s
            .running
            .iter()
            .map(|t| t.project)
            .chain(used.keys().map(String::as_str))
        {
            projects.of(p);
        }
        let share = |p: &str| cfg.shares.get(p).copied().unwrap_or(cfg.default_share);
        // Summed in name order, so the total does not depend on the queue's order.
        let mut sorted = projects.names.clone();
        sorted.sort_unstable();
        let total_share: f64 = sorted.iter().map(|p| share(p)).sum();
        let total_used: f64 = used.values().sum();
        let fraction = |p: &str| {
            if total_used > 0.0 {
                used.get(p).copied().unwrap_or(0.0) / total_used
            } else {
                0.0
            }
        };
        let target = |p: &str| share(p) / total_share;
        let mut running: BTreeMap<&str, u32> = BTreeMap::new();
        for r in &s.running {
            *running.entry(r.project).or_insert(0) += 1;
        }
        // Every task of a project gets the same verdict: decided once per project.
        let verdicts: Vec<Result<i32, Reason>> = projects
            .names
            .iter()
            .map(|&p| match cfg.caps.get(p) {
                Some(cap) if running.get(p).copied().unwrap_or(0) >= *cap => Err(Reason::from(
                    format!("project {p} has {cap} running (its cap)"),
                )),
                _ => Ok(((target(p) - fraction(p)) * cfg.max_score as f64).round() as i32),
            })
            .collect();
        for (t, &k) in s.queue.iter().zip(&of_task) {
            match verdicts.get(k) {
                Some(Ok(score)) => e.allow(t.id, *score),
                Some(Err(reason)) => e.defer(t.id, reason.clone(), None),
                None => {}
            }
        }
        // Preemption: the starved project with the largest deficit, against
        // the newest run of the most over-served running project.
        if cfg.preempt_below > 0.0 && total_used > 0.0 {
            let starved = s
                .queue
                .iter()
                .map(|t| t.project)
                .filter(|p| fraction(p) < cfg.preempt_below * target(p))
                .max_by(|a, b| (target(a) - fraction(a)).total_cmp(&(target(b) - fraction(b))));
            if let Some(starved) = starved {
                let victim = s
                    .running
                    .iter()
                    .filter(|r| fraction(r.project) > target(r.project))
                    .max_by_key(|r| r.started_at);
                if let Some(v) = victim {
                    e.preempt(
                        v.id,
                        format!(
                            "project {starved} has {:.0}% of its share's use while {} has {:.0}%",
                            100.0 * fraction(starved) / target(starved),
                            v.project,
                            100.0 * fraction(v.project) / target(v.project)
                        ),
                    );
                }
            }
        }
        e
    }
}

export_policy!(FairShare);

#[cfg(test)]
mod tests {
    use super::*;
    use nightjar_sdk::testing::SnapshotBuilder;

    const H: i64 = 3_600_000;

    fn scores(e: &Evaluation) -> BTreeMap<i64, i32> {
        e.verdicts
            .iter()
            .filter_map(|v| match v.verdict {
                Verdict::Allow(s) => Some((v.task, s)),
                _ => None,
            })
            .collect()
    }

    fn parse(text: &str) -> Result<Config, ConfigError> {
        FairShare::configure(text)
    }

    #[test]
    fn the_project_below_its_share_scores_higher_caps_defer_and_starvation_preempts() {
        let cfg = parse(
            "half_life = \"24h\"\nmax_score = 100\npreempt_below = 0.5\n[shares]\nvision = 1\nbio = 1\n[caps]\nbio = 1\n",
        )
        .unwrap();
        let now = 100 * H;
        let s = SnapshotBuilder::at(now)
            // vision used 9 GPU-hours just now, bio 1.
            .usage("vision", 1, now - 9 * H, Some(now))
            .usage("bio", 1, now - H, Some(now))
            .running(50, "vision", vec![0], now - H)
            .queued(1, "vision", Priority::Normal, 0)
            .queued(2, "bio", Priority::Normal, 0)
            .build();
        let e = FairShare::evaluate(&cfg, &s);
        let sc = scores(&e);
        assert_eq!(sc[&1], -40, "vision: target 50%, uses 90%");
        assert_eq!(sc[&2], 40, "bio: target 50%, uses 10%");
        assert_eq!(e.preempt.len(), 1, "bio at 20% of its share is starved");
        assert_eq!(e.preempt[0].task, 50);

        let capped = SnapshotBuilder::at(now)
            .running(51, "bio", vec![], now)
            .queued(3, "bio", Priority::Normal, 0)
            .build();
        let e = FairShare::evaluate(&cfg, &capped);
        assert!(
            matches!(&e.verdicts[0].verdict, Verdict::Defer(d) if d.reason == "project bio has 1 running (its cap)")
        );
    }

    #[test]
    fn old_usage_decays_with_the_half_life() {
        let cfg = parse("half_life = \"10h\"").unwrap();
        let now = 100 * H;
        let s = SnapshotBuilder::at(now)
            .usage("a", 2, now - 11 * H, Some(now - 10 * H))
            .build();
        let u = usage::usage(cfg.half_life.ms(), &s, None);
        assert!(
            (u["a"] - 1.0).abs() < 1e-9,
            "2 GPU-hours, one half-life ago: {u:?}"
        );
    }

    #[test]
    fn after_a_long_idle_spell_the_decayed_usage_still_decides() {
        // Nothing ran for 48 half-lives: every run weighs about 2^-48 of
        // itself, and the projects' shares of that are still 90% and 10%.
        let cfg = parse("half_life = \"1h\"\npreempt_below = 0.5").unwrap();
        let now = 1_000 * H;
        let end = now - 48 * H;
        let s = SnapshotBuilder::at(now)
            .usage("vision", 1, end - 9 * H, Some(end))
            .usage("bio", 1, end - H, Some(end))
            .running(50, "vision", vec![0], now - 1)
            .queued(1, "vision", Priority::Normal, 0)
            .queued(2, "bio", Priority::Normal, 0)
            .build();
        let e = FairShare::evaluate(&cfg, &s);
        let sc = scores(&e);
        assert_eq!((sc[&1], sc[&2]), (-40, 40), "{sc:?}");
        assert_eq!(e.preempt.len(), 1, "bio at 20% of its share is starved");
    }

    #[test]
    fn bad_config_names_the_key() {
        assert_eq!(
            parse("[shares]\nx = 0").unwrap_err().key.as_deref(),
            Some("shares.x")
        );
        assert_eq!(
            parse("half_life = \"never\"").unwrap_err().key.as_deref(),
            Some("half_life")
        );
        assert_eq!(
            parse("half_life = \"0h\"").unwrap_err().key.as_deref(),
            Some("half_life")
        );
        assert_eq!(
            parse("[caps]\nbio = -1").unwrap_err().key.as_deref(),
            Some("caps.bio")
        );
    }
}
