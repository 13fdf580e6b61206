//! Which key a TOML error is about: the error's span, found in the spanned
//! parse tree of the same text.

use std::ops::Range;

use toml::de::{DeTable, DeValue};

use crate::ConfigError;

/// A [`ConfigError`] for a TOML error in `text`: the key the error's span
/// falls on, and serde's message in TOML's words.
pub(super) fn error(text: &str, e: &toml::de::Error) -> ConfigError {
    let message = e
        .message()
        .trim_end()
        .replace("unknown field", "unknown key")
        .replace("missing field", "missing key");
    let Some(span) = e.span() else {
        return ConfigError::whole(message);
    };
    // A key missing from the top-level table comes with an empty span at
    // the start of the text, which names no key: the missing one is the key.
    if span.is_empty()
        && span.start == 0
        && let Some(missing) = message
            .strip_prefix("missing key `")
            .and_then(|rest| rest.split_once('`'))
            .map(|(name, _)| segment(name, true))
    {
        return ConfigError::at(missing, message);
    }
    let key = DeTable::parse(text)
        .ok()
        .and_then(|root| {
            let mut path = Vec::new();
            in_table(root.get_ref(), &span, &mut path).then(|| path.concat())
        })
        .or_else(|| key_on_line(text, span.start));
    match key {
        Some(key) => ConfigError::at(key, message),
        // Not even a key to name: say where, in the text the host handed over.
        None => {
            let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
            ConfigError::whole(format!("{message} (at line {line} of the config)"))
        }
    }
}

/// Whether `span` lies on a key or value of `table`; if so, `path` ends with
/// the deepest such key.
fn in_table(table: &DeTable, span: &Range<usize>, path: &mut Vec<String>) -> bool {
    for (k, v) in table {
        path.push(segment(k.get_ref(), path.is_empty()));
        // The value first: a table's header spans its own key.
        if in_value(v.get_ref(), &v.span(), span, path) || overlaps(&k.span(), span) {
            return true;
        }
        path.pop();
    }
    false
}

/// Whether `span` lies in `value` (whose own span is `at`), with `path`
/// extended by the keys and indices inside it.
fn in_value(
    value: &DeValue,
    at: &Range<usize>,
    span: &Range<usize>,
    path: &mut Vec<String>,
) -> bool {
    match value {
        DeValue::Table(t) if in_table(t, span, path) => return true,
        // An error spanning a whole list of several (one raised after an
        // element was read, on its way out) cannot say which element: it
        // names the list, not its first element.
        DeValue::Array(a) if a.len() > 1 && span.start <= at.start && at.end <= span.end => {}
        DeValue::Array(a) => {
            for (i, item) in a.iter().enumerate() {
                path.push(format!("[{i}]"));
                if in_value(item.get_ref(), &item.span(), span, path) {
                    return true;
                }
                path.pop();
            }
        }
        _ => {}
    }
    overlaps(at, span)
}

/// `key` as one step of a dotted path, quoted when TOML needs it.
fn segment(key: &str, first: bool) -> String {
    let bare = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    let key = if bare {
        key.to_string()
    } else {
        format!("{key:?}")
    };
    if first { key } else { format!(".{key}") }
}

/// Whether two spans share a byte (an empty `span` counts at its start).
fn overlaps(a: &Range<usize>, span: &Range<usize>) -> bool {
    let end = span.end.max(span.start + 1);
    a.start < end && span.start < a.end.max(a.start + 1)
}

/// For text that does not parse: the key written on the line at `at`.
fn key_on_line(text: &str, at: usize) -> Option<String> {
    let start = text[..at.min(text.len())].rfind('\n').map_or(0, |i| i + 1);
    let line = text[start..].lines().next()?.trim();
    let key = line.split_once('=')?.0.trim().trim_matches('"');
    (!key.is_empty() && !line.starts_with('[')).then(|| key.to_string())
}
