//! `[tariff]`: the host's electricity tariff (a flat price per kWh, with
//! time-of-use windows over it, read in the configured `timezone`) and how
//! CPU-only runs' energy is measured or estimated.

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

use crate::tariff::{self, Tariff, Window};

/// The tariff as written.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TariffConfig {
    /// The currency prices are in (`CNY`, `EUR`, ...), shown beside costs.
    pub currency: String,
    /// Price per kWh wherever no window applies.
    pub price: f64,
    /// Time-of-use windows: `[[tariff.windows]]`.
    pub windows: Vec<WindowConfig>,
    /// Watts per core a CPU-only run is assumed to draw when RAPL is not
    /// readable (an estimate, and said to be one).
    pub cpu_watts_per_core: f64,
    /// `auto`: CPU-only runs read RAPL (`/sys/class/powercap`) where it is
    /// readable; `off`: always the estimate.
    pub rapl: RaplMode,
}

/// One time-of-use window as written.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WindowConfig {
    /// Start, `HH:MM` or `HH:MM:SS` local time.
    pub from: String,
    /// End (exclusive); at or before `from` means it wraps midnight.
    pub to: String,
    /// Price per kWh inside the window.
    pub price: f64,
    /// The days the window starts on: `all`, `weekday`, `weekend`, `mon`..`sun`.
    #[serde(default = "all_days")]
    pub days: Vec<String>,
}

fn all_days() -> Vec<String> {
    vec!["all".into()]
}

/// Whether CPU-only runs read RAPL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RaplMode {
    /// Read the package energy counters where readable.
    Auto,
    /// Never; use `cpu_watts_per_core`.
    Off,
}

impl Default for TariffConfig {
    fn default() -> Self {
        TariffConfig {
            currency: "CNY".into(),
            price: 0.6,
            windows: Vec::new(),
            cpu_watts_per_core: 10.0,
            rapl: RaplMode::Auto,
        }
    }
}

impl TariffConfig {
    /// The tariff in `tz`; errors name the key (and the window, by number from 1).
    pub fn resolve(&self, tz: chrono_tz::Tz) -> Result<Tariff> {
        let currency = self.currency.trim();
        if currency.is_empty() || currency.len() > 16 || currency.chars().any(char::is_control) {
            bail!("key `tariff.currency`: give a short name such as `CNY` or `EUR`");
        }
        check_price("tariff.price", self.price)?;
        if !(self.cpu_watts_per_core.is_finite()
            && (0.0..=1000.0).contains(&self.cpu_watts_per_core))
        {
            bail!("key `tariff.cpu_watts_per_core` must be between 0 and 1000 (watts)");
        }
        let mut windows = Vec::new();
        for (i, w) in self.windows.iter().enumerate() {
            let at = |key: &str| format!("key `tariff.windows[{}].{key}`", i + 1);
            let from =
                tariff::parse_time(&w.from).map_err(|e| anyhow::anyhow!("{}: {e}", at("from")))?;
            let to = tariff::parse_time(&w.to).map_err(|e| anyhow::anyhow!("{}: {e}", at("to")))?;
            if from == 86_400 {
                bail!("{}: a window cannot start at 24:00", at("from"));
            }
            if from == to {
                bail!(
                    "{}: `from` and `to` are the same time; a window needs a length",
                    at("to")
                );
            }
            check_price(&format!("tariff.windows[{}].price", i + 1), w.price)?;
            let days =
                tariff::parse_days(&w.days).map_err(|e| anyhow::anyhow!("{}: {e}", at("days")))?;
            windows.push(Window {
                from_s: from,
                to_s: to % 86_400,
                price: w.price,
                days,
                label: format!("#{} ({}-{})", i + 1, w.from, w.to),
            });
        }
        Tariff::new(currency.to_string(), self.price, windows, tz)
            .map_err(|e| anyhow::anyhow!("table `[[tariff.windows]]`: {e}"))
    }
}

fn check_price(key: &str, p: f64) -> Result<()> {
    if !(p.is_finite() && p >= 0.0) {
        bail!("key `{key}` must be a price per kWh of 0 or more, not {p}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::config::Config;

    fn err(text: &str) -> String {
        format!(
            "{:#}",
            Config::parse(text, Path::new("c.toml")).unwrap_err()
        )
    }

    #[test]
    fn windows_parse_with_seconds_and_bad_ones_name_their_key() {
        let cfg = Config::parse(
            "timezone = \"UTC\"\n[tariff]\ncurrency = \"EUR\"\nprice = 0.5\n[[tariff.windows]]\nfrom = \"23:00\"\nto = \"07:00:30\"\nprice = 0.2\ndays = [\"weekday\"]\n",
            Path::new("c.toml"),
        )
        .unwrap();
        let t = cfg.tariff();
        assert_eq!(
            (t.currency.as_str(), t.windows[0].to_s),
            ("EUR", 7 * 3600 + 30)
        );
        let e = err("[[tariff.windows]]\nfrom = \"7pm\"\nto = \"07:00\"\nprice = 0.2\n");
        assert!(
            e.contains("tariff.windows[1].from") && e.contains("7pm"),
            "{e}"
        );
        let e = err(
            "[[tariff.windows]]\nfrom = \"19:00\"\nto = \"07:00\"\nprice = 0.2\ndays = [\"funday\"]\n",
        );
        assert!(e.contains("tariff.windows[1].days"), "{e}");
        let e = err("[tariff]\nprice = -1.0\n");
        assert!(e.contains("tariff.price"), "{e}");
        let e = err("[[tariff.windows]]\nfrom = \"19:00\"\nto = \"19:00\"\nprice = 0.2\n");
        assert!(e.contains("same time"), "{e}");
        let e = err(
            "[[tariff.windows]]\nfrom = \"22:00\"\nto = \"06:00\"\nprice = 0.2\n[[tariff.windows]]\nfrom = \"05:00\"\nto = \"08:00\"\nprice = 0.3\n",
        );
        assert!(
            e.contains("#1 (22:00-06:00)") && e.contains("#2 (05:00-08:00)"),
            "{e}"
        );
        let e = err("[tariff]\nwatts = 3\n");
        assert!(e.contains("watts"), "{e}");
    }
}
