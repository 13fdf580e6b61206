//! `nightjar notify ls | retry ID | test NAME | digest`: where each notifier
//! is in the outbox, the deliveries it gave up on, a test message, and a
//! digest now.

use anyhow::Result;
use nightjar_core::api::notify::{NotifyDigest, NotifyList, NotifyRetry, NotifyTest};
use nightjar_core::time::fmt_local;

use super::{Ctx, print_json, table::clean};

/// The `notify` sub-verbs.
#[derive(Debug, clap::Subcommand)]
pub enum Cmd {
    /// Each notifier's pending, retrying and delivered events, and the dead letters.
    Ls,
    /// Queue a dead letter again (its id from `notify ls`).
    Retry {
        /// The dead letter's id.
        id: i64,
    },
    /// Send a test message through one notifier and print the server's answer.
    Test {
        /// The notifier (`[notifier.NAME]` in the daemon config).
        name: String,
    },
    /// Write a digest now (the period since the last scheduled one, or the
    /// last 24 hours) for every notifier that takes it; the schedule stays.
    Digest,
}

/// Runs a `notify` sub-verb.
pub fn run(mut ctx: Ctx, cmd: Cmd) -> Result<i32> {
    match cmd {
        Cmd::Ls => {
            let r = ctx.client.call(NotifyList {})?;
            if ctx.json {
                print_json(&r)?;
                return Ok(0);
            }
            if r.notifiers.is_empty() {
                println!("no notifiers: add a [notifier.NAME] table to the daemon config");
            }
            for n in &r.notifiers {
                let next = n
                    .next_at
                    .map(|t| format!(", next try {}", fmt_local(t)))
                    .unwrap_or_default();
                println!(
                    "{}  ({})  {}: {} pending, {} delivered{}",
                    clean(&n.name),
                    clean(&n.plugin),
                    n.state,
                    n.pending,
                    n.delivered,
                    if n.attempts > 0 {
                        format!(", {} failed tries{next}", n.attempts)
                    } else {
                        String::new()
                    }
                );
                if let Some(e) = &n.last_error {
                    println!("  last error: {}", clean(e));
                }
            }
            if !r.dead.is_empty() {
                println!("dead letters (`nightjar notify retry ID` sends one again):");
                for d in &r.dead {
                    println!(
                        "  {}  {}  {} {}{}  {}  {}",
                        d.id,
                        clean(&d.notifier),
                        d.kind,
                        d.event_id,
                        d.task.map(|t| format!(" (task {t})")).unwrap_or_default(),
                        d.state,
                        clean(&d.reason)
                    );
                }
            }
            Ok(0)
        }
        Cmd::Retry { id } => {
            let r = ctx.client.call(NotifyRetry { id })?;
            if ctx.json {
                print_json(&r)?;
            } else {
                println!("dead letter {id} queued again");
            }
            Ok(0)
        }
        Cmd::Digest => {
            let r = ctx.client.call(NotifyDigest {})?;
            if ctx.json {
                print_json(&r)?;
            } else {
                println!(
                    "digest of {} - {} written; `nightjar notify ls` shows its delivery",
                    fmt_local(r.from),
                    fmt_local(r.to)
                );
            }
            Ok(0)
        }
        Cmd::Test { name } => {
            let r = ctx.client.call(NotifyTest { name })?;
            if ctx.json {
                print_json(&r)?;
            } else {
                for a in &r.answer {
                    println!("{}", clean(a));
                }
                match &r.error {
                    None => println!("delivered"),
                    Some(e) => println!("not delivered: {}", clean(e)),
                }
            }
            Ok(if r.delivered { 0 } else { 1 })
        }
    }
}
