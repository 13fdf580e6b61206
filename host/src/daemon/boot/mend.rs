//! `nightjar daemon check` and `nightjar daemon recover`: the state dir
//! looked at offline, and mended from what its run folders prove.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::evidence::{evidence, folder_uid, supervisor_commands};
use crate::config::Config;
use crate::daemon::boot::claims::{self, Claim};
use crate::daemon::boot::consistency::{self, Findings, locked_bytes, run_folders};
use crate::store::adopt::Evidence;
use crate::store::integrity::Depth;
use crate::store::marks::{MAX_ID, MarksFile, marks_path};
use crate::store::{Store, StoreError};
use crate::time::now_ms;

/// `nightjar daemon check [--full]`: prints what is wrong (exit 1) or that
/// the state dir is sound (exit 0). Changes nothing but a schema upgrade.
pub fn check(cfg: &Config, full: bool) -> Result<i32> {
    let db = cfg.db_path();
    if !db.exists() {
        let folders = run_folders(&cfg.runs_dir());
        if folders.is_empty() {
            println!("no database at {} yet: nothing to check", db.display());
            return Ok(0);
        }
        println!(
            "no database at {}, but {} run folder(s) in {}: it was deleted; `nightjar daemon recover` rebuilds it from them",
            db.display(),
            folders.len(),
            cfg.runs_dir().display()
        );
        return Ok(1);
    }
    let store = match Store::open(&db) {
        Ok(s) => s,
        Err(e @ StoreError::Damaged { .. }) => {
            println!("{e}");
            return Ok(1);
        }
        Err(e) => return Err(e).with_context(|| format!("open database {}", db.display())),
    };
    let depth = if full { Depth::Full } else { Depth::Quick };
    let f = consistency::examine(cfg, &store, depth)?;
    if f.sound() {
        let m = store.marks()?;
        println!(
            "sound: database {} ({} check), schema {}, task ids up to {}, run ids up to {}; {} run folder(s), {} live supervisor(s)",
            db.display(),
            if full { "integrity" } else { "quick" },
            store.schema_version()?,
            m.tasks,
            m.runs,
            run_folders(&cfg.runs_dir()).len(),
            locked_bytes(&cfg.run_lock_path()).len()
        );
        return Ok(0);
    }
    println!("{}", consistency::refusal(cfg, &f));
    Ok(1)
}

/// `nightjar daemon recover`, with the daemon stopped.
pub fn recover(cfg: &Config) -> Result<i32> {
    // The daemon's own lock: a running daemon refuses this, as a second daemon is refused.
    let _lock = crate::daemon::boot::prepare::prepare_state_dir(cfg)?;
    let db = cfg.db_path();
    let copy_path = marks_path(&db);
    let copy = MarksFile::read(&copy_path).ok().flatten();
    // Damaged: SQLite cannot read it as a database, or its checks fail.
    let opened = match Store::open(&db) {
        Ok(s) => {
            let faults = s.check(Depth::Quick)?;
            if faults.is_empty() {
                Ok(s)
            } else {
                Err(faults.join("; "))
            }
        }
        Err(StoreError::Damaged { detail, .. }) => Err(detail),
        Err(e) => return Err(e).with_context(|| format!("open database {}", db.display())),
    };
    let mut store = match opened {
        Ok(s) => s,
        Err(detail) => {
            let aside = move_aside(&db)?;
            println!(
                "the database was damaged ({detail}); moved it to {}",
                aside.display()
            );
            Store::open(&db)?
        }
    };
    // A database that is not the one this state dir used (replaced by
    // another nightjar's) is moved aside as a damaged one is: its ids mean
    // other tasks. (A database made just now, after moving a damaged one
    // aside, is new: it is this state dir's from here on.)
    let fresh = store.is_new()?;
    if let Some(c) = &copy
        && !fresh
    {
        let found = store.marks()?.store_id;
        if c.store_id != found {
            drop(store);
            let aside = move_aside(&db)?;
            println!(
                "the database is not the one this state dir used (its id is {found}, {} names {}); moved it to {}",
                copy_path.display(),
                c.store_id,
                aside.display()
            );
            store = Store::open(&db)?;
        }
    }
    // A copy naming ids past any nightjar hands out is damaged: not believed.
    let copy = match copy {
        Some(c) if !(0..=MAX_ID).contains(&c.tasks) || !(0..=MAX_ID).contains(&c.runs) => {
            println!(
                "{} names ids no nightjar hands out ({} tasks, {} runs): it is damaged and not believed",
                copy_path.display(),
                c.tasks,
                c.runs
            );
            None
        }
        c => c,
    };
    let before = store.marks()?;
    let f: Findings = consistency::examine(cfg, &store, Depth::Quick)?;
    let (mut adopted, mut recreated, mut set_aside) = (Vec::new(), Vec::new(), Vec::new());
    let supervisors = supervisor_commands();
    let found: Vec<(i64, PathBuf, std::result::Result<Evidence, String>)> = (f.unknown_folders)
        .iter()
        .map(|id| {
            let dir = consistency::run_folder(cfg, *id);
            let e = evidence(*id, &dir, &supervisors);
            (*id, dir, e)
        })
        .collect();
    // Several folders claiming one lost task: who decides (claims.rs).
    let claims: Vec<Claim> = (found.iter())
        .filter_map(|(id, dir, e)| {
            let e = e.as_ref().ok()?;
            Some(Claim {
                run: *id,
                task: e.task,
                owner: e.spec.owner.as_ref().map(|o| o.uid),
                daemons: folder_uid(dir) == Some(crate::users::euid()),
            })
        })
        .collect();
    let refused = claims::refused(&claims, &|task| store.task(task).is_ok());
    for (id, dir, evidence) in found {
        let id = &id;
        let evidence = match refused.get(id) {
            Some(why) => Err(why.clone()),
            None => evidence,
        };
        let adopted_as = match evidence {
            Ok(_) if *id > MAX_ID => Err(format!(
                "its id is past any id nightjar hands out ({MAX_ID})"
            )),
            Ok(e) if !(1..=MAX_ID).contains(&e.task) => Err(format!(
                "its manifest names task {}, no id nightjar hands out",
                e.task
            )),
            Ok(e) => store.adopt_run(&e, now_ms())?.map(|new| (e.task, new)),
            Err(why) => Err(why),
        };
        match adopted_as {
            Ok((task, new)) => {
                if new {
                    recreated.push(task);
                }
                adopted.push(*id);
            }
            Err(why) => {
                let to = cfg.runs_dir().join(format!("unadopted-{id}"));
                std::fs::rename(&dir, &to)
                    .with_context(|| format!("move {} to {}", dir.display(), to.display()))?;
                set_aside.push(format!(
                    "run {id}: {why}; its folder is now {}",
                    to.display()
                ));
            }
        }
    }
    let folder_max = run_folders(&cfg.runs_dir()).last().copied().unwrap_or(0);
    let locks = locked_bytes(&cfg.run_lock_path());
    let lock_max = locks
        .iter()
        .copied()
        .filter(|b| *b <= MAX_ID)
        .max()
        .unwrap_or(0);
    for b in locks.iter().filter(|b| **b > MAX_ID) {
        println!(
            "  not believed: a lock on byte {b} of {}, past any run id",
            cfg.run_lock_path().display()
        );
    }
    let (copy_tasks, copy_runs) = copy.as_ref().map(|c| (c.tasks, c.runs)).unwrap_or((0, 0));
    store.raise_marks(copy_tasks, copy_runs.max(folder_max).max(lock_max))?;
    let after = store.marks()?;
    let (lost, lost_count) = store.missing_tasks(before.tasks + 1, copy_tasks, 50)?;
    let mut file = MarksFile::open(&copy_path)?;
    file.write(&after)?;
    file.sync()?;
    store.set_copy_kept()?;
    println!(
        "recovered state dir {}: {} run(s) put back from their folders ({} task(s) recreated); ids go on after task {} and run {}",
        cfg.state_dir.display(),
        adopted.len(),
        recreated.len(),
        after.tasks,
        after.runs
    );
    for line in &set_aside {
        println!("  not adopted: {line}");
    }
    // Counted after the adoption: a task recreated from a folder is not lost.
    let unrecovered = lost_count;
    if unrecovered > 0 {
        let named = if lost.is_empty() {
            format!(
                "{unrecovered} task(s) with ids from {} to {copy_tasks}",
                before.tasks + 1
            )
        } else {
            format!(
                "task(s) {}{}",
                lost.iter()
                    .map(i64::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
                if (lost.len() as i64) < unrecovered {
                    " and more"
                } else {
                    ""
                }
            )
        };
        println!(
            "  lost: {named} were accepted, but the database lost them and no run folder holds their spec: submit them again"
        );
    }
    println!(
        "start the daemon: runs put back are looked at as at every start (alive, ended, or gone)"
    );
    Ok(0)
}

/// Renames the database and its WAL and shared-memory files to
/// `<db>.damaged-<unix seconds>[-wal|-shm]`; returns the new main path.
fn move_aside(db: &Path) -> Result<PathBuf> {
    let stamp = now_ms() / 1000;
    let name = |n: u32| {
        let mut aside = db.as_os_str().to_owned();
        aside.push(match n {
            0 => format!(".damaged-{stamp}"),
            n => format!(".damaged-{stamp}-{n}"),
        });
        PathBuf::from(aside)
    };
    let Some(aside) = (0..100).map(name).find(|p| !p.exists()) else {
        bail!(
            "{} and 99 more exist already; move them away and try again",
            name(0).display()
        );
    };
    for suffix in ["", "-wal", "-shm"] {
        let mut from = db.as_os_str().to_owned();
        from.push(suffix);
        let mut to = aside.as_os_str().to_owned();
        to.push(suffix);
        match std::fs::rename(&from, &to) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("move {} aside", PathBuf::from(&from).display()));
            }
        }
    }
    Ok(aside)
}
