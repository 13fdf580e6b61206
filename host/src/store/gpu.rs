//! GPU records: the stalled mark, each run's GPU summary and its series.

use rusqlite::params;

use super::{Result, Store, event, exec, row};
use crate::gpu::energy::RunEnergy;
use crate::gpu::monitor::{RunGpuRecord, SeriesPoint};

impl Store {
    /// Stores the GPU records of a finished run.
    pub fn record_run_gpus(&mut self, records: &[RunGpuRecord]) -> Result<()> {
        let tx = self.conn.transaction()?;
        for r in records {
            exec(
                &tx,
                "INSERT OR REPLACE INTO run_gpus (run_id, gpu, uuid, samples, mem_peak, util_mean, util_max,
                     temp_max, energy_j, energy_source) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![r.run, r.gpu, r.uuid, r.samples, r.mem_peak as i64, r.util_mean, r.util_max, r.temp_max, r.energy_j, r.energy_source],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Stores a finished run's energy and cost.
    pub fn record_run_energy(&mut self, run: i64, e: &RunEnergy) -> Result<()> {
        exec(
            &self.conn,
            "UPDATE runs SET energy_j = ?2, energy_source = ?3, cost = ?4, currency = ?5 WHERE id = ?1",
            params![run, e.energy_j, e.source, e.cost, e.currency],
        )?;
        Ok(())
    }

    /// Appends points to runs' GPU series.
    pub fn add_series(&mut self, points: &[SeriesPoint]) -> Result<()> {
        if points.is_empty() {
            return Ok(());
        }
        let tx = self.conn.transaction()?;
        for p in points {
            exec(
                &tx,
                "INSERT INTO run_gpu_series (run_id, at, gpu, util, mem, temp, power_mw) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    p.run,
                    p.at,
                    p.gpu,
                    p.util,
                    p.mem as i64,
                    p.temp_c,
                    p.power_mw
                ],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Marks a run stalled since `at`, or active again (`None`), with an event.
    pub fn set_stalled(&mut self, run: i64, at: Option<i64>, now: i64) -> Result<()> {
        let tx = self.conn.transaction()?;
        exec(
            &tx,
            "UPDATE runs SET stalled_at = ?2 WHERE id = ?1 AND state = 'running'",
            params![run, at],
        )?;
        let (task, name, project): (i64, String, String) = row(
            &tx,
            "SELECT t.id, t.name, t.project FROM runs r JOIN tasks t ON t.id = r.task_id WHERE r.id = ?1",
            [run],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?;
        match at {
            Some(since) => {
                event(
                    &tx,
                    now,
                    Some(task),
                    Some(run),
                    "stalled",
                    "no GPU utilisation and no log growth",
                )?;
                super::outbox::outbox(
                    &tx,
                    now,
                    "task-stalled",
                    super::outbox::Severity::Warning,
                    Some(task),
                    Some(run),
                    Some(&project),
                    serde_json::json!({
                        "name": name,
                        "reason": format!(
                            "no GPU utilisation and no log growth for {}",
                            crate::time::fmt_span(now - since)
                        ),
                    }),
                )?
            }
            None => event(
                &tx,
                now,
                Some(task),
                Some(run),
                "active",
                "shows signs of life again",
            )?,
        }
        tx.commit()?;
        Ok(())
    }

    /// The GPU records of every run of a task.
    pub fn gpu_records(&self, task: i64) -> Result<Vec<RunGpuRecord>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT g.run_id, g.gpu, g.uuid, g.samples, g.mem_peak, g.util_mean, g.util_max, g.temp_max,
                    g.energy_j, g.energy_source
             FROM run_gpus g JOIN runs r ON r.id = g.run_id WHERE r.task_id = ?1 ORDER BY g.run_id, g.gpu",
        )?;
        let rows = stmt
            .query_map([task], |r| {
                Ok(RunGpuRecord {
                    run: r.get(0)?,
                    gpu: r.get(1)?,
                    uuid: r.get(2)?,
                    samples: r.get(3)?,
                    mem_peak: r.get::<_, i64>(4)? as u64,
                    util_mean: r.get(5)?,
                    util_max: r.get(6)?,
                    temp_max: r.get(7)?,
                    energy_j: r.get(8)?,
                    energy_source: r.get(9)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// A run's GPU series, oldest first.
    pub fn series(&self, run: i64) -> Result<Vec<SeriesPoint>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT run_id, at, gpu, util, mem, temp, power_mw FROM run_gpu_series WHERE run_id = ?1 ORDER BY at, gpu",
        )?;
        let rows = stmt
            .query_map([run], |r| {
                Ok(SeriesPoint {
                    run: r.get(0)?,
                    at: r.get(1)?,
                    gpu: r.get(2)?,
                    util: r.get(3)?,
                    mem: r.get::<_, i64>(4)? as u64,
                    temp_c: r.get(5)?,
                    power_mw: r.get(6)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }
}
