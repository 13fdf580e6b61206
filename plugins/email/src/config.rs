//! The `email` notifier's configuration and its checks.

use std::collections::BTreeMap;

use nightjar_sdk::ConfigError;
use serde::Deserialize;

/// The placeholders a subject template may use.
pub const PLACEHOLDERS: &[&str] = &["title", "kind", "project", "task", "severity", "count"];

/// The subject when the config gives none.
pub const DEFAULT_SUBJECT: &str = "[nightjar] {title}";

/// The plugin's table (the host's own keys removed, secrets resolved).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Who every message goes to (unless `projects` names others).
    #[serde(deserialize_with = "nightjar_sdk::config::string_list")]
    pub to: Vec<String>,
    /// For events of these projects, these recipients instead of `to`.
    #[serde(default)]
    pub projects: BTreeMap<String, Vec<String>>,
    /// The subject, with `{title}`, `{kind}`, `{project}`, `{task}`,
    /// `{severity}` and `{count}` (events in the message) filled in.
    #[serde(default = "default_subject")]
    pub subject: String,
    /// Whether an HTML alternative goes with the plain text.
    #[serde(default = "yes")]
    pub html: bool,
    /// The host's resolved secrets (none are needed: the SMTP credentials
    /// are the host's).
    #[serde(default)]
    pub secrets: BTreeMap<String, String>,
}

fn default_subject() -> String {
    DEFAULT_SUBJECT.to_string()
}

fn yes() -> bool {
    true
}

impl Config {
    /// Checks recipients and the subject template; errors name the key.
    pub fn check(&self) -> Result<(), ConfigError> {
        if self.to.is_empty() {
            return Err(ConfigError::at(
                "to",
                "is empty; list who the mail goes to (each also on the notifier's `allow`)",
            ));
        }
        check_addresses("to", &self.to)?;
        for (project, to) in &self.projects {
            if to.is_empty() {
                return Err(ConfigError::at(
                    format!("projects.{project}"),
                    "is empty; list recipients, or leave the project out to use `to`",
                ));
            }
            check_addresses(&format!("projects.{project}"), to)?;
        }
        check_template(&self.subject)
    }

    /// The recipients of an event of `project`.
    pub fn recipients(&self, project: Option<&str>) -> &[String] {
        project
            .and_then(|p| self.projects.get(p))
            .unwrap_or(&self.to)
    }
}

fn check_addresses(key: &str, list: &[String]) -> Result<(), ConfigError> {
    for a in list {
        let parts: Vec<&str> = a.split('@').collect();
        let ok = parts.len() == 2
            && !parts[0].is_empty()
            && parts[1].contains('.')
            && !a
                .chars()
                .any(|c| c.is_whitespace() || c.is_control() || "<>,;".contains(c));
        if !ok {
            return Err(ConfigError::at(
                key,
                format!("`{a}` is not a mail address; write `alice@lab.example.edu`"),
            ));
        }
    }
    Ok(())
}

/// Every `{...}` in `t` is a known placeholder; `{{` and `}}` are braces.
fn check_template(t: &str) -> Result<(), ConfigError> {
    let mut rest = t;
    while let Some(i) = rest.find(['{', '}']) {
        let after = &rest[i + 1..];
        if rest[i..].starts_with("{{") || rest[i..].starts_with("}}") {
            rest = &rest[i + 2..];
            continue;
        }
        if rest[i..].starts_with('}') {
            return Err(ConfigError::at(
                "subject",
                "has a `}` that closes nothing (write `}}` for a brace)",
            ));
        }
        let Some(end) = after.find('}') else {
            return Err(ConfigError::at(
                "subject",
                "opens `{` without `}` (write `{{` for a brace)",
            ));
        };
        let name = &after[..end];
        if !PLACEHOLDERS.contains(&name) {
            return Err(ConfigError::at(
                "subject",
                format!(
                    "`{{{name}}}` is not a placeholder; use {}",
                    PLACEHOLDERS
                        .iter()
                        .map(|p| format!("{{{p}}}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        rest = &after[end + 1..];
    }
    Ok(())
}

/// `t` with each placeholder replaced by `value(name)`.
pub fn fill(t: &str, value: impl Fn(&str) -> String) -> String {
    let mut out = String::new();
    let mut rest = t;
    while let Some(i) = rest.find(['{', '}']) {
        out.push_str(&rest[..i]);
        if rest[i..].starts_with("{{") || rest[i..].starts_with("}}") {
            out.push_str(&rest[i..i + 1]);
            rest = &rest[i + 2..];
            continue;
        }
        let after = &rest[i + 1..];
        match after.find('}') {
            Some(end) if rest[i..].starts_with('{') => {
                out.push_str(&value(&after[..end]));
                rest = &after[end + 1..];
            }
            _ => {
                out.push_str(&rest[i..i + 1]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}
