//! The free-space gate: no new run starts while the state dir's or
//! scratch's file system has less than `[retention] min_free`.

use crate::daemon::state::Daemon;
use crate::sandbox::classify;

impl Daemon {
    /// Why no run may start now, if the state dir's or scratch's file
    /// system is below `[retention] min_free`.
    pub(in crate::daemon) fn start_gate(&self) -> Option<String> {
        let min = self.cfg.retention.min_free.as_u64();
        if min == 0 {
            return None;
        }
        let scratch = self.cfg.scratch_dir();
        let mut seen = Vec::new();
        for (what, path) in [("state dir", &self.cfg.state_dir), ("scratch", &scratch)] {
            let Some((total, free)) = classify::space_near(path) else {
                continue;
            };
            if seen.contains(&(total, free)) {
                continue; // the same file system
            }
            seen.push((total, free));
            if free < min {
                let size = |b: u64| bytesize::ByteSize::b(b).display().iec_short().to_string();
                return Some(format!(
                    "no run starts: the {what}'s file system ({}) has {} free of {} ({}% full), below [retention] min_free {}; free some room or lower min_free",
                    path.display(),
                    size(free),
                    size(total),
                    100 - (free.saturating_mul(100) / total.max(1)),
                    size(min)
                ));
            }
        }
        None
    }
}
