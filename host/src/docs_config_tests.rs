//! The configuration reference, `examples/nightjar.toml` (which the book
//! includes): its keys are the configuration's, both ways, each in its own
//! table.

use std::collections::{BTreeMap, BTreeSet};

use super::{read, root};
use crate::config::Config;

/// `examples/nightjar.toml`'s keys, set or commented out, by the table they
/// are under (`""` for the top level).
fn keys_by_table(text: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut table = String::new();
    for line in text.lines() {
        let l = line.trim_start_matches('#').trim();
        if let Some(h) = l.strip_prefix('[') {
            let name = h.trim_start_matches('[');
            if let Some(end) = name.find(']') {
                table = name[..end].trim().to_string();
                out.entry(table.clone()).or_default();
                continue;
            }
        }
        if let Some((key, _)) = l.split_once(" = ")
            && !key.is_empty()
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            out.entry(table.clone())
                .or_default()
                .insert(key.to_string());
        }
    }
    out
}

/// The file with every commented-out key line and table header put back
/// (`# key = value` -> `key = value`), as a reader who sets them all would.
fn uncommented(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let rest = line.strip_prefix("# ").or_else(|| line.strip_prefix('#'));
        let is_key = |r: &str| {
            r.split_once(" = ").is_some_and(|(k, _)| {
                !k.is_empty()
                    && k.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            })
        };
        let is_header =
            |r: &str| r.starts_with('[') && r.trim_end().ends_with(']') && !r.contains(' ');
        match rest {
            Some(r) if is_key(r) || is_header(r) => out.push_str(r),
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

/// Every key of `table` (a configuration as TOML) that `found` lacks in its
/// own table, by path.
fn lacking(
    table: &toml::Table,
    path: &str,
    found: &BTreeMap<String, BTreeSet<String>>,
    missing: &mut Vec<String>,
) {
    let join = |k: &str| {
        if path.is_empty() {
            k.to_string()
        } else {
            format!("{path}.{k}")
        }
    };
    let parent = |t: &str| {
        t.rsplit_once('.')
            .map_or(String::new(), |(p, _)| p.to_string())
    };
    // In its table, or (for one of a map's named entries, `[notifier.NAME]`)
    // in another entry's: one example entry shows every key.
    let shows = |k: &str| {
        found.get(path).is_some_and(|keys| keys.contains(k))
            || (!parent(path).is_empty()
                && !found.contains_key(&parent(path))
                && found
                    .iter()
                    .any(|(t, keys)| parent(t) == parent(path) && keys.contains(k)))
    };
    for (k, v) in table {
        match v {
            // Written inline (`projects = { vision = "..." }`): shown whole.
            _ if shows(k) => {}
            toml::Value::Table(sub) => {
                let here = join(k);
                let shown = found
                    .keys()
                    .any(|t| *t == here || t.starts_with(&format!("{here}.")));
                if !shown {
                    missing.push(format!("[{here}]"));
                }
                lacking(sub, &here, found, missing);
            }
            // An array of tables is shown by its `[[path.key]]` entries.
            toml::Value::Array(items) if items.iter().any(toml::Value::is_table) => {
                let here = join(k);
                if !found.contains_key(&here) {
                    missing.push(format!("[[{here}]]"));
                }
                if let Some(first) = items.iter().find_map(toml::Value::as_table) {
                    lacking(first, &here, found, missing);
                }
            }
            _ => {
                // Or as tables of its own (`[[tariff.windows]]`).
                if !found.contains_key(&join(k)) {
                    let table = if path.is_empty() {
                        "the top level".to_string()
                    } else {
                        format!("[{path}]")
                    };
                    missing.push(format!("{k} in {table}"));
                }
            }
        }
    }
}

#[test]
fn the_config_reference_has_every_key_of_the_configuration_in_its_own_table() {
    let text = read(&root().join("examples/nightjar.toml"));
    let found = keys_by_table(&text);
    // Every key the file shows, set or commented out, is a key of the
    // configuration, in that table, of the right type: put back, they parse.
    let filled: Config = toml::from_str(&uncommented(&text)).unwrap_or_else(|e| {
        panic!("examples/nightjar.toml with its commented-out keys put back does not parse: {e}")
    });
    // Every key of the configuration is in its own table of the file: the
    // defaults' keys, and the keys the put-back examples fill in (those
    // unset by default: [mail], each [notifier.NAME]'s, ...).
    let as_table = |c: &Config| -> toml::Table {
        toml::from_str(&toml::to_string(c).expect("to toml")).expect("a table")
    };
    let mut missing = Vec::new();
    lacking(&as_table(&Config::default()), "", &found, &mut missing);
    lacking(&as_table(&filled), "", &found, &mut missing);
    missing.sort();
    missing.dedup();
    assert!(
        missing.is_empty(),
        "examples/nightjar.toml lacks (set, or commented out with an example): {missing:?}"
    );
    // The check can fail: a key under the wrong table is not found.
    let moved = keys_by_table("[api]\ngrace = \"10s\"\n[sandbox]\n");
    let mut wrong = Vec::new();
    let sandbox: toml::Table = toml::from_str("[sandbox]\ngrace = \"10s\"\n").expect("toml");
    lacking(&sandbox, "", &moved, &mut wrong);
    assert_eq!(wrong, vec!["grace in [sandbox]".to_string()]);
}
