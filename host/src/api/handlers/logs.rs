//! `logs`: a run's output through the daemon, for its owner, an
//! administrator, or anyone when `users.share_details` is on.

use crate::access::Caller;
use crate::api::{LogChunk, Logs};
use anyhow::Context;

use crate::daemon::Daemon;
use nightjar_core::api::logs::MAX_CHUNK;
use nightjar_core::runlog::{STDERR, STDOUT};

impl super::Handler for Logs {
    async fn handle(self, d: &std::sync::Arc<Daemon>, caller: &Caller) -> anyhow::Result<LogChunk> {
        let (d, who) = (std::sync::Arc::clone(d), caller.clone());
        super::blocking("log read", move || logs(&d, &who, &self)).await
    }
}

/// The next bytes of the log asked for.
fn logs(d: &Daemon, caller: &Caller, r: &Logs) -> anyhow::Result<LogChunk> {
    let detail = d.store().show(r.id)?;
    if !d.access.may_read_private(caller, detail.task.owner_uid) {
        return Err(d
            .access
            .private_refused(caller, r.id, detail.task.owner_uid)
            .into());
    }
    let run = match r.attempt {
        Some(n) => detail.runs.iter().find(|x| x.attempt == n).ok_or_else(|| {
            anyhow::anyhow!("task {} has no attempt {n} (`nightjar show {}` lists its runs)", r.id, r.id)
        })?,
        None => detail.runs.last().ok_or_else(|| {
            if detail.members.is_empty() {
                anyhow::anyhow!("task {} has not started yet ({})", r.id, detail.task.state.as_str())
            } else {
                anyhow::anyhow!(
                    "task {} is a sweep; ask for one of its members (`nightjar show {}` lists them)",
                    r.id,
                    r.id
                )
            }
        })?,
    };
    let path = std::path::Path::new(&run.run_dir).join(if r.stderr { STDERR } else { STDOUT });
    // Whether it runs is read before the bytes: a reader that sees
    // `running: false` has every byte once it reads until an empty chunk.
    let running = run.state == "running";
    // A read that fails is the daemon's (its own run folder), kept typed so
    // the error says so (`error_kind.rs`).
    let read = match (r.cursor, r.tail) {
        (None, Some(n)) => nightjar_core::runlog_read::read_tail(&path, n, MAX_CHUNK),
        (cursor, _) => nightjar_core::runlog_read::read_from(&path, cursor, MAX_CHUNK),
    }
    .with_context(|| format!("read {}", path.display()))?;
    let mut chunk = LogChunk::new(
        run.id,
        run.attempt,
        running,
        &read.data,
        read.cursor,
        read.missed,
    );
    chunk.owner_uid = detail.task.owner_uid;
    Ok(chunk)
}
