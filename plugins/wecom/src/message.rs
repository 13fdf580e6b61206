//! The message: one event as itself, several as a summary, fitted to
//! WeCom's byte limits, with its mentions.

use std::collections::BTreeMap;

use nightjar_sdk::notifier::truncate;
use nightjar_sdk::{Event, Severity};
use serde_json::{Value, json};

use crate::config::{Config, Format, Who};

/// The most bytes one event's title takes in a summary line.
pub const SUMMARY_TITLE_BYTES: usize = 240;

/// The most bytes one event's title takes in a markdown message (escaped),
/// so the bold and colour around it are never cut.
pub const TITLE_BYTES: usize = 1024;

/// The JSON body of the one message that carries `events` (never empty).
pub fn body(config: &Config, events: &[Event]) -> Value {
    let mentions = config.mentions(events);
    match config.format {
        Format::Text => {
            let limit = Format::Text.limit();
            let content = fit(&content(Format::Text, events, limit), limit);
            let mut text = json!({ "content": content });
            let users: Vec<&str> = mentions
                .iter()
                .filter_map(|w| match w {
                    Who::User(u) => Some(*u),
                    Who::All => Some("@all"),
                    Who::Mobile(_) => None,
                })
                .collect();
            let mobiles: Vec<&str> = mentions
                .iter()
                .filter_map(|w| match w {
                    Who::Mobile(m) => Some(*m),
                    _ => None,
                })
                .collect();
            if !users.is_empty() {
                text["mentioned_list"] = json!(users);
            }
            if !mobiles.is_empty() {
                text["mentioned_mobile_list"] = json!(mobiles);
            }
            json!({ "msgtype": "text", "text": text })
        }
        Format::Markdown => {
            let limit = Format::Markdown.limit();
            // Mentions close the message and survive truncation; they take
            // at most half of it (the check refuses anything but userids).
            let mut suffix = String::new();
            for w in &mentions {
                if let Who::User(u) = w {
                    let tag = format!(" <@{u}>");
                    if suffix.len() + tag.len() + 1 > limit / 2 {
                        break;
                    }
                    suffix.push_str(&tag);
                }
            }
            if !suffix.is_empty() {
                suffix.replace_range(0..1, "\n");
            }
            let budget = limit - suffix.len();
            let mut content = fit(&content(Format::Markdown, events, budget), budget);
            content.push_str(&suffix);
            json!({ "msgtype": "markdown", "markdown": { "content": content } })
        }
    }
}

/// `text` cut to `limit` bytes at a character boundary, ending with `…`
/// when cut.
fn fit(text: &str, limit: usize) -> String {
    truncate(text, limit)
}

/// The content before fitting: one event, or a summary of several that
/// fits in `limit` bytes.
fn content(format: Format, events: &[Event], limit: usize) -> String {
    match events {
        [one] => single(format, one),
        _ => summary(format, events, limit),
    }
}

/// Host text as it goes into the message: made inert in markdown.
fn host_text(format: Format, text: &str) -> String {
    match format {
        Format::Markdown => crate::escape::markdown(text),
        Format::Text => text.to_string(),
    }
}

/// One event: its title (coloured by severity in markdown), then its text.
fn single(format: Format, e: &Event) -> String {
    let title = host_text(format, &one_line(&e.title));
    let head = match format {
        Format::Markdown => {
            let title = truncate(&title, TITLE_BYTES);
            coloured(e.severity, &format!("**{title}**"))
        }
        Format::Text => title,
    };
    let text = host_text(format, e.text.trim_end());
    if text.is_empty() {
        head
    } else {
        format!("{head}\n{text}")
    }
}

/// Several events: a head with their number and the count of each kind,
/// then one line per event, oldest first, as many as fit in `limit` bytes;
/// the rest are counted on a last `… +N` line, so none goes unmentioned.
fn summary(format: Format, events: &[Event], limit: usize) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for e in events {
        *counts.entry(e.kind.as_str()).or_default() += 1;
    }
    let mut counts: Vec<(&str, usize)> = counts.into_iter().collect();
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let by_kind: Vec<String> = counts
        .iter()
        .map(|(k, n)| format!("{} ×{n}", host_text(format, k)))
        .collect();
    let n = events.len();
    let mut out = match format {
        Format::Markdown => format!("**nightjar** ({n})\n> {}", by_kind.join(" · ")),
        Format::Text => format!("nightjar ({n})\n{}", by_kind.join(" · ")),
    };
    let overflow = |rest: usize| format!("\n… +{rest}");
    let mut shown = 0;
    for (i, e) in events.iter().enumerate() {
        let title = truncate(&host_text(format, &one_line(&e.title)), SUMMARY_TITLE_BYTES);
        let line = match format {
            Format::Markdown => format!("\n- {}", coloured(e.severity, &title)),
            Format::Text => format!("\n- {title}"),
        };
        let reserve = if i + 1 < n { overflow(n).len() } else { 0 };
        if out.len() + line.len() + reserve > limit {
            break;
        }
        out.push_str(&line);
        shown += 1;
    }
    if shown < n {
        out.push_str(&overflow(n - shown));
    }
    out
}

/// `text` on one line: line breaks become spaces.
fn one_line(text: &str) -> String {
    text.trim().replace(['\r', '\n'], " ")
}

/// Markdown `text` in WeCom's colour for `severity`: green for info,
/// orange-red for warnings and errors.
fn coloured(severity: Severity, text: &str) -> String {
    let colour = match severity {
        Severity::Info => "info",
        Severity::Warning | Severity::Error => "warning",
    };
    format!("<font color=\"{colour}\">{text}</font>")
}
