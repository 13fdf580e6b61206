//! The mail: one event as itself, several as one summary; a plain-text
//! body and, when asked, an HTML one with the same content.

use std::collections::BTreeMap;

use nightjar_sdk::notifier::truncate;
use nightjar_sdk::{Event, Severity, mail};

use crate::config::{Config, fill};

/// Events of a summary given in full (text and facts); the rest by title.
pub const DETAILED: usize = 50;

/// The most bytes of one body (the host takes at most 1 MiB in all).
pub const MAX_BODY: usize = 256 << 10;

/// The mail for `events` (never empty), all of one recipient list `to`.
pub fn message(config: &Config, to: &[String], events: &[Event]) -> mail::Message {
    let first = &events[0];
    let title = match events {
        [one] => one.title.clone(),
        _ => summary_title(events),
    };
    let subject = fill(&config.subject, |name| match name {
        "title" => title.clone(),
        "kind" if events.len() == 1 => first.kind.clone(),
        "kind" => "summary".into(),
        "project" => common(events, |e| e.project.clone()).unwrap_or_default(),
        "task" => common(events, |e| e.task.map(|t| t.to_string())).unwrap_or_default(),
        "severity" => severity(worst(events)).into(),
        "count" => events.len().to_string(),
        _ => String::new(),
    });
    let text = truncate(&plain(events, &title), MAX_BODY);
    let m = mail::Message::new(to.to_vec(), subject, text, first.key.clone());
    if config.html {
        m.html(truncate(&html(events, &title), MAX_BODY))
    } else {
        m
    }
}

/// `nightjar: 12 events (task-failed ×10, task-succeeded ×2)`.
fn summary_title(events: &[Event]) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for e in events {
        *counts.entry(e.kind.as_str()).or_default() += 1;
    }
    let mut counts: Vec<(&str, usize)> = counts.into_iter().collect();
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let by_kind: Vec<String> = counts.iter().map(|(k, n)| format!("{k} ×{n}")).collect();
    format!("nightjar: {} events ({})", events.len(), by_kind.join(", "))
}

/// The value every event shares, if they all share one.
fn common(events: &[Event], f: impl Fn(&Event) -> Option<String>) -> Option<String> {
    let v = f(&events[0])?;
    events[1..]
        .iter()
        .all(|e| f(e).as_ref() == Some(&v))
        .then_some(v)
}

fn worst(events: &[Event]) -> Severity {
    let rank = |s: Severity| match s {
        Severity::Info => 0,
        Severity::Warning => 1,
        Severity::Error => 2,
    };
    events
        .iter()
        .map(|e| e.severity)
        .max_by_key(|s| rank(*s))
        .unwrap_or(Severity::Info)
}

fn severity(s: Severity) -> &'static str {
    match s {
        Severity::Info => "info",
        Severity::Warning => "warning",
        Severity::Error => "error",
    }
}

fn plain(events: &[Event], title: &str) -> String {
    let mut out = String::new();
    if events.len() > 1 {
        out.push_str(title);
        out.push_str("\n\n");
        for e in events {
            out.push_str(&format!("- {}\n", one_line(&e.title)));
        }
        out.push('\n');
    }
    for (i, e) in events.iter().enumerate().take(DETAILED) {
        if i > 0 || events.len() > 1 {
            out.push_str("\n----------------------------------------\n");
        }
        out.push_str(&one_line(&e.title));
        out.push_str("\n\n");
        out.push_str(e.text.trim_end());
        out.push('\n');
        if !e.fields.is_empty() {
            out.push('\n');
            for f in &e.fields {
                out.push_str(&format!("{}: {}\n", f.name, one_line(&f.value)));
            }
        }
    }
    if events.len() > DETAILED {
        out.push_str(&format!(
            "\n… {} more events, listed above by title.\n",
            events.len() - DETAILED
        ));
    }
    out
}

fn html(events: &[Event], title: &str) -> String {
    let mut out = String::from(
        "<!doctype html><html><head><meta charset=\"utf-8\"></head><body style=\"font-family:sans-serif\">",
    );
    out.push_str(&format!("<h2>{}</h2>", escape(title)));
    if events.len() > 1 {
        out.push_str("<ul>");
        for e in events {
            out.push_str(&format!(
                "<li style=\"color:{}\">{}</li>",
                colour(e.severity),
                escape(&one_line(&e.title))
            ));
        }
        out.push_str("</ul>");
    }
    for e in events.iter().take(DETAILED) {
        if events.len() > 1 {
            out.push_str(&format!("<hr><h3>{}</h3>", escape(&one_line(&e.title))));
        }
        out.push_str(&format!(
            "<pre style=\"white-space:pre-wrap\">{}</pre>",
            escape(e.text.trim_end())
        ));
        if !e.fields.is_empty() {
            out.push_str("<table>");
            for f in &e.fields {
                out.push_str(&format!(
                    "<tr><th align=\"left\">{}</th><td>{}</td></tr>",
                    escape(&f.name),
                    escape(&f.value)
                ));
            }
            out.push_str("</table>");
        }
    }
    if events.len() > DETAILED {
        out.push_str(&format!(
            "<p>… {} more events, listed above by title.</p>",
            events.len() - DETAILED
        ));
    }
    out.push_str("</body></html>");
    out
}

fn colour(s: Severity) -> &'static str {
    match s {
        Severity::Info => "#2e7d32",
        Severity::Warning => "#e65100",
        Severity::Error => "#c62828",
    }
}

/// `text` safe inside HTML text and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn one_line(text: &str) -> String {
    text.trim().replace(['\r', '\n'], " ")
}
