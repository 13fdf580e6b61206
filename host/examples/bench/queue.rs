//! `scripts/bench queue [N]`: N (10,000) `true` tasks queued at once (a
//! sweep submitted held, then released), drained on 4 slots with the
//! default policy chain against `plugins.chain = []`, same machine, same
//! run: wall time, runs a second, and the daemon's CPU while draining;
//! then N tasks of 25 ms with the default chain (paced run ends, about 100
//! a second on 6 slots): the daemon's CPU per run end.
//!
//! `scripts/bench lsload [N]`: `nightjar ls` every 50 ms while N (10,000)
//! CLI submits (`--hold`, two at a time) grow the queue, p50/p99, against
//! `ls` of an empty queue in the same run; then `ls` of the N-row queue
//! alone.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};

use super::vs::{nightjar, nightjar_text};
use super::{Daemon, cpu_secs};

fn drain(n: usize, chain: &str) -> Result<(f64, f64)> {
    drain_cmd(n, chain, "true", 4)
}

/// Drains N tasks of `command` (which gets `${a} ${b}` appended) on `slots`.
fn drain_cmd(n: usize, chain: &str, command: &str, slots: u32) -> Result<(f64, f64)> {
    let d = Daemon::start(&format!(
        "slots = {slots}\n{chain}[sandbox]\nlog_cap = \"64KiB\"\n"
    ))?;
    let file = d.state.parent().unwrap_or(&d.state).join("queue.toml");
    let per = (n as f64).sqrt().ceil() as usize;
    let vals = |k: usize| (0..k).map(|i| i.to_string()).collect::<Vec<_>>().join(", ");
    std::fs::write(
        &file,
        format!(
            "name = \"q\"\ncommand = \"{command} ${{a}} ${{b}}\"\n[sweep]\na = [{}]\nb = [{}]\n",
            vals(per),
            vals(n.div_ceil(per))
        ),
    )?;
    let out = nightjar_text(
        &d,
        &[
            "--json",
            "submit",
            "--hold",
            "-f",
            file.to_str().unwrap_or(""),
        ],
    )?;
    let v: serde_json::Value = serde_json::from_str(&out)?;
    let Some(id) = v[0]["id"].as_i64() else {
        bail!("no sweep id in {out}");
    };
    let pid = d.child.id();
    let cpu0 = cpu_secs(pid)?;
    let t = Instant::now();
    nightjar(&d, &["release", &id.to_string()])?;
    nightjar(&d, &["wait", &id.to_string()])?;
    let wall = t.elapsed().as_secs_f64();
    let cpu = cpu_secs(pid)? - cpu0;
    Ok((wall, cpu / wall))
}

/// Runs the comparison, A B A B.
pub fn queue(n: usize) -> Result<()> {
    let mut with = Vec::new();
    let mut without = Vec::new();
    for _ in 0..2 {
        with.push(drain(n, "")?);
        without.push(drain(n, "[plugins]\nchain = []\n")?);
    }
    let best = |v: &[(f64, f64)]| {
        v.iter()
            .copied()
            .fold((f64::MAX, 0.0), |a, b| if b.0 < a.0 { b } else { a })
    };
    let (w, wc) = best(&with);
    let (o, oc) = best(&without);
    println!("queue: {n} `true` tasks queued at once, 4 slots (best of 2, A B A B)");
    println!(
        "  default chain (priority): {w:.1} s, {:.0} runs/s, daemon CPU {:.0}% of a core",
        n as f64 / w,
        wc * 100.0
    );
    println!(
        "  no chain:                 {o:.1} s, {:.0} runs/s, daemon CPU {:.0}% of a core",
        n as f64 / o,
        oc * 100.0
    );
    println!("  ratio {:.2} (goal <= 2)", w / o);
    paced(n)
}

/// `scripts/bench paced [N]`: N tasks of 25 ms on 6 slots with the default
/// chain, so runs end about 100 a second (each run also spends some 30 ms
/// starting its supervisor and shell): the daemon's CPU per run end.
pub fn paced(n: usize) -> Result<()> {
    let (p, pc) = drain_cmd(n, "", "sleep 0.025; :", 6)?;
    println!(
        "  default chain, 25 ms tasks: {p:.1} s, {:.0} runs/s, daemon CPU {:.0}% of a core (goal < 50% at 100 ends/s), {:.2} ms of CPU per run end",
        n as f64 / p,
        pc * 100.0,
        pc * p * 1e3 / n as f64
    );
    Ok(())
}

/// p50 and p99 (ms) of `nightjar ls ARGS` asked every 50 ms until `stop`,
/// or `count` times.
fn ls_times(
    d: &Daemon,
    args: &[&str],
    stop: &AtomicBool,
    count: usize,
) -> Result<(f64, f64, usize)> {
    let mut times = Vec::new();
    let mut ls = vec!["ls"];
    ls.extend_from_slice(args);
    while !stop.load(Ordering::Relaxed) && times.len() < count {
        let t = Instant::now();
        nightjar_text(d, &ls)?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
        std::thread::sleep(Duration::from_millis(50));
    }
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    Ok((at(0.5), at(0.99), times.len()))
}

/// `scripts/bench lsload [N]`.
pub fn lsload(n: usize) -> Result<()> {
    let d = Daemon::start("slots = 2\n")?;
    let never = AtomicBool::new(false);
    let (e50, e99, _) = ls_times(&d, &[], &never, 40)?;
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicUsize::new(0));
    let t = Instant::now();
    let (under, submitted) = std::thread::scope(|s| {
        let submitters: Vec<_> = (0..2)
            .map(|_| {
                let (done, d) = (Arc::clone(&done), &d);
                s.spawn(move || -> Result<()> {
                    while done.fetch_add(1, Ordering::Relaxed) < n {
                        nightjar(d, &["submit", "--hold", "--", "true"])?;
                    }
                    Ok(())
                })
            })
            .collect();
        let watcher = {
            let stop = Arc::clone(&stop);
            let d = &d;
            s.spawn(move || ls_times(d, &[], &stop, usize::MAX))
        };
        let mut ok = Ok(());
        for h in submitters {
            if let Ok(Err(e)) = h.join() {
                ok = Err(e);
            }
        }
        stop.store(true, Ordering::Relaxed);
        let under = watcher
            .join()
            .map_err(|_| anyhow::anyhow!("the ls thread panicked"))?;
        ok.map(|()| (under, n))
    })?;
    let (u50, u99, asked) = under?;
    let wall = t.elapsed().as_secs_f64();
    let (f50, f99, _) = ls_times(&d, &[], &never, 40)?;
    let (a50, a99, _) = ls_times(&d, &["--limit", "0"], &never, 40)?;
    println!(
        "lsload: `nightjar ls` every 50 ms while {submitted} CLI submits run (2 at a time, {wall:.1} s)"
    );
    println!("  empty queue:            p50 {e50:.1} ms  p99 {e99:.1} ms");
    println!(
        "  during the submits:     p50 {u50:.1} ms  p99 {u99:.1} ms ({asked} asked; goal p99 < 50 ms)"
    );
    println!("  {n} rows, nothing else: p50 {f50:.1} ms  p99 {f99:.1} ms (the table's 100 rows)");
    println!("  every row (--limit 0):  p50 {a50:.1} ms  p99 {a99:.1} ms");
    Ok(())
}
