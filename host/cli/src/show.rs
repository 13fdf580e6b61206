//! `nightjar show ID`: the task, its dependencies, its runs with waiting and
//! running times, its sandbox notes and its events.

use anyhow::Result;

use super::Ctx;
use super::table::clean;
use nightjar_core::api;

use nightjar_core::time::{fmt_local, fmt_span, now_ms};

/// Prints one task (with `manifest`, only its manifests).
pub fn run(mut ctx: Ctx, id: i64, manifest: bool) -> Result<i32> {
    let d = ctx.client.call(api::Show { id })?;
    match (ctx.json, manifest) {
        (true, true) => super::print_json(&d.manifests)?,
        (true, false) => super::print_json(&d)?,
        (false, true) => super::manifest::print(d.task.id, &d.task.name, &d.manifests),
        (false, false) => {
            print(&d);
            if d.task.state == api::wire::TaskState::Queued
                && let Some(line) = super::estimate::expected_start(&mut ctx.client, id)
            {
                println!("  forecast   {}", super::table::clean(&line));
            }
        }
    }
    Ok(0)
}

fn print(d: &api::wire::TaskDetail) {
    let t = &d.task;
    let now = now_ms();
    println!("task {}  {}  ({})", t.id, clean(&t.name), t.kind.as_str());
    println!(
        "  state      {}{}",
        t.state.as_str(),
        t.reason
            .as_ref()
            .map(|r| format!(": {}", clean(r)))
            .unwrap_or_default()
    );
    if let Some(c) = &t.counts {
        println!("  members    {} ({})", c.total, c.summary());
    }
    println!("  project    {}   priority {}", t.project, t.priority);
    if let Some(owner) = &t.owner {
        println!("  owner      {}", clean(owner));
    }
    println!("  command    {}", clean(&t.command));
    println!(
        "  workdir    {}",
        clean(&d.spec.workdir.display().to_string())
    );
    if let Some(o) = &d.spec.output {
        println!("  output     {}", clean(o));
    }
    if let Some(e) = &d.spec.environment {
        println!("  environment {}", clean(&e.describe()));
        if let nightjar_core::task::environment::Environment::Container(c) = &**e {
            for m in &c.mounts {
                println!(
                    "  mount      {} -> {}{}",
                    clean(&m.host.display().to_string()),
                    clean(&m.target.display().to_string()),
                    if m.read_only { " (read-only)" } else { "" }
                );
            }
        }
    }
    // Values of secret-looking names arrive as <redacted> (`sandbox.redact_env`).
    for (k, v) in &d.spec.env {
        println!("  env        {}={}", clean(k), clean(v));
    }
    let r = &d.spec.resources;
    let mut res = vec![format!("gpus {}", r.gpus)];
    if let Some(m) = r.gpu_mem {
        res.push(format!("gpu_mem {m}"));
    }
    if let Some(c) = r.cpus {
        res.push(format!("cpus {c}"));
    }
    if let Some(m) = r.mem {
        res.push(format!("mem {m}"));
    }
    if let Some(to) = r.timeout {
        res.push(format!("timeout {}", humantime::format_duration(to)));
    }
    println!("  resources  {}", res.join(", "));
    if let Some(e) = &d.estimate {
        println!("  estimated  {}", e.summary());
    }
    println!(
        "  retry      {} attempt(s), backoff {}",
        d.spec.retry.max_attempts,
        humantime::format_duration(d.spec.retry.backoff)
    );
    if let Some(c) = &d.spec.checkpoint {
        let complete = match &c.marker {
            Some(m) => format!("complete once {} exists", clean(m)),
            None => format!("settle {}", humantime::format_duration(c.settle)),
        };
        let grace = c
            .grace
            .map(|g| format!(", grace {}", humantime::format_duration(g)))
            .unwrap_or_default();
        println!(
            "  checkpoint {} ({complete}; preempted with {}{grace})",
            clean(&c.pattern),
            c.signal
        );
        if let Some(r) = &c.resume {
            println!("  resume     {}", clean(r));
        }
    }
    match d.spec.seed {
        Some(seed) => println!("  seed       {seed} (every run)"),
        None => println!("  seed       one per run, generated and recorded"),
    }
    if d.spec.cache {
        println!("  cache      on (completed from an earlier run with the same cache key)");
    }
    println!("  submitted  {}", fmt_local(t.submitted_at));
    if let Some(g) = super::manifest::gist(&d.manifests) {
        println!("  manifest   {}", clean(&g));
    }
    // A schedule's wall times are the daemon's zone: named when it is not
    // this machine's.
    let elsewhere = d
        .schedule
        .as_ref()
        .filter(|s| !s.timezone.is_empty() && s.timezone != nightjar_core::time::local_zone_name());
    if let Some(s) = &d.schedule {
        let zone = match elsewhere {
            Some(s) => format!(" ({} time)", s.timezone),
            None => String::new(),
        };
        println!("  schedule   {}{zone}", clean(&s.expr));
        if nightjar_core::task::schedule::is_reboot(&s.expr)
            && t.state == nightjar_core::api::wire::TaskState::Scheduled
        {
            println!("  next fire  when the daemon next starts");
        }
    }
    if let Some(at) = t.next_fire_at {
        let there = elsewhere
            .and_then(|s| s.next_there.as_ref())
            .map(|t| format!(", {t}"))
            .unwrap_or_default();
        println!(
            "  next fire  {} (in {}{there})",
            fmt_local(at),
            fmt_span(at - now)
        );
    }
    for dep in &d.deps {
        println!(
            "  after      {} {} ({}, {})",
            dep.dep_id,
            clean(&dep.name),
            dep.kind.as_str(),
            dep.state.as_str()
        );
    }
    for run in &d.runs {
        let end = run.finished_at.unwrap_or(now);
        let outcome = match (run.class, run.cached_from) {
            (Some(_), Some(from)) => format!("succeeded (cached from run {from})"),
            (Some(c), None) => {
                let mut s = c.as_str().to_string();
                if let Some(code) = run.exit_code {
                    s.push_str(&format!(", exit {code}"));
                }
                if let Some(sig) = run.signal {
                    s.push_str(&format!(", signal {sig}"));
                }
                s
            }
            (None, _) => "running".to_string(),
        };
        println!(
            "  run {} (attempt {})  {}  waited {}  ran {}",
            run.id,
            run.attempt,
            outcome,
            fmt_span(run.started_at - run.eligible_at),
            fmt_span(end - run.started_at)
        );
        println!(
            "      started {}{}",
            fmt_local(run.started_at),
            run.finished_at
                .map(|f| format!("  finished {}", fmt_local(f)))
                .unwrap_or_default()
        );
        if let Some(seed) = run.seed {
            println!("      seed    {seed} (NIGHTJAR_SEED)");
        }
        if let Some(c) = &run.checkpoint {
            println!("      resumed from {}", clean(c));
        }
        if let Some(m) = &run.message {
            println!("      message {}", clean(m));
        }
        let changed = d
            .manifests
            .runs
            .iter()
            .filter(|m| m.run == Some(run.id))
            .flat_map(|m| &m.inputs_changed);
        for c in changed {
            println!(
                "      CHANGED input {} since submit: {}",
                clean(&c.path.display().to_string()),
                clean(&c.what)
            );
        }
        for f in &run.findings {
            println!("      found   {}", clean(&f.to_string()));
        }
        if let Some(g) = &run.gpus {
            println!("      gpus    {g}");
        }
        if let Some(c) = &run.cpus {
            println!("      cpus    {c}");
        }
        if let Some(e) = &run.energy {
            println!("      energy  {}", clean(&e.summary()));
        }
        if let Some(n) = &run.sandbox_note {
            println!("      sandbox {}", clean(n));
        }
        if let Some(at) = run.stalled_at {
            println!(
                "      stalled since {} (no GPU utilisation, no log growth)",
                fmt_local(at)
            );
        }
        for g in d.gpu_records.iter().filter(|g| g.run == run.id) {
            println!(
                "      gpu {}   peak mem {}, util mean {:.0}% max {}%, max {}C, energy {:.1} kJ ({}), {} samples",
                g.gpu,
                bytesize::ByteSize::b(g.mem_peak),
                g.util_mean,
                g.util_max,
                g.temp_max,
                g.energy_j / 1000.0,
                g.energy_source,
                g.samples
            );
        }
        println!("      logs    {}/stdout.log, stderr.log", run.run_dir);
        print_outputs(&run.outputs);
    }
    if !d.members.is_empty() {
        println!("  members:");
        for m in &d.members {
            println!(
                "    {:<6} {:<10} {}",
                m.id,
                m.state.as_str(),
                clean(&m.name)
            );
        }
    }
    println!("  events:");
    for e in &d.events {
        println!(
            "    {}  {:<10} {}",
            fmt_local(e.at),
            clean(&e.kind),
            clean(&e.message)
        );
    }
}

/// A run's output manifest, archive and retention, one line each.
fn print_outputs(o: &nightjar_core::api::outputs::RunOutputs) {
    use nightjar_core::api::outputs::ArchiveState;
    if let Some(m) = &o.manifest {
        match &m.note {
            Some(n) => println!("      outputs {}", clean(n)),
            None => println!(
                "      outputs {} files, {} in {} (sha256 of each in outputs.json){}",
                m.files.len(),
                bytesize::ByteSize::b(m.bytes()).display().iec_short(),
                clean(&m.folder.display().to_string()),
                if m.omitted > 0 {
                    format!("; {} more not listed", m.omitted)
                } else {
                    String::new()
                }
            ),
        }
    }
    if let Some(a) = &o.archive {
        let root = a.root.display().to_string();
        let root = clean(&root);
        match (a.state, &a.path) {
            (ArchiveState::Done, Some(p)) => println!(
                "      archived {}{}",
                clean(&p.display().to_string()),
                a.done_at
                    .map(|t| format!(" (verified {})", fmt_local(t)))
                    .unwrap_or_default()
            ),
            _ => match (&a.failure, &a.error) {
                (Some(f), Some(e)) => println!(
                    "      not archived yet: try {} to {root} failed ({}): {}; next try {}; the local outputs are kept",
                    a.attempts,
                    f.as_str(),
                    clean(e),
                    a.next_at.map(fmt_local).unwrap_or_else(|| "soon".into())
                ),
                _ => println!("      archive to {root} pending (not yet verified)"),
            },
        }
    }
    if let Some(at) = o.removed_at {
        println!(
            "      outputs and scratch removed {} (retention by outcome; `[retention] outputs_*`)",
            fmt_local(at)
        );
    }
}
