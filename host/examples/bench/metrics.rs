//! `metrics [TASKS]`: one Prometheus scrape (`GET /metrics` from loopback)
//! of a daemon holding TASKS (10,000) waiting tasks in 50 projects, side by
//! side with `nightjar ls` of the same queue on the same daemon; and
//! `wait-progress` (`nightjar wait`'s live line asks it every second) of a
//! 1,000-member sweep against `show` of the sweep. Each the median of 21.

use std::time::Instant;

use anyhow::{Result, bail};
use nightjar::api;

use super::dashboard::{free_port, get};
use super::vs::nightjar;
use super::{Daemon, entries, median};

/// The median of `reps` timings of `f`, seconds.
fn timed(reps: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    let mut t = Vec::with_capacity(reps);
    for _ in 0..reps {
        let s = Instant::now();
        f()?;
        t.push(s.elapsed().as_secs_f64());
    }
    Ok(median(&t))
}

pub fn metrics(tasks: usize) -> Result<()> {
    println!("== metrics: GET /metrics and wait-progress over {tasks} waiting tasks ==");
    let port = free_port()?;
    let d = Daemon::start(&format!(
        "slots = 1\n[http]\nlisten = \"127.0.0.1:{port}\"\nmetrics = true\n"
    ))?;
    let mut c = d.client()?;
    let _: Vec<i64> = c.call(api::Submit {
        entries: entries("command = \"sleep 600\"\n")?,
        verify: false,
    })?;
    let mut left = tasks;
    let mut n = 0usize;
    while left > 0 {
        let k = left.min(1_000);
        let mut batch = Vec::with_capacity(k);
        for _ in 0..k {
            let project = format!("p{}", n % 50);
            batch.extend(entries(&format!(
                "name = \"bench\"\nproject = \"{project}\"\ncommand = [\"true\"]\n"
            ))?);
            n += 1;
        }
        let _: Vec<i64> = c.call(api::Submit {
            entries: batch,
            verify: false,
        })?;
        left -= k;
    }
    let (status, bytes) = get(port, "/metrics", None)?;
    if !status.contains(" 200") {
        bail!("GET /metrics answered {status}");
    }
    let reps = 21;
    let scrape = timed(reps, || get(port, "/metrics", None).map(drop))?;
    let ls = timed(reps, || nightjar(&d, &["ls"]).map(drop))?;
    println!(
        "  GET /metrics: {:.1} ms ({bytes} bytes); `nightjar ls` of the same queue: {:.1} ms; scrape/ls {:.2}",
        scrape * 1e3,
        ls * 1e3,
        scrape / ls
    );
    let members = 1_000;
    let grid = format!(
        "name = \"sweep\"\ncommand = \"true ${{i}}\"\n[sweep]\ni = [{}]\n",
        (0..members)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    // As the CLI sends a sweep: its grid, the daemon expands it.
    let sweep_entries = entries(&grid)?.into_iter().map(|e| e.compact()).collect();
    let ids: Vec<i64> = c.call(api::Submit {
        entries: sweep_entries,
        verify: false,
    })?;
    let sweep = ids[0];
    let progress = timed(reps, || {
        c.call(api::WaitProgress { ids: vec![sweep] }).map(drop)?;
        Ok(())
    })?;
    let show = timed(reps, || {
        c.call(api::Show { id: sweep }).map(drop)?;
        Ok(())
    })?;
    println!(
        "  wait-progress of a {members}-member sweep: {:.1} ms; `show` of it: {:.1} ms; progress/show {:.2}",
        progress * 1e3,
        show * 1e3,
        progress / show
    );
    Ok(())
}
