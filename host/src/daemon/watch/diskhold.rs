//! Tasks held after a disk-full run go back to the queue by themselves once
//! every file system they write to has the room `[classes] disk_free` asks.

use std::sync::Arc;
use std::time::Duration;

use crate::daemon::state::Daemon;
use crate::sandbox::classify;

/// How often held tasks' file systems are looked at.
pub const CHECK_EVERY: Duration = Duration::from_secs(10);

impl Daemon {
    /// Looks at the held tasks' file systems every [`CHECK_EVERY`], for the
    /// daemon's life (`statvfs` of a hung mount blocks a blocking thread,
    /// never the runtime).
    pub async fn disk_hold_loop(self: Arc<Self>) {
        let mut tick = tokio::time::interval(CHECK_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let me = Arc::clone(&self);
            let _ = tokio::task::spawn_blocking(move || me.release_disk_holds()).await;
        }
    }

    /// Releases every task whose file systems have room again; the number released.
    pub fn release_disk_holds(&self) -> usize {
        let held = match self.store().held_for_disk() {
            Ok(h) => h,
            Err(e) => {
                tracing::warn!("cannot read the tasks held for disk room: {e}");
                return 0;
            }
        };
        let mut released = 0;
        for (task, wait) in held {
            let room: Option<Vec<String>> = wait
                .paths
                .iter()
                .map(|p| {
                    // A folder deleted to make room is asked of its parent.
                    let (_, free) = classify::space_near(p)?;
                    (free >= wait.free).then(|| {
                        format!(
                            "{} has {} free",
                            p.display(),
                            bytesize::ByteSize::b(free).display().iec_short()
                        )
                    })
                })
                .collect();
            let Some(room) = room else { continue };
            let message = format!("disk room again: {}", room.join(", "));
            match self
                .store()
                .release_disk_hold(task, self.now_ms(), &message)
            {
                Ok(true) => {
                    tracing::info!("task {task}: released ({message})");
                    released += 1;
                }
                Ok(false) => {}
                Err(e) => tracing::warn!("task {task}: cannot release it: {e}"),
            }
        }
        if released > 0 {
            self.changed();
        }
        released
    }
}
