//! `scripts/bench regress`: the figures a change to the run path, the
//! submit path or the policy pass would move, as ratios against baselines
//! measured in the same run, compared with the ratios recorded in
//! `recorded.toml` for this machine kind. A ratio at twice its record or
//! more fails the run, so a change that doubles one is seen in its own
//! issue. `scripts/bench regress record` measures and writes the file.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};

/// The recorded figures, next to this file.
fn recorded_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/bench/recorded.toml")
}

/// A ratio at this many times its record (or more) is a regression.
const TOLERANCE: f64 = 2.0;

/// Measures the ratios: name -> (value, what it is).
fn measure() -> Result<BTreeMap<&'static str, (f64, &'static str)>> {
    let up = super::vs::startup_and_submit(100)?;
    let th = super::vs::throughput(1_000)?;
    let pass = super::plugins::plugins()?;
    let mut m = BTreeMap::new();
    m.insert(
        "throughput_vs_xargs",
        (
            th.ours / th.xargs,
            "1,000 CLI submits of `true` and their runs, 2 slots / xargs -P 2",
        ),
    );
    m.insert(
        "sweep_vs_xargs",
        (
            th.sweep / th.xargs,
            "the same 1,000 as one sweep / xargs -P 2",
        ),
    );
    m.insert(
        "submit_in_repo_vs_outside",
        (
            up.in_repo / up.submit,
            "one submit from a git repository with a 1 GiB ignored folder, unchanged since the submit before / one outside",
        ),
    );
    m.insert(
        "submit_in_repo_edited_vs_outside",
        (
            up.in_repo_edited / up.submit,
            "the same right after a tracked file was written (git status and diff asked) / one outside",
        ),
    );
    if let Some(tsp) = up.tsp {
        m.insert(
            "submit_vs_tsp",
            (
                up.submit / tsp,
                "one `nightjar submit -- true` / one `tsp true`",
            ),
        );
    }
    if let Some(tsp) = th.tsp {
        m.insert(
            "throughput_vs_tsp",
            (th.ours / tsp, "the 1,000 submits and runs / tsp -S 2"),
        );
    }
    m.insert(
        "priority_wasm_vs_native",
        (
            pass,
            "the priority policy's pass over 10,000 tasks, wasm / native",
        ),
    );
    Ok(m)
}

/// Runs the comparison (or, with `record`, writes the recorded file).
pub fn regress(record: bool) -> Result<()> {
    let now = measure()?;
    let path = recorded_path();
    if record {
        let mut text = String::from(
            "# The ratios `scripts/bench regress` compares against, recorded on the\n\
             # machine kind named below (docs/src/internals/benchmarks.md): each is\n\
             # nightjar's figure over a baseline measured in the same run. A ratio\n\
             # at twice its record fails `regress`. Rewrite with\n\
             # `scripts/bench regress record` after a change that is meant to move them.\n",
        );
        text.push_str(&format!(
            "machine = \"{}\"\n\n[ratios]\n",
            machine().replace('"', "'")
        ));
        for (name, (v, what)) in &now {
            text.push_str(&format!("# {what}\n{name} = {v:.2}\n"));
        }
        std::fs::write(&path, text).with_context(|| format!("write {}", path.display()))?;
        println!("regress: recorded in {}", path.display());
        return Ok(());
    }
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "read {} (make it with `scripts/bench regress record`)",
            path.display()
        )
    })?;
    let table: toml::Table = text
        .parse()
        .with_context(|| format!("{} is not TOML", path.display()))?;
    let ratios = table
        .get("ratios")
        .and_then(|r| r.as_table())
        .with_context(|| format!("{}: no [ratios] table", path.display()))?;
    let kind = table.get("machine").and_then(|m| m.as_str()).unwrap_or("?");
    println!(
        "regress: ratios against {} (recorded on: {kind}; here: {})",
        path.display(),
        machine()
    );
    let mut worse = Vec::new();
    for (name, (v, what)) in &now {
        let Some(was) = ratios.get(*name).and_then(|x| x.as_float()) else {
            println!("  {name:<28} {v:>8.2}  (not recorded)  {what}");
            continue;
        };
        let change = v / was;
        let flag = if change >= TOLERANCE {
            worse.push(*name);
            "  REGRESSED"
        } else {
            ""
        };
        println!("  {name:<28} {v:>8.2}  recorded {was:>6.2}  x{change:.2}{flag}  {what}");
    }
    if !worse.is_empty() {
        bail!(
            "{} at {TOLERANCE}x its recorded ratio or more: {}",
            if worse.len() == 1 {
                "one figure is"
            } else {
                "figures are"
            },
            worse.join(", ")
        );
    }
    Ok(())
}

/// This machine, in a few words: cores, memory, CPU model.
fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map_or("unknown CPU", str::trim)
        .to_string();
    let mem_gib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        })
        .map_or(0, |kib| kib / (1 << 20));
    format!("{cores} cores, {mem_gib} GiB, {model}")
}
