//! Time windows a reservation holds in, read in the daemon's zone at the
//! snapshot's UTC offset (as offpeak-tariff reads its windows). A window's
//! `days` are the days it starts on, so `22:00` to `06:00` on weekdays
//! holds from Friday 22:00 to Saturday 06:00, not from Saturday 22:00.

use nightjar_sdk::config::TimeOfDay;
use nightjar_sdk::time::{DAY_MS, minute_of_day, weekday};
use nightjar_sdk::{ConfigError, Snapshot};
use serde::Deserialize;

/// One window as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Window {
    pub from: TimeOfDay,
    pub to: TimeOfDay,
    /// `all`, `weekday`, `weekend`, `mon`..`sun`, or a list of them.
    #[serde(
        default = "all",
        deserialize_with = "nightjar_sdk::config::string_list"
    )]
    pub days: Vec<String>,
}

fn all() -> Vec<String> {
    vec!["all".into()]
}

/// The weekdays (0 = Monday) `days` names, or the name that is not a day.
pub fn day_set(days: &[String]) -> Result<[bool; 7], String> {
    let mut set = [false; 7];
    for d in days {
        let on: &[usize] = match d.trim().to_ascii_lowercase().as_str() {
            "all" | "daily" => &[0, 1, 2, 3, 4, 5, 6],
            "weekday" | "weekdays" => &[0, 1, 2, 3, 4],
            "weekend" | "weekends" => &[5, 6],
            "mon" => &[0],
            "tue" => &[1],
            "wed" => &[2],
            "thu" => &[3],
            "fri" => &[4],
            "sat" => &[5],
            "sun" => &[6],
            _ => return Err(d.clone()),
        };
        on.iter().for_each(|&i| set[i] = true);
    }
    Ok(set)
}

impl Window {
    /// Checks the window; `key` is where it is written (`clinic.windows[0]`).
    pub fn validate(&self, key: &str) -> Result<(), ConfigError> {
        if self.from == self.to {
            return Err(ConfigError::at(
                format!("{key}.to"),
                "from and to are equal; a window over midnight ends before it starts (22:00 to 06:00)",
            ));
        }
        if self.days.is_empty() {
            return Err(ConfigError::at(
                format!("{key}.days"),
                "names no day; use \"all\", \"weekday\", \"weekend\" or mon..sun",
            ));
        }
        day_set(&self.days).map_err(|bad| {
            ConfigError::at(
                format!("{key}.days"),
                format!("`{bad}` is not a day; use all, weekday, weekend or mon, tue, wed, thu, fri, sat, sun"),
            )
        })?;
        Ok(())
    }

    /// When the window's occurrence that holds `now` ends (Unix ms), or
    /// `None` when it does not hold now.
    pub fn holds_until(&self, s: &Snapshot<'_>) -> Option<i64> {
        let days = day_set(&self.days).ok()?;
        let (m, wd) = (minute_of_day(s) as i64, weekday(s) as usize);
        let (from, to) = (self.from.minute() as i64, self.to.minute() as i64);
        let yesterday = (wd + 6) % 7;
        let minutes_left = if from < to {
            (days[wd] && from <= m && m < to).then_some(to - m)
        } else if m >= from && days[wd] {
            Some(24 * 60 - m + to)
        } else if m < to && days[yesterday] {
            Some(to - m)
        } else {
            None
        }?;
        // To the minute: the snapshot's `now` may be mid-minute.
        let into_minute = s
            .now
            .saturating_add(i64::from(s.utc_offset) * 1000)
            .rem_euclid(60_000);
        Some(s.now + minutes_left * 60_000 - into_minute).filter(|&e| e <= s.now + 2 * DAY_MS)
    }

    /// `09:00-18:00 (weekday)`.
    pub fn text(&self) -> String {
        let hhmm = |t: TimeOfDay| format!("{:02}:{:02}", t.minute() / 60, t.minute() % 60);
        format!(
            "{}-{} ({})",
            hhmm(self.from),
            hhmm(self.to),
            self.days.join(", ")
        )
    }
}
