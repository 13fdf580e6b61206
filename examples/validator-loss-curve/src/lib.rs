//! `loss_curve`: a training log's loss column has no NaN (or infinity, or
//! blank), and the loss fell by at least a fraction from the first row to
//! the last.
//!
//! Config (a `[[validate]]` table of a task file):
//!
//! ```toml
//! [[validate]]
//! plugin = "validators/loss_curve.wasm"   # relative to the task file
//! file = "train_log.csv"                  # the log, in the run's output folder
//! column = "loss"                         # the column judged
//! min_drop = 0.5                          # the last loss is at most half the first
//! severity = "error"                      # or "warning": the run still succeeds
//! ```

use std::io::ErrorKind;

use nightjar_sdk::*;

/// The configuration: every key has a default, a misspelt key is an error.
#[derive(serde::Deserialize, Debug)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// The CSV log, relative to the output folder.
    file: String,
    /// The column of the loss.
    column: String,
    /// The fraction the loss must fall by, first row to last (0 to 1).
    min_drop: f64,
    /// How much a finding weighs.
    severity: Severity,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            file: "train_log.csv".into(),
            column: "loss".into(),
            min_drop: 0.0,
            severity: Severity::Error,
        }
    }
}

/// The validator.
pub struct LossCurve;

impl Validator for LossCurve {
    type Config = Config;

    fn validate(c: &Config, run: &Run) -> Vec<Finding> {
        match judge(c, run) {
            Ok(()) => Vec::new(),
            Err(why) => vec![Finding::new(
                c.severity,
                &c.file,
                format!("{}: {why}", c.file),
            )],
        }
    }

    fn check_config(c: &Config) -> Result<(), ConfigError> {
        if !(0.0..1.0).contains(&c.min_drop) {
            return Err(ConfigError::at(
                "min_drop",
                "a fraction from 0 up to (not including) 1, like 0.5 for \"at least halved\"",
            ));
        }
        Ok(())
    }
}

export_validator!(LossCurve);

/// `Ok` when the curve is fine, else what is wrong, for a person.
fn judge(c: &Config, run: &Run) -> Result<(), String> {
    let file = run.open(&c.file).map_err(|e| match e.kind() {
        ErrorKind::NotFound => format!(
            "missing, wanted a training log with a `{}` column",
            c.column
        ),
        _ => format!("cannot be read ({e})"),
    })?;
    // Streamed row by row: a long log is never held whole.
    let mut log = csv::Reader::from_reader(std::io::BufReader::new(file));
    let header = log.headers().map_err(|e| format!("not a CSV log ({e})"))?;
    let Some(col) = header.iter().position(|h| h.trim() == c.column) else {
        let names: Vec<&str> = header.iter().collect();
        return Err(format!(
            "no `{}` column, the header is: {}",
            c.column,
            names.join(", ")
        ));
    };
    let (mut first, mut last, mut rows) = (None, 0.0, 0u64);
    for (row, record) in log.records().enumerate() {
        let record = record.map_err(|e| format!("not a CSV log ({e})"))?;
        let text = record.get(col).unwrap_or("").trim();
        let loss: f64 = match text.parse() {
            Ok(v) if f64::is_finite(v) => v,
            // Rust reads "NaN", "inf" and "-inf" as numbers: they are not losses.
            _ => {
                return Err(format!(
                    "{} is `{text}` on row {}, wanted a finite number on every row",
                    c.column,
                    row + 1
                ));
            }
        };
        first.get_or_insert(loss);
        last = loss;
        rows += 1;
    }
    let Some(first) = first.filter(|_| rows >= 2) else {
        return Err(format!(
            "{rows} rows, wanted at least 2 to see the loss fall"
        ));
    };
    if c.min_drop == 0.0 {
        return Ok(());
    }
    if first <= 0.0 {
        return Err(format!(
            "the first {} is {first}; a fall by a fraction needs a positive first value",
            c.column
        ));
    }
    let target = first * (1.0 - c.min_drop);
    if last <= target {
        return Ok(());
    }
    Err(format!(
        "{} went from {first} to {last} ({:+.0}%), wanted a fall of at least {:.0}% (to {target} or below)",
        c.column,
        (last - first) / first * 100.0,
        c.min_drop * 100.0
    ))
}

#[cfg(test)]
mod tests {
    use nightjar_sdk::testing::OutputDir;

    use super::*;

    fn findings(config: &str, log: &str) -> Vec<Finding> {
        let config = LossCurve::configure(config).unwrap();
        let out = OutputDir::new();
        out.write("train_log.csv", log);
        LossCurve::validate(&config, &out.run().build())
    }

    #[test]
    fn a_falling_curve_passes() {
        let log = "epoch,loss\n1,2.0\n2,1.2\n3,0.9\n";
        assert!(findings("min_drop = 0.5", log).is_empty());
        assert!(findings("", log).is_empty());
    }

    #[test]
    fn a_flat_curve_fails_and_says_by_how_much() {
        let found = findings("min_drop = 0.5", "epoch,loss\n1,2.0\n2,1.8\n");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].severity, Severity::Error);
        assert_eq!(
            found[0].message,
            "train_log.csv: loss went from 2 to 1.8 (-10%), wanted a fall of at least 50% (to 1 or below)"
        );
        let found = findings("min_drop = 0.5\nseverity = \"warning\"", "loss\n2\n2\n");
        assert_eq!(found[0].severity, Severity::Warning);
    }

    #[test]
    fn nan_infinity_and_blanks_are_findings() {
        for bad in ["NaN", "nan", "inf", "-inf", "", "n/a"] {
            let found = findings("", &format!("epoch,loss\n1,2.0\n2,{bad}\n3,0.5\n"));
            assert_eq!(found.len(), 1, "{bad}");
            assert!(
                found[0].message.contains(&format!("is `{bad}` on row 2")),
                "{}",
                found[0].message
            );
        }
    }

    #[test]
    fn a_missing_log_column_or_curve_is_a_finding() {
        let config = LossCurve::configure("").unwrap();
        let empty = OutputDir::new();
        let found = LossCurve::validate(&config, &empty.run().build());
        assert_eq!(
            found[0].message,
            "train_log.csv: missing, wanted a training log with a `loss` column"
        );
        let found = findings("column = \"val_loss\"", "epoch,loss\n1,2\n");
        assert_eq!(
            found[0].message,
            "train_log.csv: no `val_loss` column, the header is: epoch, loss"
        );
        let found = findings("", "epoch,loss\n1,2\n");
        assert!(found[0].message.contains("1 rows, wanted at least 2"));
    }

    #[test]
    fn bad_config_names_the_key() {
        for (text, key) in [
            ("min_drop = 1.5", "min_drop"),
            ("min_drop = \"half\"", "min_drop"),
            ("colum = \"loss\"", "colum"),
            ("severity = \"fatal\"", "severity"),
        ] {
            let e = LossCurve::configure(text).unwrap_err();
            assert_eq!(e.key.as_deref(), Some(key), "{text}");
        }
    }
}
