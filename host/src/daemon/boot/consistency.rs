//! Whether the database agrees with what the state dir proves, before the
//! daemon trusts it: its id and issued ids against the copy in
//! `nightjar.db.ids`, run folders it does not know, and live supervisors
//! (their locks in `runs.lock`) holding runs it never heard of. A database
//! that lost writes (a truncated WAL), was deleted and recreated, or was
//! replaced, stops the start with what is wrong and how to recover.

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::config::Config;
use crate::store::Store;
use crate::store::integrity::Depth;
use crate::store::marks::{MarksFile, marks_path};

/// What a look at the state dir found.
#[derive(Debug, Default)]
pub struct Findings {
    /// The database file itself is damaged (SQLite's checks, unreadable rows).
    pub damage: Vec<String>,
    /// The database disagrees with the state dir.
    pub disagreements: Vec<String>,
    /// Run folders whose runs the database does not know (recovery adopts them).
    pub unknown_folders: Vec<i64>,
}

impl Findings {
    /// Whether nothing is wrong.
    pub fn sound(&self) -> bool {
        self.damage.is_empty() && self.disagreements.is_empty()
    }

    /// Every finding as lines for a person.
    pub fn lines(&self) -> Vec<String> {
        self.damage
            .iter()
            .chain(&self.disagreements)
            .cloned()
            .collect()
    }
}

/// Looks at the database at `cfg.db_path()` (open as `store`) against the
/// state dir.
pub fn examine(cfg: &Config, store: &Store, depth: Depth) -> Result<Findings> {
    let mut f = Findings {
        damage: store.check(depth)?,
        ..Findings::default()
    };
    if !f.damage.is_empty() {
        return Ok(f);
    }
    let db = cfg.db_path();
    let marks = store.marks()?;
    let copy_path = marks_path(&db);
    let folders = run_folders(&cfg.runs_dir());
    match MarksFile::read(&copy_path) {
        Err(e) => f.disagreements.push(e.to_string()),
        Ok(None) if store.copy_kept()? => f.disagreements.push(format!(
            "{} is missing: it was deleted, so whether the database lost writes cannot be told (restore it, or `nightjar daemon recover` writes it again from the database)",
            copy_path.display()
        )),
        Ok(None) => {}
        Ok(Some(copy)) if copy.store_id != marks.store_id => f.disagreements.push(format!(
            "{} is not the database this state dir was using: its id is {}, {} names {} (it was deleted and recreated, or replaced)",
            db.display(),
            marks.store_id,
            copy_path.display(),
            copy.store_id
        )),
        Ok(Some(copy)) => {
            if copy.tasks > marks.tasks {
                f.disagreements.push(format!(
                    "the database knows task ids up to {}, but ids up to {} were handed out ({}): it lost its latest writes (a truncated or deleted WAL?)",
                    marks.tasks,
                    copy.tasks,
                    copy_path.display()
                ));
            }
            if copy.runs > marks.runs {
                f.disagreements.push(format!(
                    "the database knows run ids up to {}, but runs up to {} were started ({})",
                    marks.runs,
                    copy.runs,
                    copy_path.display()
                ));
            }
        }
    }
    // Every run the database knows is at or below its mark. A folder at or
    // below it that no row names was removed from the database by `gc`
    // (its folder removal failed): not damage.
    f.unknown_folders = folders
        .iter()
        .copied()
        .filter(|id| *id > marks.runs)
        .collect();
    if !f.unknown_folders.is_empty() {
        f.disagreements.push(format!(
            "run folder(s) {} in {} are newer than anything the database knows (it knows runs up to {})",
            list(&f.unknown_folders),
            cfg.runs_dir().display(),
            marks.runs
        ));
    }
    let mut held = Vec::new();
    for id in locked_bytes(&cfg.run_lock_path()) {
        if id > marks.runs || !store.has_run(id)? {
            held.push(id);
        }
    }
    if !held.is_empty() {
        f.disagreements.push(format!(
            "live supervisor(s) hold run(s) {} (their locks in {}), which the database does not know",
            list(&held),
            cfg.run_lock_path().display()
        ));
    }
    Ok(f)
}

/// The message that stops a start on an unsound state dir.
pub fn refusal(cfg: &Config, f: &Findings) -> String {
    let mut msg = format!(
        "state dir {} is not consistent; the daemon did not start and changed nothing:",
        cfg.state_dir.display()
    );
    for line in f.lines() {
        msg.push_str("\n  - ");
        msg.push_str(&line);
    }
    msg.push_str(if f.damage.is_empty() {
        "\nThe database lost writes or is not the one this state dir used. `nightjar daemon recover` adopts what the run folders prove (live supervisors, finished runs) and never reuses an id; or stop and restore the database from a backup."
    } else {
        "\nThe database file is damaged. `nightjar daemon recover` moves it aside and rebuilds the store from the run folders; or restore it from a backup."
    });
    msg
}

/// The ids of the run folders under `runs` (numeric names only).
pub fn run_folders(runs: &Path) -> Vec<i64> {
    let mut ids: Vec<i64> = std::fs::read_dir(runs)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i64>().ok())
        .filter(|id| *id > 0)
        .collect();
    ids.sort_unstable();
    ids
}

/// The run folder of run `id`.
pub fn run_folder(cfg: &Config, id: i64) -> PathBuf {
    cfg.runs_dir().join(id.to_string())
}

/// The bytes of `lock_file` some process holds an open-file-description
/// lock on (`/proc/locks`): the runs whose supervisors live. A range is
/// looked at up to 10,000 bytes from its start.
pub fn locked_bytes(lock_file: &Path) -> Vec<i64> {
    let mut out: Vec<i64> = crate::sys::locks_on(lock_file)
        .into_iter()
        .filter(|l| l.kind == "OFDLCK")
        .flat_map(|l| l.start..=l.end.min(l.start.saturating_add(10_000)))
        .filter(|b| *b > 0)
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

fn list(ids: &[i64]) -> String {
    let mut s: Vec<String> = ids.iter().take(10).map(i64::to_string).collect();
    if ids.len() > 10 {
        s.push(format!("and {} more", ids.len() - 10));
    }
    s.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_real_lock_is_seen() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join("runs.lock");
        std::fs::write(&lock, "").unwrap();
        let held = crate::sandbox::lock::try_lock(&lock, 12).unwrap().unwrap();
        assert_eq!(locked_bytes(&lock), vec![12]);
        drop(held);
        assert!(locked_bytes(&lock).is_empty());
    }
}
