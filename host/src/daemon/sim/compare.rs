//! `simulate --compare OTHER.toml`: one trace under two configs, the
//! figures side by side with what changed (B - A, and B / A for times).

use nightjar_core::time::fmt_span;
use serde::Serialize;

use super::Summary;

/// Two simulations of one trace, as `--json` prints them.
#[derive(Debug, Serialize)]
pub struct Compared<'a> {
    /// The first config's name (the `--config` file, or "defaults").
    pub a_config: &'a str,
    /// The second config's name (`--compare`).
    pub b_config: &'a str,
    /// The figures under the first.
    pub a: &'a Summary,
    /// The figures under the second.
    pub b: &'a Summary,
}

/// A span of seconds as `fmt_span` writes it, signed.
fn span(s: f64) -> String {
    let text = fmt_span((s.abs() * 1000.0) as i64);
    if s < 0.0 { format!("-{text}") } else { text }
}

/// B against A for a time: "+2h10m (1.40x)", or "same".
fn time_change(a: f64, b: f64) -> String {
    if a == b {
        return "same".into();
    }
    let ratio = if a > 0.0 {
        format!(" ({:.2}x)", b / a)
    } else {
        String::new()
    };
    let sign = if b > a { "+" } else { "" };
    format!("{sign}{}{ratio}", span(b - a))
}

/// B against A for a count or amount, `digits` after the point ("same"
/// when the two read the same at that precision).
fn change(a: f64, b: f64, digits: usize) -> String {
    if format!("{a:.digits$}") == format!("{b:.digits$}") {
        return "same".into();
    }
    let sign = if b > a { "+" } else { "" };
    format!("{sign}{:.digits$}", b - a)
}

impl Compared<'_> {
    /// Prints the comparison: `--json`'s object, or the table.
    pub fn print(&self, json: bool) -> anyhow::Result<()> {
        if json {
            println!("{}", serde_json::to_string_pretty(self)?);
        } else {
            print!("{}", self.text());
        }
        Ok(())
    }

    /// The two as a table a person reads: one figure a row, each column
    /// headed by its config's file name (`--json` gives the whole path).
    pub fn text(&self) -> String {
        let (a, b) = (self.a, self.b);
        let file = |p: &str| {
            let name = std::path::Path::new(p).file_name();
            name.map_or(p.to_string(), |n| n.to_string_lossy().into_owned())
        };
        let (a_name, b_name) = (file(self.a_config), file(self.b_config));
        let mut rows: Vec<(String, String, String, String)> = Vec::new();
        let mut time = |name: &str, x: f64, y: f64| {
            rows.push((name.into(), span(x), span(y), time_change(x, y)));
        };
        time("wait mean", a.wait_s.mean, b.wait_s.mean);
        time("wait p50", a.wait_s.p50, b.wait_s.p50);
        time("wait p95", a.wait_s.p95, b.wait_s.p95);
        time("wait longest", a.wait_s.max, b.wait_s.max);
        time("completion mean", a.jct_s.mean, b.jct_s.mean);
        time("completion p95", a.jct_s.p95, b.jct_s.p95);
        time("makespan", a.makespan_s, b.makespan_s);
        let mut amount = |name: &str, x: f64, y: f64, digits: usize| {
            rows.push((
                name.into(),
                format!("{x:.digits$}"),
                format!("{y:.digits$}"),
                change(x, y, digits),
            ));
        };
        amount("ran", a.started as f64, b.started as f64, 0);
        amount(
            "never started",
            a.never_started as f64,
            b.never_started as f64,
            0,
        );
        amount("used %", a.utilisation * 100.0, b.utilisation * 100.0, 1);
        amount("GPU-hours", a.gpu_hours, b.gpu_hours, 1);
        amount("energy kWh", a.energy_kwh, b.energy_kwh, 3);
        let cost = if a.currency == b.currency {
            format!("cost {}", a.currency)
        } else {
            format!("cost {} / {}", a.currency, b.currency)
        };
        amount(&cost, a.cost, b.cost, 2);
        amount("  on arrival", a.cost_at_arrival, b.cost_at_arrival, 2);
        amount("preempted", a.preemptions as f64, b.preemptions as f64, 0);
        amount("passes", a.passes as f64, b.passes as f64, 0);
        let wa = rows.iter().map(|r| r.1.len()).chain([a_name.len()]).max();
        let wb = rows.iter().map(|r| r.2.len()).chain([b_name.len()]).max();
        let (wa, wb) = (wa.unwrap_or(0), wb.unwrap_or(0));
        let clean = nightjar_cli::table::clean_text;
        let mut t = format!(
            "{} jobs\n{:<16} {:>wa$}  {:>wb$}  CHANGE\n",
            a.jobs,
            "",
            clean(&a_name),
            clean(&b_name)
        );
        for (name, x, y, d) in rows {
            t += &format!("{name:<16} {x:>wa$}  {y:>wb$}  {d}\n");
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_read_as_signed_spans_with_ratios_and_same_when_equal() {
        assert_eq!(time_change(3600.0, 3600.0), "same");
        assert_eq!(time_change(3600.0, 5400.0), "+30m00s (1.50x)");
        assert_eq!(time_change(5400.0, 3600.0), "-30m00s (0.67x)");
        assert_eq!(time_change(0.0, 60.0), "+1m00s");
        assert_eq!(change(10.0, 7.5, 2), "-2.50");
        assert_eq!(change(3.0, 3.0, 0), "same");
        assert_eq!(change(374.913, 374.913_000_001, 3), "same");
    }
}
