//! `[[validate.json]]`: numbers in a JSON file, read whole under a size cap.

use std::io::ErrorKind;

use nightjar_sdk::{Finding, Run, Severity};
use serde_json::Value;

use crate::compare::quote_non_finite;
use crate::config::JsonRule;
use crate::files::human;

/// The largest JSON file read (the validator runs under a memory cap).
pub const MAX_JSON: u64 = 16 << 20;

/// Reads the rule's file and judges each comparison: one finding per
/// comparison that fails, or one for a file that cannot be read.
pub fn check(rule: &JsonRule, severity: Severity, run: &Run, out: &mut Vec<Finding>) {
    let file = rule.file.as_str();
    let finding = |message: String| Finding::new(severity, file, format!("{file}: {message}"));
    let doc = match read(run, file) {
        Ok(doc) => doc,
        Err(why) => {
            let wanted: Vec<String> = rule.rules.iter().map(|c| c.to_string()).collect();
            out.push(finding(format!(
                "{why}; wanted a JSON file where {}",
                wanted.join(", ")
            )));
            return;
        }
    };
    for c in &rule.rules {
        if let Some(why) = c.judge(&doc) {
            out.push(finding(why));
        }
    }
}

/// The parsed file, or what keeps it from being read (for a message).
fn read(run: &Run, file: &str) -> Result<Value, String> {
    let bytes = run.read(file, MAX_JSON).map_err(|e| match e.kind() {
        ErrorKind::NotFound => "missing".to_string(),
        ErrorKind::FileTooLarge => format!(
            "too large to read ({e}), over the {} this validator reads",
            human(MAX_JSON)
        ),
        _ => format!("cannot be read ({e})"),
    })?;
    match serde_json::from_slice(&bytes) {
        Ok(doc) => Ok(doc),
        Err(e) => std::str::from_utf8(&bytes)
            .ok()
            .and_then(quote_non_finite)
            .and_then(|fixed| serde_json::from_str(&fixed).ok())
            .ok_or_else(|| format!("not valid JSON ({e})")),
    }
}
