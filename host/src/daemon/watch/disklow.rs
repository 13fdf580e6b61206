//! `disk-low`: the file systems the daemon and its tasks write to (the state
//! dir's, and the output folders of the runs in progress) are looked at
//! every [`CHECK_EVERY`]; one with less free than `[notify] disk_low` is told
//! of ONCE, as a `disk-low` event (a warning) that names the path, the
//! mount point, the free and total space and what to do.
//!
//! Hysteresis ([`judge`]): after it was told, a file system is told again
//! only once it has recovered to [`rearm_at`] (the threshold plus a tenth of
//! it, at least 1 GiB more) and then fell below the threshold again, so a
//! disk hovering around the threshold is one message, not one per look.
//!
//! What was told is kept in memory, per file system (several watched paths
//! on one file system are one event): a daemon restarted while a file
//! system is still low tells of it once more.
//!
//! A path is asked on a thread of its own and waited for [`PROBE_WAIT`]: an
//! output folder on a hung mount (an NFS server gone, a user's sshfs
//! stopped) is skipped, and not asked again until its question comes back,
//! instead of holding every later look, the state dir's included.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytesize::ByteSize;

use crate::daemon::state::Daemon;
use crate::daemon::watch::diskhold::CHECK_EVERY;
use crate::store::outbox::Severity;
use crate::sync::LockUnpoisoned;

/// Re-arming asks at least this much above the threshold.
pub const REARM_MIN: u64 = 1 << 30;

/// What to do, in the event's facts (the messages say it in their language).
pub const HINT: &str = "free room on that file system (delete or move old outputs, checkpoints, scratch); \
     tasks that hit ENOSPC (No space left on device) are held as disk-full and go back to the queue \
     by themselves once there is room";

/// The free space at which a file system that was told of is re-armed:
/// `low` plus a tenth of it, at least [`REARM_MIN`] more.
pub fn rearm_at(low: u64) -> u64 {
    low.saturating_add((low / 10).max(REARM_MIN))
}

/// One look at a file system with `free` bytes free against the threshold
/// `low` (0: the check is off), `told` whether it was told of and not
/// re-armed since: (tell now, told after this look).
pub fn judge(told: bool, free: u64, low: u64) -> (bool, bool) {
    if low == 0 {
        return (false, false);
    }
    match told {
        false if free < low => (true, true),
        false => (false, false),
        true => (false, free < rearm_at(low)),
    }
}

/// How long one path's file system is waited for.
const PROBE_WAIT: Duration = Duration::from_secs(5);

/// The paths whose question has not come back (a hung mount).
#[derive(Clone, Default)]
pub struct Hung(Arc<Mutex<HashSet<PathBuf>>>);

impl Hung {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<PathBuf>> {
        self.0.lock_unpoisoned()
    }

    /// `ask(path)` on a thread, waited for at most `wait`; `None` when it
    /// fails, is late, or is still out from an earlier look.
    fn probe_with<F>(&self, path: &Path, wait: Duration, ask: F) -> Option<Fs>
    where
        F: FnOnce(&Path) -> Option<Fs> + Send + 'static,
    {
        if !self.lock().insert(path.to_path_buf()) {
            return None;
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let (p, me) = (path.to_path_buf(), self.clone());
        let started = std::thread::Builder::new()
            .name("nightjar-statfs".into())
            .spawn(move || {
                let fs = ask(&p);
                me.lock().remove(&p);
                let _ = tx.send(fs);
            });
        if started.is_err() {
            self.lock().remove(path);
            return None;
        }
        match rx.recv_timeout(wait) {
            Ok(fs) => fs,
            Err(_) => {
                tracing::warn!(
                    "{}: its file system did not answer in {wait:?} (a hung mount?); skipped until it does",
                    path.display()
                );
                None
            }
        }
    }
}

/// A file system as seen through one of its paths.
struct Fs {
    /// Its device id (one event per file system).
    dev: u64,
    total: u64,
    free: u64,
}

/// The file system of `path`, asked of its nearest folder that exists (an
/// output folder not made yet is on its parent's).
fn probe(path: &Path) -> Option<Fs> {
    path.ancestors().find_map(|p| {
        if p.as_os_str().is_empty() {
            return None;
        }
        let meta = std::fs::metadata(p).ok()?;
        let (total, free) = crate::sandbox::classify::space(p)?;
        Some(Fs {
            dev: meta.dev(),
            total,
            free,
        })
    })
}

fn size(b: u64) -> String {
    ByteSize::b(b).display().iec_short().to_string()
}

impl Daemon {
    /// Looks at the file systems every [`CHECK_EVERY`], for the daemon's
    /// life, unless `[notify] disk_low` is 0 (`statvfs` of a hung mount
    /// blocks a blocking thread, never the runtime).
    pub async fn disk_low_loop(self: Arc<Self>) {
        if self.cfg.notify.disk_low.as_u64() == 0 {
            return;
        }
        let mut tick = tokio::time::interval(CHECK_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut told = HashSet::new();
        let hung = Hung::default();
        loop {
            tick.tick().await;
            let me = Arc::clone(&self);
            let mut mine = std::mem::take(&mut told);
            let h = hung.clone();
            let looked = tokio::task::spawn_blocking(move || {
                me.check_disk_room(&mut mine, &h);
                mine
            })
            .await;
            // A look that panicked forgets what was told (it may tell again).
            told = looked.unwrap_or_default();
        }
    }

    /// One look at every watched file system; `told` holds the devices told
    /// of and not re-armed, `hung` the paths still not answered. Returns how
    /// many `disk-low` events it wrote.
    pub fn check_disk_room(&self, told: &mut HashSet<u64>, hung: &Hung) -> usize {
        let low = self.cfg.notify.disk_low.as_u64();
        let mut paths = vec![self.cfg.state_dir.clone()];
        match self.store().running_outputs() {
            Ok(outputs) => paths.extend(outputs),
            Err(e) => tracing::warn!("cannot read the running tasks' output folders: {e}"),
        }
        let mut looked = HashSet::new();
        let mut written = 0;
        for path in paths {
            let Some(fs) = hung.probe_with(&path, PROBE_WAIT, probe) else {
                continue;
            };
            if !looked.insert(fs.dev) {
                continue;
            }
            let (tell, now_told) = judge(told.contains(&fs.dev), fs.free, low);
            if now_told {
                told.insert(fs.dev);
            } else {
                told.remove(&fs.dev);
            }
            if tell {
                self.disk_low_event(&path, &fs, low);
                written += 1;
            }
        }
        written
    }

    fn disk_low_event(&self, path: &Path, fs: &Fs, low: u64) {
        let mount: PathBuf = crate::daemon::boot::private::mount_point(path);
        let message = format!(
            "low disk space on {}: {} free of {} (under {})",
            mount.display(),
            size(fs.free),
            size(fs.total),
            size(low)
        );
        tracing::warn!("{message} ({})", path.display());
        let facts = serde_json::json!({
            "message": message,
            "path": path.display().to_string(),
            "mount": mount.display().to_string(),
            "free_bytes": fs.free,
            "total_bytes": fs.total,
            "threshold_bytes": low,
            "hint": HINT,
        });
        let at = crate::time::now_ms();
        if let Err(e) = self
            .store()
            .daemon_event(at, "disk-low", Severity::Warning, facts)
        {
            tracing::warn!("cannot write the disk-low event: {e}");
        }
        self.changed();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn told_once_below_the_threshold_then_again_only_after_recovering_past_the_margin() {
        let low = 5 * GIB;
        assert_eq!(rearm_at(low), 6 * GIB, "at least 1 GiB above");
        assert_eq!(rearm_at(100 * GIB), 110 * GIB, "a tenth above");
        let mut told = false;
        let mut tells = Vec::new();
        // Falls, hovers around the threshold, recovers a little, then past
        // the margin, and falls again.
        for free in [9, 6, 4, 3, 5, 4, 5, 4, 3, 7, 2] {
            let (tell, now) = judge(told, free * GIB, low);
            told = now;
            tells.push(tell);
        }
        let want = [
            false, false, true, false, false, false, false, false, false, false, true,
        ];
        assert_eq!(tells, want);
        // Just under the re-arm point is still "told"; at it, re-armed.
        assert_eq!(judge(true, 6 * GIB - 1, low), (false, true));
        assert_eq!(judge(true, 6 * GIB, low), (false, false));
        assert_eq!(
            judge(false, low, low),
            (false, false),
            "at the threshold is fine"
        );
    }

    #[test]
    fn a_zero_threshold_never_tells_and_a_huge_one_does_not_overflow() {
        assert_eq!(judge(false, 0, 0), (false, false));
        assert_eq!(judge(true, 0, 0), (false, false));
        assert_eq!(rearm_at(u64::MAX), u64::MAX);
        assert_eq!(judge(false, u64::MAX - 1, u64::MAX), (true, true));
        assert_eq!(judge(true, u64::MAX - 1, u64::MAX), (false, true));
    }

    #[test]
    fn a_hung_mount_is_waited_for_briefly_then_skipped_until_it_answers() {
        let dir = tempfile::tempdir().unwrap();
        let hung = Hung::default();
        let (release, stuck) = std::sync::mpsc::channel::<()>();
        let ms = Duration::from_millis;
        let started = std::time::Instant::now();
        let fs = hung.probe_with(dir.path(), ms(200), move |p| {
            let _ = stuck.recv();
            probe(p)
        });
        // Waited for briefly, not for ever (the question never answers).
        assert!(fs.is_none());
        assert!(started.elapsed() < ms(30_000), "{:?}", started.elapsed());
        // Still out: the next look skips it without asking again, even
        // with a minute to wait (so no clock tells "skipped" here).
        let asked = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = Arc::clone(&asked);
        let fs = hung.probe_with(dir.path(), ms(60_000), move |p| {
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
            probe(p)
        });
        assert!(fs.is_none(), "skipped while the first question is out");
        assert!(
            !asked.load(std::sync::atomic::Ordering::SeqCst),
            "not asked"
        );
        // Once it answers, it is asked again.
        release.send(()).unwrap();
        let deadline = std::time::Instant::now() + ms(30_000);
        while !hung.lock().is_empty() {
            assert!(std::time::Instant::now() < deadline, "the answer came");
            std::thread::sleep(ms(10));
        }
        assert!(hung.probe_with(dir.path(), ms(30_000), probe).is_some());
    }

    #[test]
    fn a_folder_not_made_yet_is_asked_of_its_parent() {
        let dir = tempfile::tempdir().unwrap();
        let here = probe(dir.path()).expect("a file system");
        let later = probe(&dir.path().join("not/yet")).expect("its parent's");
        assert_eq!(here.dev, later.dev);
        assert!(here.total >= here.free && here.total > 0);
    }
}
