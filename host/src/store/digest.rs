//! The digest: what the runs that ended in a period add up to (outcomes by
//! class, the failures, GPU-hours and energy per project, the queue now),
//! written into the outbox once per scheduled period.

use std::collections::BTreeMap;

use rusqlite::{OptionalExtension, params};
use serde_json::{Value, json};

use super::outbox::{Severity, outbox};
use super::{Result, Store, exec, row};

/// Failures a digest names one by one (the rest are counted).
pub const MAX_FAILURES_LISTED: usize = 20;

/// The runs that ended in `[?1, ?2)`, through the index `runs_finished`
/// (schema 8), named: without statistics SQLite would pick `runs_state`
/// and read every run the lab ever finished for one day's digest.
const RUNS_OF_PERIOD: &str = "SELECT r.class, t.project, t.name, r.task_id,
        r.finished_at - r.started_at,
        CASE WHEN r.gpus IS NULL OR r.gpus = '' THEN 0
             ELSE length(r.gpus) - length(replace(r.gpus, ',', '')) + 1 END,
        (SELECT SUM(g.energy_j) FROM run_gpus g WHERE g.run_id = r.id)
 FROM runs r INDEXED BY runs_finished JOIN tasks t ON t.id = r.task_id
 WHERE r.state = 'finished' AND r.finished_at >= ?1 AND r.finished_at < ?2
 ORDER BY r.finished_at, r.id";

impl Store {
    /// The end of the last scheduled digest's period (Unix ms) that is not
    /// after `now`, if any. A period that ends later was told while the
    /// clock was ahead: counted from, it would hold every digest back until
    /// the clock caught up with it (years, for a machine that booted in
    /// 2040 and was set right).
    pub fn last_digest_end(&self, now: i64) -> Result<Option<i64>> {
        Ok(row(
            &self.conn,
            "SELECT MAX(period_end) FROM digests WHERE period_end <= ?1",
            [now],
            |r| r.get::<_, Option<i64>>(0),
        )
        .optional()?
        .flatten())
    }

    /// What the runs that ended in `[from, to)` add up to, as the digest
    /// event's facts.
    pub fn digest_facts(&self, from: i64, to: i64) -> Result<Value> {
        let mut stmt = self.conn.prepare(RUNS_OF_PERIOD)?;
        let rows = stmt.query_map(params![from, to], |r| {
            Ok((
                r.get::<_, Option<String>>(0)?
                    .unwrap_or_else(|| "lost".into()),
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, i64>(3)?,
                r.get::<_, Option<i64>>(4)?.unwrap_or(0).max(0),
                r.get::<_, i64>(5)?,
                r.get::<_, Option<f64>>(6)?,
            ))
        })?;
        let mut by_class: BTreeMap<String, u64> = BTreeMap::new();
        let mut failures = Vec::new();
        let mut failed = 0u64;
        let mut projects: BTreeMap<String, (u64, f64, Option<f64>)> = BTreeMap::new();
        let mut runs = 0u64;
        for r in rows {
            let (class, project, name, task, ms, gpus, energy_j) = r?;
            runs += 1;
            *by_class.entry(class.clone()).or_default() += 1;
            if class != "ok" {
                failed += 1;
                if failures.len() < MAX_FAILURES_LISTED {
                    failures.push(
                        json!({"task": task, "name": name, "project": project, "class": class}),
                    );
                }
            }
            let p = projects.entry(project).or_insert((0, 0.0, None));
            p.0 += 1;
            p.1 += gpus as f64 * ms as f64 / 3_600_000.0;
            if let Some(j) = energy_j {
                p.2 = Some(p.2.unwrap_or(0.0) + j / 3_600_000.0);
            }
        }
        let count = |state: &str| -> Result<i64> {
            Ok(row(
                &self.conn,
                "SELECT COUNT(*) FROM tasks WHERE state = ?1",
                [state],
                |r| r.get(0),
            )?)
        };
        Ok(json!({
            "from": from,
            "to": to,
            "runs": runs,
            "succeeded": by_class.get("ok").copied().unwrap_or(0),
            "failed": failed,
            "by_class": by_class,
            "failures": failures,
            "projects": projects.into_iter().map(|(p, (runs, gpu_hours, kwh))| json!({
                "project": p,
                "runs": runs,
                "gpu_hours": (gpu_hours * 100.0).round() / 100.0,
                "energy_kwh": kwh.map(|k| (k * 1000.0).round() / 1000.0),
            })).collect::<Vec<_>>(),
            "queued": count("queued")?,
            "running": count("running")?,
            "held": count("held")?,
        }))
    }

    /// Writes the digest of `[from, to)` into the outbox at `at`, naming
    /// the HTML report of the period written at `report`, if any. With
    /// `scheduled`, also records the period, once: `false` when a digest
    /// for a period ending at `to` was already written (a restart that
    /// caught up twice).
    pub fn write_digest(
        &mut self,
        at: i64,
        from: i64,
        to: i64,
        scheduled: bool,
        report: Option<&str>,
    ) -> Result<bool> {
        let mut facts = self.digest_facts(from, to)?;
        if let Some(path) = report {
            facts["report"] = json!(path);
        }
        let severity = if facts["failed"].as_u64().unwrap_or(0) > 0 {
            Severity::Warning
        } else {
            Severity::Info
        };
        let tx = self.conn.transaction()?;
        if scheduled {
            let fresh = exec(
                &tx,
                "INSERT OR IGNORE INTO digests (period_end, period_start, at) VALUES (?1, ?2, ?3)",
                params![to, from, at],
            )?;
            if fresh == 0 {
                return Ok(false);
            }
        }
        outbox(&tx, at, "digest", severity, None, None, None, facts)?;
        tx.commit()?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{outcome, store, submit};
    use crate::store::{NewRun, RunClass};

    #[test]
    fn the_digest_reads_the_runs_of_its_period_through_an_index() {
        let (_dir, s) = store();
        let mut stmt = s
            .conn
            .prepare(&format!("EXPLAIN QUERY PLAN {}", super::RUNS_OF_PERIOD))
            .unwrap();
        let plan: Vec<String> = stmt
            .query_map(rusqlite::params![0, 1], |r| r.get::<_, String>(3))
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        assert!(
            plan.iter()
                .any(|p| p.contains("SEARCH r USING INDEX runs_finished")),
            "every finished run is read for each digest: {plan:?}"
        );
    }

    #[test]
    fn a_digest_sums_the_period_and_a_scheduled_period_is_written_once() {
        let (dir, mut s) = store();
        let ids = submit(
            &mut s,
            "[[task]]\ncommand = \"a\"\nproject = \"vision\"\n[[task]]\ncommand = \"b\"\nproject = \"nlp\"\n[[task]]\ncommand = \"c\"\n",
        );
        let run = |s: &mut super::Store, t: i64, gpus: &str, class: RunClass, end: i64| {
            let new = NewRun {
                gpus: (!gpus.is_empty()).then(|| gpus.to_string()),
                ..NewRun::default()
            };
            let r = s.claim(t, &new, dir.path(), 2_000).unwrap().unwrap().id;
            s.finish_run(r, &outcome(class, 1, end)).unwrap();
        };
        run(&mut s, ids[0], "0,1", RunClass::Ok, 2_000 + 3_600_000);
        run(&mut s, ids[1], "0", RunClass::GpuOom, 2_000 + 1_800_000);
        // Outside the period.
        run(&mut s, ids[2], "", RunClass::AppError, 9_000_000);
        let f = s.digest_facts(0, 5_000_000).unwrap();
        assert_eq!(
            (f["runs"].as_u64(), f["failed"].as_u64()),
            (Some(2), Some(1)),
            "{f}"
        );
        assert_eq!(f["by_class"]["gpu-oom"], 1);
        assert_eq!(f["failures"][0]["task"], ids[1]);
        let vision = f["projects"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["project"] == "vision")
            .unwrap()
            .clone();
        assert_eq!(vision["gpu_hours"], 2.0, "two GPUs for an hour: {f}");
        assert!(
            vision["energy_kwh"].is_null(),
            "no GPU records: not measured"
        );

        assert!(s.write_digest(6_000_000, 0, 5_000_000, true, None).unwrap());
        assert!(
            !s.write_digest(6_000_001, 0, 5_000_000, true, None).unwrap(),
            "told once"
        );
        assert_eq!(s.last_digest_end(6_000_000).unwrap(), Some(5_000_000));
        let events = s.events_after(0, 100).unwrap();
        assert_eq!(events.iter().filter(|e| e.kind == "digest").count(), 1);
        assert!(
            events[0].facts.get("report").is_none(),
            "no report: no fact"
        );
        // A digest asked for by hand does not move the schedule; it names
        // its report.
        let report = "/state/reports/1970-01-01_02-56.html";
        assert!(
            s.write_digest(7_000_000, 5_000_000, 7_000_000, false, Some(report))
                .unwrap()
        );
        assert_eq!(s.last_digest_end(7_000_000).unwrap(), Some(5_000_000));
        let events = s.events_after(0, 100).unwrap();
        assert_eq!(events.last().unwrap().facts["report"], report);
    }

    #[test]
    fn a_period_told_while_the_clock_was_ahead_does_not_hold_the_next_back() {
        let (_dir, mut s) = store();
        let day = 24 * 3_600_000;
        assert!(s.write_digest(day, 0, day, true, None).unwrap());
        // The clock ran ten years ahead for a while, and a digest was told.
        let ahead = 3650 * day;
        assert!(
            s.write_digest(ahead + 1, ahead - day, ahead, true, None)
                .unwrap()
        );
        assert_eq!(s.last_digest_end(ahead).unwrap(), Some(ahead));
        // Set right, the next digest counts from the last period in the past.
        assert_eq!(s.last_digest_end(2 * day - 1).unwrap(), Some(day));
        assert!(s.write_digest(2 * day, day, 2 * day, true, None).unwrap());
        assert_eq!(s.last_digest_end(2 * day).unwrap(), Some(2 * day));
        assert_eq!(s.last_digest_end(0).unwrap(), None);
    }
}
