//! `nightjar logs ID [-f]`: a run's output, read from its run folder.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};

use super::Ctx;
use nightjar_core::api;
use nightjar_core::runlog as logs;

/// Flags of `logs`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Task id.
    pub id: i64,
    /// Follow a live run until it ends.
    #[arg(long, short = 'f')]
    pub follow: bool,
    /// Standard error instead of standard output.
    #[arg(long)]
    pub stderr: bool,
    /// Attempt number (default: the latest).
    #[arg(long)]
    pub attempt: Option<i64>,
}

/// Prints (or follows) the log.
pub fn run(mut ctx: Ctx, a: Args) -> Result<i32> {
    let d = ctx.client.call(api::Show { id: a.id })?;
    let run = match a.attempt {
        Some(n) => d.runs.iter().find(|r| r.attempt == n),
        None => d.runs.last(),
    };
    let Some(run) = run else {
        if !d.members.is_empty() {
            bail!(
                "task {} is a sweep; ask for one of its members (`nightjar show {}` lists them)",
                a.id,
                a.id
            );
        }
        bail!(
            "task {} has not started yet ({})",
            a.id,
            d.task.state.as_str()
        );
    };
    let dir = PathBuf::from(&run.run_dir);
    let path = dir.join(if a.stderr { logs::STDERR } else { logs::STDOUT });
    if ctx.json {
        let text = logs::read_all(&path).unwrap_or_default();
        super::print_json(
            &serde_json::json!({ "run": run.id, "path": path, "text": String::from_utf8_lossy(&text) }),
        )?;
        return Ok(0);
    }
    if !a.follow {
        let text = logs::read_all(&path).with_context(|| format!("read {}", path.display()))?;
        std::io::stdout().write_all(&text)?;
        return Ok(0);
    }
    let (task, run_id) = (a.id, run.id);
    follow(&path, || {
        let d = ctx.client.call(api::Show { id: task })?;
        Ok(d.runs
            .iter()
            .any(|r| r.id == run_id && r.state != "running"))
    })
}

/// Prints the log and then new output until `ended` says the run is over
/// (checked before each read, so the last output is always printed).
fn follow(path: &Path, mut ended: impl FnMut() -> Result<bool>) -> Result<i32> {
    let mut out = std::io::stdout();
    let rotated = logs::CappedLog::rotated_path(path);
    if let Ok(old) = std::fs::read(&rotated) {
        out.write_all(&old)?;
    }
    let mut pos = 0u64;
    let mut inode = None;
    loop {
        let ended = ended()?;
        if let Ok(mut f) = std::fs::File::open(path) {
            let ino = std::os::unix::fs::MetadataExt::ino(&f.metadata()?);
            if inode.is_some_and(|i| i != ino) {
                pos = 0; // rotated: the new file starts afresh
            }
            inode = Some(ino);
            f.seek(SeekFrom::Start(pos))?;
            let mut buf = Vec::new();
            f.read_to_end(&mut buf)?;
            pos += buf.len() as u64;
            out.write_all(&buf)?;
            out.flush()?;
        }
        if ended {
            return Ok(0);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}
