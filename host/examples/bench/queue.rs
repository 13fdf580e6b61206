//! `scripts/bench queue [N]`: N (10,000) `true` tasks queued at once (a
//! sweep submitted held, then released), drained on 4 slots with the
//! default policy chain against `plugins.chain = []`, same machine, same
//! run: wall time, runs a second, and the daemon's CPU while draining.

use std::time::Instant;

use anyhow::{Result, bail};

use super::vs::{nightjar, nightjar_text};
use super::{Daemon, cpu_secs};

fn drain(n: usize, chain: &str) -> Result<(f64, f64)> {
    let d = Daemon::start(&format!(
        "slots = 4\n{chain}[sandbox]\nlog_cap = \"64KiB\"\n"
    ))?;
    let file = d.state.parent().unwrap_or(&d.state).join("queue.toml");
    let per = (n as f64).sqrt().ceil() as usize;
    let vals = |k: usize| (0..k).map(|i| i.to_string()).collect::<Vec<_>>().join(", ");
    std::fs::write(
        &file,
        format!(
            "name = \"q\"\ncommand = \"true ${{a}} ${{b}}\"\n[sweep]\na = [{}]\nb = [{}]\n",
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
    Ok(())
}
