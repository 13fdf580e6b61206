//! `nightjar rerun ID`: a new task from a run's record, refused when an
//! input differs from the digest that run started with (`--allow-changed`
//! submits anyway).

use anyhow::{Context, Result};

use super::Ctx;
use super::table::{clean, clean_text};
use nightjar_core::api::Rerun;
use nightjar_core::api::diff::shorten;

/// Flags of `rerun`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Task id (a plain task, a sweep member or a recurring instance).
    pub id: i64,
    /// Which of its runs (default: the latest that has a start manifest).
    #[arg(long)]
    pub run: Option<i64>,
    /// Submit even when inputs differ from that run's (they are listed).
    #[arg(long)]
    pub allow_changed: bool,
    /// The new task's name (default: the task's).
    #[arg(long)]
    pub name: Option<String>,
}

/// Queues the rerun and prints its id first (`cut -f1`), what changed on stderr.
pub fn run(mut ctx: Ctx, a: Args) -> Result<i32> {
    let id = a.id;
    let r = ctx
        .client
        .call(Rerun {
            id: a.id,
            run: a.run,
            allow_changed: a.allow_changed,
            name: a.name,
        })
        .with_context(|| format!("rerun of task {id}"))?;
    if ctx.json {
        super::print_json(&r)?;
        return Ok(0);
    }
    let of = &r.rerun_of;
    println!(
        "{}\t{} (rerun of task {}, run {})",
        r.id,
        clean(&r.name),
        of.task,
        of.run
    );
    for c in &of.inputs_changed {
        let digest = |d: &Option<String>| d.as_deref().map(shorten).unwrap_or("none".into());
        eprintln!(
            "changed since run {}: {} ({}: sha256 {} then, {} now)",
            of.run,
            clean(&c.path.display().to_string()),
            clean(&c.what),
            digest(&c.before),
            digest(&c.after)
        );
    }
    for n in &r.notes {
        eprintln!("{}", clean_text(n));
    }
    Ok(0)
}
