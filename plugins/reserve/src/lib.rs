//! `reserve`: keep capacity free for the work it is for. Each reservation
//! keeps `gpus` whole GPUs (or `gpu_mem` free on one GPU) for tasks of the
//! listed priorities and/or projects, always or only in its time windows.
//! Other work is deferred when starting it would leave less than that free;
//! the tasks of one pass are counted together, in the host's order, so
//! several small tasks cannot eat the kept capacity between them. The
//! reason names the reservation.
//!
//! ```toml
//! [plugin.reserve.config.clinic-day]
//! gpus = 1                          # or gpu_mem = "40GiB" (free on one GPU)
//! for_priorities = ["urgent"]       # low, normal, high, urgent
//! for_projects = ["clinic"]
//! windows = [{ from = "09:00", to = "18:00", days = "weekday" }]
//! lend = false                      # true: others may use it while none of its tasks waits
//! ```
//!
//! GPUs that the reservation's own tasks run on count as the reservation in
//! use. With `lend = true` a borrower keeps its GPU until it ends (ask for
//! `preemptible = true` tasks if that is too long). A reservation larger
//! than the machine keeps every GPU and says so, naming the key to fix.

mod window;

use std::collections::BTreeMap;

use nightjar_sdk::config::Size;
use nightjar_sdk::*;
use serde::Deserialize;
use window::Window;

/// Most reservations, GPUs and windows a config may hold (more is a mistake).
const MAX_RESERVATIONS: usize = 64;
const MAX_GPUS: u32 = 1024;
const MAX_WINDOWS: usize = 32;

/// One reservation as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Reservation {
    gpus: Option<u32>,
    gpu_mem: Option<Size>,
    #[serde(default, deserialize_with = "nightjar_sdk::config::string_list")]
    for_priorities: Vec<String>,
    #[serde(default, deserialize_with = "nightjar_sdk::config::string_list")]
    for_projects: Vec<String>,
    #[serde(default)]
    windows: Vec<Window>,
    #[serde(default)]
    lend: bool,
}

/// The reservations by name.
type Config = BTreeMap<String, Reservation>;

fn priority_of(name: &str) -> Option<Priority> {
    match name.trim().to_ascii_lowercase().as_str() {
        "low" => Some(Priority::Low),
        "normal" => Some(Priority::Normal),
        "high" => Some(Priority::High),
        "urgent" => Some(Priority::Urgent),
        _ => None,
    }
}

impl Reservation {
    fn validate(&self, name: &str) -> Result<(), ConfigError> {
        let at = |k: &str| format!("{name}.{k}");
        match (self.gpus, self.gpu_mem) {
            (None, None) => {
                return Err(ConfigError::at(
                    at("gpus"),
                    "say what to keep: gpus = N (whole GPUs) or gpu_mem = \"40GiB\" (free on one GPU)",
                ));
            }
            (Some(_), Some(_)) => {
                return Err(ConfigError::at(
                    at("gpu_mem"),
                    "give gpus or gpu_mem, not both (two reservations keep both)",
                ));
            }
            (Some(n), None) if n == 0 || n > MAX_GPUS => {
                return Err(ConfigError::at(
                    at("gpus"),
                    format!("{n} GPUs: keep 1 to {MAX_GPUS}"),
                ));
            }
            (None, Some(m)) if m.bytes() == 0 || m.bytes() > 1 << 50 => {
                return Err(ConfigError::at(
                    at("gpu_mem"),
                    "keep more than 0 bytes and at most 1 PiB of GPU memory",
                ));
            }
            _ => {}
        }
        if self.for_priorities.is_empty() && self.for_projects.is_empty() {
            return Err(ConfigError::at(
                at("for_priorities"),
                "the reservation is for nobody: name for_priorities (e.g. [\"urgent\"]) and/or for_projects",
            ));
        }
        if let Some(bad) = self
            .for_priorities
            .iter()
            .find(|p| priority_of(p).is_none())
        {
            return Err(ConfigError::at(
                at("for_priorities"),
                format!("`{bad}` is not a priority; use low, normal, high or urgent"),
            ));
        }
        if self.windows.len() > MAX_WINDOWS {
            return Err(ConfigError::at(
                at("windows"),
                format!("{} windows; at most {MAX_WINDOWS}", self.windows.len()),
            ));
        }
        for (i, w) in self.windows.iter().enumerate() {
            w.validate(&format!("{name}.windows[{i}]"))?;
        }
        Ok(())
    }

    /// Whether the reservation is for this task.
    fn is_for(&self, priority: Priority, project: &str) -> bool {
        self.for_priorities
            .iter()
            .any(|p| priority_of(p) == Some(priority))
            || self.for_projects.iter().any(|p| p == project)
    }

    /// Holds now: `Some(until)` (`None` inside: no window, always).
    fn holds(&self, s: &Snapshot<'_>) -> Option<Option<i64>> {
        if self.windows.is_empty() {
            return Some(None);
        }
        self.windows
            .iter()
            .filter_map(|w| w.holds_until(s))
            .max()
            .map(Some)
    }

    /// `1 GPU kept for urgent tasks and project clinic 09:00-18:00 (weekday)`.
    fn describe(&self) -> String {
        let what = match (self.gpus, self.gpu_mem) {
            (Some(1), _) => "1 GPU".to_string(),
            (Some(n), _) => format!("{n} GPUs"),
            (None, Some(m)) => format!("{} of GPU memory", gib(m.bytes())),
            (None, None) => String::new(),
        };
        let mut whom = Vec::new();
        if !self.for_priorities.is_empty() {
            whom.push(format!("{} tasks", self.for_priorities.join("/")));
        }
        if !self.for_projects.is_empty() {
            let s = if self.for_projects.len() == 1 {
                ""
            } else {
                "s"
            };
            whom.push(format!("project{s} {}", self.for_projects.join(", ")));
        }
        let when: Vec<String> = self.windows.iter().map(Window::text).collect();
        let when = if when.is_empty() {
            String::new()
        } else {
            format!(" {}", when.join(", "))
        };
        format!("{what} kept for {}{when}", whom.join(" and "))
    }
}

fn gib(bytes: u64) -> String {
    let g = bytes as f64 / (1u64 << 30) as f64;
    if g.fract() == 0.0 {
        format!("{g:.0} GiB")
    } else {
        format!("{g:.1} GiB")
    }
}

mod account;

/// The policy.
struct Reserve;

impl Policy for Reserve {
    type Config = Config;

    fn check_config(cfg: &Config) -> Result<(), ConfigError> {
        if cfg.len() > MAX_RESERVATIONS {
            return Err(ConfigError::whole(format!(
                "{} reservations; at most {MAX_RESERVATIONS}",
                cfg.len()
            )));
        }
        for (name, r) in cfg {
            if name.len() > 64 || name.chars().any(char::is_control) {
                return Err(ConfigError::at(
                    name.chars().take(64).collect::<String>(),
                    "a reservation's name is at most 64 printable characters",
                ));
            }
            r.validate(name)?;
        }
        Ok(())
    }

    fn evaluate(cfg: &Config, s: &Snapshot) -> Evaluation {
        account::evaluate(cfg, s)
    }
}

export_policy!(Reserve);

#[cfg(test)]
mod tests;
