//! The finished runs of a period as trace rows (`run-trace`): what
//! `nightjar report --trace` writes and `nightjar simulate --history`
//! replays.

use rusqlite::params;

use super::{Result, Store};
use crate::task::model::TaskSpec;
use nightjar_core::api::history::{MAX_TRACE_ROWS, TraceRow, TraceRows};

impl Store {
    /// The runs that became eligible in `[from, to)`: the finished ones as
    /// rows (at most [`MAX_TRACE_ROWS`]), by eligible time then id, and how
    /// many are still in progress.
    pub fn trace_rows(&self, from: i64, to: i64) -> Result<TraceRows> {
        let running: i64 = self.conn.query_row(
            "SELECT COUNT(*) FROM runs WHERE eligible_at >= ?1 AND eligible_at < ?2
               AND state != 'finished'",
            params![from, to],
            |r| r.get(0),
        )?;
        let mut stmt = self.conn.prepare_cached(
            "SELECT r.id, r.task_id, r.eligible_at, r.started_at, r.finished_at, r.gpus,
                    t.name, t.project, t.owner, r.energy_j, t.spec
             FROM runs r JOIN tasks t ON t.id = r.task_id
             WHERE r.eligible_at >= ?1 AND r.eligible_at < ?2 AND r.state = 'finished'
               AND r.finished_at IS NOT NULL
             ORDER BY r.eligible_at, r.id LIMIT ?3",
        )?;
        let limit = i64::try_from(MAX_TRACE_ROWS + 1).unwrap_or(i64::MAX);
        let mut rows = stmt
            .query_map(params![from, to, limit], |r| {
                let gpus: Option<String> = r.get(5)?;
                let spec: String = r.get(10)?;
                Ok((
                    TraceRow {
                        run: r.get(0)?,
                        task: r.get(1)?,
                        eligible_at: r.get(2)?,
                        started_at: r.get(3)?,
                        finished_at: r.get(4)?,
                        gpus: super::policy::gpu_list(gpus).len() as u32,
                        name: r.get(6)?,
                        project: r.get(7)?,
                        user: r.get(8)?,
                        priority: String::new(),
                        gpu_mem: None,
                        timeout_ms: None,
                        energy_j: r.get(9)?,
                        preemptible: false,
                    },
                    spec,
                ))
            })?
            .map(|row| {
                let (mut row, spec) = row?;
                // A spec that no longer decodes keeps the row with the defaults.
                if let Ok(spec) = serde_json::from_str::<TaskSpec>(&spec) {
                    row.priority = spec.priority.as_str().to_string();
                    row.gpu_mem = spec.resources.gpu_mem.map(|b| b.as_u64());
                    row.timeout_ms = spec
                        .resources
                        .timeout
                        .map(|t| i64::try_from(t.as_millis()).unwrap_or(i64::MAX));
                    row.preemptible = spec.preemptible;
                } else {
                    row.priority = "normal".into();
                }
                Ok(row)
            })
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let truncated = rows.len() > MAX_TRACE_ROWS;
        rows.truncate(MAX_TRACE_ROWS);
        Ok(TraceRows {
            from,
            to,
            rows,
            running: running.max(0) as u64,
            truncated,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::store::tests::{outcome, store, submit};
    use crate::store::{NewRun, RunClass};

    fn end(s: &mut crate::store::Store, run: i64, class: RunClass, at: i64) {
        s.finish_run(run, &outcome(class, 0, at)).unwrap();
    }

    #[test]
    fn finished_runs_eligible_in_the_period_are_rows_and_running_ones_are_counted() {
        let (dir, mut s) = store();
        let file = "name = \"a\"\nproject = \"p\"\ncommand = \"true\"\npriority = \"high\"\n[resources]\ntimeout = \"1h\"\ngpu_mem = \"1GiB\"\ngpus = 1\n";
        let a = submit(&mut s, file)[0];
        let b = submit(&mut s, "name = \"b\"\ncommand = \"true\"\n")[0];
        let one = NewRun {
            gpus: Some("3".into()),
            ..NewRun::default()
        };
        let r1 = s.claim(a, &one, dir.path(), 1_000).unwrap().unwrap().id;
        end(&mut s, r1, RunClass::AppError, 5_000);
        // A second task's run: a second row (a retry's run is one too:
        // rows are runs).
        let c = submit(&mut s, file)[0];
        let r2 = s.claim(c, &one, dir.path(), 6_000).unwrap().unwrap();
        end(&mut s, r2.id, RunClass::Ok, 9_000);
        // Still running: counted, not a row.
        s.claim(b, &NewRun::default(), dir.path(), 2_000)
            .unwrap()
            .unwrap();
        let t = s.trace_rows(0, 1_000_000_000_000_000).unwrap();
        assert_eq!(t.running, 1);
        let runs: Vec<i64> = t.rows.iter().map(|r| r.run).collect();
        assert_eq!(runs.len(), 2, "{runs:?}");
        assert!(runs.contains(&r1) && runs.contains(&r2.id));
        let row = &t.rows[0];
        assert_eq!((row.task, row.gpus, row.priority.as_str()), (a, 1, "high"));
        assert_eq!(
            (row.gpu_mem, row.timeout_ms),
            (Some(1 << 30), Some(3_600_000))
        );
        // A period that ends before a run was eligible leaves it out.
        let first = t.rows.iter().map(|r| r.eligible_at).min().unwrap();
        assert!(s.trace_rows(0, first).unwrap().rows.is_empty());
    }
}
