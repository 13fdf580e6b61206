//! What backfill and staggered starts read from the store: the durations of
//! recent successful runs of a task's name and project (its runtime
//! estimate), and the runs started lately on each GPU (so a restarted
//! daemon keeps the stagger).

use rusqlite::OptionalExtension;

use super::{Result, Store};

/// The durations of a name's recent successful runs. Asked for every
/// placeable task in a pass after any success: it must find the name's
/// tasks by index (`tasks_name_project`), never walk every finished run.
/// `CROSS JOIN` keeps tasks the outer loop and `+r.state` keeps SQLite off
/// `runs_state` (without statistics it prefers that index, a walk of every
/// finished run: ~15 ms per lookup at 50,000 runs against ~0.1 ms).
pub(super) const RECENT_SQL: &str = "SELECT r.finished_at, r.id, r.finished_at - r.started_at
     FROM tasks t INDEXED BY tasks_name_project CROSS JOIN runs r ON r.task_id = t.id
     WHERE t.name = ?1 AND t.project = ?2 AND +r.state = 'finished' AND r.class = 'ok'
       AND r.finished_at IS NOT NULL
     ORDER BY r.finished_at DESC, r.id DESC LIMIT ?3";

/// One successful run in a name's history: when it ended, its id, how
/// long (ms) it ran. Newest first is `(finished_at, run)` descending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recent {
    /// When it ended (Unix ms).
    pub finished_at: i64,
    /// The run's id.
    pub run: i64,
    /// How long it ran (ms).
    pub ms: i64,
}

impl Store {
    /// The last `n` successful runs of tasks named `name` in `project`,
    /// newest first (by end, then id).
    pub fn recent_runs(&self, name: &str, project: &str, n: u32) -> Result<Vec<Recent>> {
        let mut stmt = self.conn.prepare_cached(RECENT_SQL)?;
        let rows = stmt
            .query_map(rusqlite::params![name, project, n], |r| {
                Ok(Recent {
                    finished_at: r.get(0)?,
                    run: r.get(1)?,
                    ms: r.get(2)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// A run that ended `ok`: its task's name and project and the run as a
    /// history entry; `None` for any other run. One lookup by the run's id.
    pub fn ok_run(&self, run: i64) -> Result<Option<(String, String, Recent)>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT t.name, t.project, r.finished_at, r.id, r.finished_at - r.started_at
             FROM runs r JOIN tasks t ON t.id = r.task_id
             WHERE r.id = ?1 AND r.state = 'finished' AND r.class = 'ok'
               AND r.finished_at IS NOT NULL",
        )?;
        let found = stmt
            .query_row([run], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    Recent {
                        finished_at: r.get(2)?,
                        run: r.get(3)?,
                        ms: r.get(4)?,
                    },
                ))
            })
            .optional()?;
        Ok(found)
    }

    /// The mean draw of the last `n` successful runs of tasks named `name`
    /// in `project` whose energy was recorded, newest first: watts per GPU
    /// held (the whole run's for a run without GPUs). What a forecast
    /// prices a run of that name at.
    pub fn recent_power(&self, name: &str, project: &str, n: u32) -> Result<Vec<f64>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT r.energy_j * 1000.0 / (r.finished_at - r.started_at)
                    / MAX(1, CASE WHEN COALESCE(r.gpus, '') = '' THEN 1
                             ELSE length(r.gpus) - length(replace(r.gpus, ',', '')) + 1 END)
             FROM tasks t INDEXED BY tasks_name_project CROSS JOIN runs r ON r.task_id = t.id
             WHERE t.name = ?1 AND t.project = ?2 AND +r.state = 'finished' AND r.class = 'ok'
               AND r.energy_j IS NOT NULL AND r.finished_at > r.started_at
             ORDER BY r.finished_at DESC, r.id DESC LIMIT ?3",
        )?;
        let rows = stmt
            .query_map(rusqlite::params![name, project, n], |r| r.get(0))?
            .collect::<rusqlite::Result<Vec<f64>>>()?;
        Ok(rows)
    }

    /// Runs that started on GPUs at or after `since`: (task, GPU indices,
    /// when), oldest first.
    pub fn gpu_starts_since(&self, since: i64) -> Result<Vec<(i64, Vec<u32>, i64)>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT task_id, gpus, started_at FROM runs
             WHERE started_at >= ?1 AND gpus IS NOT NULL ORDER BY started_at, id",
        )?;
        let rows = stmt
            .query_map([since], |r| {
                let gpus: Option<String> = r.get(1)?;
                Ok((r.get(0)?, super::policy::gpu_list(gpus), r.get(2)?))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use crate::store::tests::{outcome, store, submit};
    use crate::store::{NewRun, RunClass};

    fn finish(s: &mut crate::store::Store, run: i64, class: RunClass, at: i64) {
        s.finish_run(run, &outcome(class, 0, at)).unwrap();
    }

    #[test]
    fn a_names_history_is_found_by_index_not_by_walking_every_finished_run() {
        let (_dir, s) = store();
        let plan: Vec<String> = s
            .conn
            .prepare(&format!("EXPLAIN QUERY PLAN {}", super::RECENT_SQL))
            .unwrap()
            .query_map(rusqlite::params!["n", "p", 10], |r| r.get::<_, String>(3))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        let plan = plan.join("\n");
        assert!(
            plan.contains("INDEX tasks_name_project (name=? AND project=?)"),
            "{plan}"
        );
        assert!(!plan.contains("runs_state"), "{plan}");
    }

    #[test]
    fn durations_are_of_successful_runs_of_the_same_name_and_project_newest_first() {
        let (dir, mut s) = store();
        let a = submit(
            &mut s,
            "name = \"prep\"\nproject = \"p\"\ncommand = \"true\"\n",
        );
        let b = submit(
            &mut s,
            "name = \"prep\"\nproject = \"p\"\ncommand = \"true\"\n",
        );
        let c = submit(
            &mut s,
            "name = \"prep\"\nproject = \"p\"\ncommand = \"true\"\n",
        );
        let other = submit(
            &mut s,
            "name = \"prep\"\nproject = \"q\"\ncommand = \"true\"\n",
        );
        let gpu0 = NewRun {
            gpus: Some("0,2".into()),
            ..NewRun::default()
        };
        let ra = s.claim(a[0], &gpu0, dir.path(), 1_000).unwrap().unwrap().id;
        finish(&mut s, ra, RunClass::Ok, 61_000);
        let rb = s
            .claim(b[0], &NewRun::default(), dir.path(), 2_000)
            .unwrap()
            .unwrap()
            .id;
        finish(&mut s, rb, RunClass::AppError, 3_000);
        let rc = s
            .claim(c[0], &NewRun::default(), dir.path(), 100_000)
            .unwrap()
            .unwrap()
            .id;
        finish(&mut s, rc, RunClass::Ok, 220_000);
        let ro = s
            .claim(other[0], &NewRun::default(), dir.path(), 1_000)
            .unwrap()
            .unwrap()
            .id;
        finish(&mut s, ro, RunClass::Ok, 9_000_000);
        let ms = |n| -> Vec<i64> {
            s.recent_runs("prep", "p", n)
                .unwrap()
                .iter()
                .map(|r| r.ms)
                .collect()
        };
        assert_eq!(ms(10), vec![120_000, 60_000]);
        assert_eq!(ms(1), vec![120_000]);
        assert!(s.recent_runs("other", "p", 10).unwrap().is_empty());
        let recent = s.recent_runs("prep", "p", 10).unwrap();
        assert_eq!(
            s.ok_run(rc).unwrap(),
            Some(("prep".into(), "p".into(), recent[0])),
            "what the daemon adds to its cached history when a run succeeds"
        );
        assert_eq!((recent[0].run, recent[0].finished_at), (rc, 220_000));
        assert_eq!(s.ok_run(rb).unwrap(), None, "a failed run is no estimate");
        assert_eq!(s.ok_run(9_999).unwrap(), None);
        assert_eq!(
            s.gpu_starts_since(500).unwrap(),
            vec![(a[0], vec![0, 2], 1_000)],
            "runs without GPUs are not staggered"
        );
        assert!(s.gpu_starts_since(1_001).unwrap().is_empty());
    }

    #[test]
    fn power_is_watts_per_gpu_of_successful_runs_with_recorded_energy_newest_first() {
        let (dir, mut s) = store();
        let file = "name = \"train\"\nproject = \"p\"\ncommand = \"true\"\n";
        let energy = |j: f64| crate::gpu::energy::RunEnergy {
            energy_j: j,
            source: "counter".into(),
            cost: None,
            currency: None,
        };
        // Two GPUs for 100 s at 60 kJ: 300 W per GPU.
        let a = submit(&mut s, file);
        let two = NewRun {
            gpus: Some("0,1".into()),
            ..NewRun::default()
        };
        let ra = s.claim(a[0], &two, dir.path(), 0).unwrap().unwrap().id;
        finish(&mut s, ra, RunClass::Ok, 100_000);
        s.record_run_energy(ra, &energy(60_000.0)).unwrap();
        // No GPUs, 10 s at 500 J: 50 W (the whole run's).
        let b = submit(&mut s, file);
        let rb = s
            .claim(b[0], &NewRun::default(), dir.path(), 200_000)
            .unwrap()
            .unwrap()
            .id;
        finish(&mut s, rb, RunClass::Ok, 210_000);
        s.record_run_energy(rb, &energy(500.0)).unwrap();
        // Failed, and unrecorded: neither counts.
        let c = submit(&mut s, file);
        let rc = s
            .claim(c[0], &two, dir.path(), 300_000)
            .unwrap()
            .unwrap()
            .id;
        finish(&mut s, rc, RunClass::AppError, 400_000);
        s.record_run_energy(rc, &energy(1e9)).unwrap();
        let d = submit(&mut s, file);
        let rd = s
            .claim(d[0], &two, dir.path(), 500_000)
            .unwrap()
            .unwrap()
            .id;
        finish(&mut s, rd, RunClass::Ok, 600_000);
        let w = s.recent_power("train", "p", 10).unwrap();
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(
            (w[0] - 50.0).abs() < 1e-9 && (w[1] - 300.0).abs() < 1e-9,
            "{w:?}"
        );
        assert!(s.recent_power("train", "q", 10).unwrap().is_empty());
    }
}
