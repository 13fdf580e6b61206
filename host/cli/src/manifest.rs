//! `nightjar show ID --manifest`: what a task asked for at submit and what
//! each of its runs ran, as text (`--json` prints the same structures).

use nightjar_core::api::manifest::{GitRecord, InputRecord, Manifest, Manifests, Phase};
use nightjar_core::time::fmt_local;

use super::table::clean;

/// Prints every manifest of a task.
pub fn print(id: i64, name: &str, all: &Manifests) {
    println!("task {id}  {}", clean(name));
    match &all.submit {
        Some(m) => print_one(m),
        None => println!("  no submit manifest (submitted by an older nightjar)"),
    }
    for m in &all.runs {
        print_one(m);
    }
    if all.runs.is_empty() {
        println!("  no run has started yet");
    }
}

/// One line for `show`: the gist of the newest manifest.
pub fn gist(all: &Manifests) -> Option<String> {
    let m = all.runs.last().or(all.submit.as_ref())?;
    let mut parts = vec![git_gist(&m.git)];
    let files = m.inputs.len();
    if files > 0 {
        parts.push(format!("{files} input(s)"));
    }
    if let Some(e) = &m.environment
        && let Some(id) = &e.image_id
    {
        let short: String = id.trim_start_matches("sha256:").chars().take(12).collect();
        parts.push(format!("image {short}"));
    }
    if let Some(p) = &m.python {
        parts.push(format!("{} {} package(s)", p.kind, p.packages.len()));
    }
    Some(format!(
        "{} (nightjar show {} --manifest)",
        parts.join(", "),
        m.task.unwrap_or(0)
    ))
}

fn git_gist(g: &GitRecord) -> String {
    match (&g.commit, &g.note) {
        (Some(c), _) => {
            let short: String = c.chars().take(12).collect();
            let branch = g
                .branch
                .as_deref()
                .map(|b| format!(" on {}", clean(b)))
                .unwrap_or_else(|| " (detached)".into());
            let dirty = if g.dirty == Some(true) { ", dirty" } else { "" };
            format!("git {short}{branch}{dirty}")
        }
        (None, Some(note)) => format!("git: {}", clean(note)),
        (None, None) => "git: no commit".into(),
    }
}

fn print_one(m: &Manifest) {
    let when = match m.phase {
        Phase::Submit => "at submit".to_string(),
        Phase::Start => format!(
            "run {} (attempt {}) at start",
            m.run.unwrap_or(0),
            m.attempt.unwrap_or(0)
        ),
    };
    println!(
        "  manifest {when}, {} (captured in {} ms)",
        fmt_local(m.captured_at),
        m.capture_ms
    );
    let field = |k: &str, v: &str| println!("    {k:<10} {}", clean(v));
    if let Some(r) = &m.rerun_of {
        let changed = match r.inputs_changed.len() {
            0 => "its inputs unchanged".to_string(),
            n => format!("{n} input(s) changed since (--allow-changed)"),
        };
        field(
            "rerun of",
            &format!("task {} run {}, {changed}", r.task, r.run),
        );
    }
    field("command", &m.command.join(" "));
    field("workdir", &m.workdir.display().to_string());
    if let Some(s) = &m.spec {
        let r = &s.resources;
        let retry = &s.retry;
        let on: Vec<&str> = retry.on.iter().map(|c| c.as_str()).collect();
        field(
            "asked",
            &format!(
                "project {}, priority {}, gpus {}, retry {} attempt(s) on {} (backoff {})",
                s.project,
                s.priority.as_str(),
                r.gpus,
                retry.max_attempts,
                on.join(","),
                humantime::format_duration(retry.backoff)
            ),
        );
    }
    if let Some(l) = &m.limits {
        let mut parts = Vec::new();
        if let Some(t) = l.timeout_ms {
            parts.push(format!(
                "timeout {}",
                humantime::format_duration(std::time::Duration::from_millis(t))
            ));
        }
        parts.push(format!(
            "grace {}",
            humantime::format_duration(std::time::Duration::from_millis(l.grace_ms))
        ));
        parts.push(format!("log cap {}", bytesize::ByteSize::b(l.log_cap)));
        if let Some(mem) = l.mem_limit {
            parts.push(format!("mem {}", bytesize::ByteSize::b(mem)));
        }
        if !l.cpus.is_empty() {
            parts.push(format!("cpus {}", list(&l.cpus)));
        }
        if !l.gpus.is_empty() {
            parts.push(format!("gpus {}", list(&l.gpus)));
        }
        if let Some(c) = &l.checkpoint {
            parts.push(format!("resumed from {}", c.display()));
        }
        field("limits", &parts.join(", "));
    }
    for (k, v) in &m.env {
        field("env", &format!("{k}={v}"));
    }
    print_git(&m.git);
    for i in &m.inputs {
        field("input", &input_line(i));
    }
    for c in &m.inputs_changed {
        let sha = |s: &Option<String>| {
            s.as_deref()
                .map(|s| s.chars().take(12).collect::<String>())
                .unwrap_or_else(|| "-".into())
        };
        field(
            "CHANGED",
            &format!(
                "{}: {} since submit (sha256 {} -> {})",
                c.path.display(),
                c.what,
                sha(&c.before),
                sha(&c.after)
            ),
        );
    }
    if let Some(e) = &m.environment {
        let mut what = vec![e.kind.clone()];
        what.extend(e.name.clone());
        what.extend(e.prefix.as_ref().map(|p| p.display().to_string()));
        what.extend(e.runtime.clone());
        what.extend(e.image.clone());
        what.extend(e.image_id.as_ref().map(|i| format!("id {i}")));
        what.extend(e.image_digest.as_ref().map(|d| format!("digest {d}")));
        field("environment", &what.join(" "));
        for n in &e.notes {
            println!("               {}", clean(n));
        }
    }
    if let Some(p) = &m.python {
        field(
            "python",
            &format!(
                "{} {} ({}, {} package(s)){}",
                p.kind,
                p.prefix.display(),
                p.source,
                p.packages.len(),
                p.note
                    .as_deref()
                    .map(|n| format!(": {n}"))
                    .unwrap_or_default()
            ),
        );
        for pkg in &p.packages {
            println!("               {}", clean(pkg));
        }
    }
    if let Some(s) = &m.system {
        field(
            "system",
            &format!("host {}, {}, nightjar {}", s.hostname, s.kernel, s.nightjar),
        );
    }
    if let Some(g) = &m.gpus {
        let devices: Vec<String> = g
            .devices
            .iter()
            .map(|d| {
                format!(
                    "{} {}{}",
                    d.index,
                    d.name.as_deref().unwrap_or("(not monitored)"),
                    d.uuid
                        .as_deref()
                        .map(|u| format!(" ({u})"))
                        .unwrap_or_default()
                )
            })
            .collect();
        field(
            "gpus",
            &format!(
                "driver {}, CUDA {}: {}",
                g.driver.as_deref().unwrap_or("-"),
                g.cuda.as_deref().unwrap_or("-"),
                if devices.is_empty() {
                    "none given".to_string()
                } else {
                    devices.join("; ")
                }
            ),
        );
    }
    for p in &m.policies {
        field(
            "policy",
            &format!(
                "{} ({}, contract {}) sha256 {}",
                p.name,
                p.source,
                p.api_version.as_deref().unwrap_or("-"),
                p.sha256.as_deref().unwrap_or("-")
            ),
        );
    }
    for n in &m.notes {
        field("note", n);
    }
    let s = &m.stats;
    field(
        "cost",
        &format!(
            "{} input(s) hashed now ({}), {} from the cache",
            s.hashed,
            bytesize::ByteSize::b(s.hashed_bytes),
            s.cached
        ),
    );
}

fn print_git(g: &GitRecord) {
    let field = |k: &str, v: &str| println!("    {k:<10} {}", clean(v));
    let Some(repo) = &g.repo else {
        field("git", g.note.as_deref().unwrap_or("not a git repository"));
        return;
    };
    let mut line = format!(
        "{} on {} in {}",
        g.commit.as_deref().unwrap_or("(no commit)"),
        g.branch.as_deref().unwrap_or("(detached HEAD)"),
        repo.display()
    );
    match g.dirty {
        Some(true) => {
            line.push_str(&format!(
                ", dirty: {} tracked file(s) changed",
                g.changed_files.unwrap_or(0)
            ));
            if let (Some(sha), Some(n)) = (&g.diff_sha256, g.diff_bytes) {
                line.push_str(&format!(
                    ", `git diff HEAD` sha256 {sha} ({})",
                    bytesize::ByteSize::b(n)
                ));
            }
        }
        Some(false) => line.push_str(", clean"),
        None => {}
    }
    field("git", &line);
    if let Some(r) = &g.remote {
        field("remote", r);
    }
    if let Some(n) = &g.note {
        field("git note", n);
    }
}

fn input_line(i: &InputRecord) -> String {
    let mut s = i.path.display().to_string();
    if i.kind != "file" {
        s.push_str(&format!(" ({})", i.kind));
    }
    if let Some(size) = i.size {
        s.push_str(&format!("  {}", bytesize::ByteSize::b(size)));
    }
    if let Some(ns) = i.mtime_ns {
        s.push_str(&format!("  modified {}", fmt_local(ns / 1_000_000)));
    }
    if let Some(sha) = &i.sha256 {
        s.push_str(&format!(
            "  sha256 {sha} ({})",
            if i.hashed_now {
                "hashed now"
            } else {
                "unchanged: not read"
            }
        ));
    }
    if let Some(n) = &i.note {
        s.push_str(&format!("  {n}"));
    }
    s
}

fn list(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}
