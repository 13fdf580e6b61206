//! Retention: ended tasks older than their cutoff are deleted with every row
//! that hangs off them (runs, events, GPU records and series, verdicts,
//! dependencies, archives), in one transaction. Nothing a waiting task still
//! depends on is deleted, nor a task with an archive not yet verified (its
//! run folder holds the only copy), recurring templates stay, and a sweep goes only once all
//! of its members have.

use super::{GcReport, Result, Store, exec};
use rusqlite::params;

/// The tasks to collect, into the temporary table `gc_tasks`.
const SELECT: &str = "
INSERT INTO gc_tasks (id)
SELECT t.id FROM tasks t
 WHERE t.kind = 'task' AND t.finished_at IS NOT NULL
   AND ((t.state = 'failed' AND t.finished_at < ?2)
     OR (t.state IN ('succeeded', 'cancelled') AND t.finished_at < ?1))
   AND NOT EXISTS (
       SELECT 1 FROM deps d JOIN tasks w ON w.id = d.task_id
        WHERE d.dep_id = t.id AND w.state NOT IN ('succeeded', 'failed', 'cancelled'))
   AND NOT EXISTS (
       SELECT 1 FROM archives a JOIN runs r ON r.id = a.run_id
        WHERE r.task_id = t.id AND a.state = 'pending')";

/// Sweeps whose members are all collected (or gone).
const SWEEPS: &str = "
INSERT INTO gc_tasks (id)
SELECT a.id FROM tasks a
 WHERE a.kind = 'sweep'
   AND EXISTS (SELECT 1 FROM gc_tasks g JOIN tasks m ON m.id = g.id WHERE m.parent_id = a.id)
   AND NOT EXISTS (
       SELECT 1 FROM tasks m WHERE m.parent_id = a.id AND m.id NOT IN (SELECT id FROM gc_tasks))";

impl Store {
    /// Deletes tasks that succeeded or were cancelled before `ended_before`,
    /// failed before `failed_before`, and task-less events before
    /// `ended_before` (Unix ms). `dry_run` counts without deleting.
    pub fn gc(&mut self, ended_before: i64, failed_before: i64, dry_run: bool) -> Result<GcReport> {
        let tx = self.conn.transaction()?;
        tx.execute_batch(
            "CREATE TEMP TABLE IF NOT EXISTS gc_tasks (id INTEGER PRIMARY KEY); DELETE FROM gc_tasks;",
        )?;
        exec(&tx, SELECT, params![ended_before, failed_before])?;
        exec(&tx, SWEEPS, [])?;
        let tasks: usize = tx.query_row("SELECT COUNT(*) FROM gc_tasks", [], |r| r.get(0))?;
        let runs: Vec<i64> = {
            let mut stmt = tx.prepare(
                "SELECT id FROM runs WHERE task_id IN (SELECT id FROM gc_tasks) ORDER BY id",
            )?;
            stmt.query_map([], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?
        };
        let events: usize = tx.query_row(
            "SELECT COUNT(*) FROM events WHERE task_id IN (SELECT id FROM gc_tasks)
                OR (task_id IS NULL AND at < ?1)",
            [ended_before],
            |r| r.get(0),
        )?;
        let gpu_samples: usize = tx.query_row(
            "SELECT COUNT(*) FROM run_gpu_series WHERE run_id IN
                (SELECT id FROM runs WHERE task_id IN (SELECT id FROM gc_tasks))",
            [],
            |r| r.get(0),
        )?;
        // Dead letters are failures: kept as long as failed tasks are.
        let dead_letters: usize = tx.query_row(
            "SELECT COUNT(*) FROM dead_letters WHERE at < ?1 AND state != 'requeued'",
            [failed_before],
            |r| r.get(0),
        )?;
        let report = GcReport {
            tasks,
            runs,
            events,
            gpu_samples,
            dead_letters,
            cache_files: 0,
            outputs: 0,
            outputs_bytes: 0,
            dry_run,
        };
        if dry_run {
            return Ok(report);
        }
        let gone_runs = "(SELECT id FROM runs WHERE task_id IN (SELECT id FROM gc_tasks))";
        for sql in [
            format!("DELETE FROM run_gpu_series WHERE run_id IN {gone_runs}"),
            format!("DELETE FROM run_gpus WHERE run_id IN {gone_runs}"),
            format!("DELETE FROM archives WHERE run_id IN {gone_runs}"),
            "DELETE FROM events WHERE task_id IN (SELECT id FROM gc_tasks)".into(),
            "DELETE FROM policy_verdicts WHERE task_id IN (SELECT id FROM gc_tasks)".into(),
            "DELETE FROM deps WHERE task_id IN (SELECT id FROM gc_tasks) OR dep_id IN (SELECT id FROM gc_tasks)".into(),
            "DELETE FROM runs WHERE task_id IN (SELECT id FROM gc_tasks)".into(),
            // Members before their sweeps (the parent reference).
            "DELETE FROM tasks WHERE kind = 'task' AND id IN (SELECT id FROM gc_tasks)".into(),
            "DELETE FROM tasks WHERE id IN (SELECT id FROM gc_tasks)".into(),
        ] {
            exec(&tx, &sql, [])?;
        }
        exec(
            &tx,
            "DELETE FROM events WHERE task_id IS NULL AND at < ?1",
            [ended_before],
        )?;
        // Hashes of inputs no manifest asked for since: the files are
        // likely gone, and a file still there is hashed again once.
        exec(
            &tx,
            "DELETE FROM input_digests WHERE used_at < ?1",
            [ended_before],
        )?;
        exec(
            &tx,
            "DELETE FROM dead_letters WHERE at < ?1 AND state != 'requeued'",
            [failed_before],
        )?;
        // Outbox events every notifier has passed (or, with none, all) once
        // they are as old as ended tasks kept; dead letters keep theirs.
        exec(
            &tx,
            "DELETE FROM outbox WHERE at < ?1
               AND id <= COALESCE((SELECT MIN(cursor) FROM notifiers), id)
               AND id NOT IN (SELECT event_id FROM dead_letters WHERE state != 'delivered')",
            [ended_before],
        )?;
        tx.commit()?;
        // Hand the freed pages back to the file system's view of the WAL.
        let _ = self.conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);");
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::tests::{store, submit};
    use crate::store::{NewRun, RunClass, RunOutcome};

    /// Runs task `id` to an end of `class` at time `at`.
    fn end(s: &mut Store, dir: &std::path::Path, id: i64, class: RunClass, at: i64) {
        let run = s
            .claim(id, &NewRun::default(), dir, at - 10)
            .unwrap()
            .unwrap();
        let code = if class == RunClass::Ok { 0 } else { 1 };
        let out = RunOutcome {
            class,
            exit_code: Some(code),
            signal: None,
            finished_at: at,
            message: None,
        };
        s.finish_run(run.id, &out).unwrap();
    }

    fn count(s: &Store, table: &str) -> i64 {
        s.conn
            .query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))
            .unwrap()
    }

    #[test]
    fn old_ended_tasks_go_with_their_rows_and_failures_are_kept_longer() {
        let (dir, mut s) = store();
        let ok = submit(&mut s, "command = \"true\"")[0];
        let failed = submit(&mut s, "command = \"false\"")[0];
        let fresh = submit(&mut s, "command = \"true\"")[0];
        let waiting = submit(&mut s, "command = \"true\"")[0];
        end(&mut s, dir.path(), ok, RunClass::Ok, 10_000);
        end(&mut s, dir.path(), failed, RunClass::AppError, 10_000);
        end(&mut s, dir.path(), fresh, RunClass::Ok, 90_000);
        let dry = s.gc(50_000, 5_000, true).unwrap();
        assert_eq!((dry.tasks, dry.runs.len()), (1, 1), "{dry:?}");
        assert_eq!(count(&s, "tasks"), 4, "a dry run deletes nothing");
        let r = s.gc(50_000, 5_000, false).unwrap();
        assert_eq!(r.tasks, 1);
        assert!(s.task(ok).is_err(), "the old success is gone");
        assert!(
            s.task(failed).is_ok(),
            "failures are kept until their own cutoff"
        );
        assert!(s.task(fresh).is_ok() && s.task(waiting).is_ok());
        assert_eq!(count(&s, "runs"), 2);
        let r = s.gc(50_000, 50_000, false).unwrap();
        assert_eq!(r.tasks, 1, "the failure once past its cutoff");
        assert_eq!(
            s.conn
                .query_row(
                    "SELECT COUNT(*) FROM events WHERE task_id IN (?1, ?2)",
                    [ok, failed],
                    |r| r.get::<_, i64>(0)
                )
                .unwrap(),
            0
        );
    }

    #[test]
    fn a_task_a_waiting_task_depends_on_is_kept() {
        let (dir, mut s) = store();
        let dep = submit(&mut s, "command = \"true\"")[0];
        let after = submit(&mut s, &format!("command = \"true\"\nafter = [{dep}]"))[0];
        end(&mut s, dir.path(), dep, RunClass::Ok, 10_000);
        assert_eq!(s.gc(50_000, 50_000, false).unwrap().tasks, 0);
        end(&mut s, dir.path(), after, RunClass::Ok, 20_000);
        assert_eq!(s.gc(50_000, 50_000, false).unwrap().tasks, 2);
        assert_eq!(count(&s, "deps"), 0);
    }

    #[test]
    fn dead_letters_go_with_failed_tasks_retention_unless_requeued() {
        let (_dir, mut s) = store();
        s.register_notifiers(&["hook".to_string()]).unwrap();
        s.bury("hook", &[1, 2], 10_000, "a 404").unwrap();
        s.bury("hook", &[3], 90_000, "a 404").unwrap();
        let requeued: i64 = s
            .conn
            .query_row("SELECT id FROM dead_letters WHERE event_id = 2", [], |r| {
                r.get(0)
            })
            .unwrap();
        s.set_dead_letter(requeued, "requeued", None).unwrap();
        let r = s.gc(50_000, 50_000, true).unwrap();
        assert_eq!(r.dead_letters, 1, "a dry run counts");
        assert_eq!(count(&s, "dead_letters"), 3, "and deletes nothing");
        let r = s.gc(50_000, 50_000, false).unwrap();
        assert_eq!(r.dead_letters, 1);
        let left: Vec<i64> = s
            .conn
            .prepare("SELECT event_id FROM dead_letters ORDER BY event_id")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(left, [2, 3], "the requeued one and the young one stay");
    }
}
