//! The `[[validate]]` table of the `outputs` validator, read with serde: a
//! glob that is not one, a rule that cannot be read and an unknown key are
//! refused while parsing, so the SDK names the key; [`Config::check`] adds
//! what serde cannot see (a `min` above its `max`).

use std::fmt;
use std::path::{Component, Path};

use globset::{GlobBuilder, GlobMatcher};
use nightjar_sdk::config::Size;
use nightjar_sdk::{ConfigError, Severity};
use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};

use crate::compare::Comparison;

/// The whole table (its `plugin` key removed by the host).
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Globs that must each match at least one file, every match non-empty.
    pub required: Vec<Pattern>,
    /// The severity of `required`, and of every rule that does not say.
    pub severity: Option<Severity>,
    /// `[[validate.count]]`.
    pub count: Vec<CountRule>,
    /// `[[validate.size]]`.
    pub size: Vec<SizeRule>,
    /// `[[validate.json]]`.
    pub json: Vec<JsonRule>,
    /// `[[validate.csv]]`.
    pub csv: Vec<CsvRule>,
}

/// How many files a glob matches.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CountRule {
    /// The files counted.
    pub glob: Pattern,
    /// At least this many.
    #[serde(default)]
    pub min: Option<u64>,
    /// At most this many.
    #[serde(default)]
    pub max: Option<u64>,
    /// Default: the table's, else error.
    #[serde(default)]
    pub severity: Option<Severity>,
}

/// How large each file a glob matches is.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SizeRule {
    /// The files judged.
    pub glob: Pattern,
    /// Each at least this large.
    #[serde(default)]
    pub min: Option<Size>,
    /// Each at most this large.
    #[serde(default)]
    pub max: Option<Size>,
    /// Default: the table's, else error.
    #[serde(default)]
    pub severity: Option<Severity>,
}

/// Numbers in a JSON file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JsonRule {
    /// The file, relative to the output folder.
    pub file: RelPath,
    /// `KEY OP NUMBER`, each.
    #[serde(default)]
    pub rules: Vec<Comparison>,
    /// Default: the table's, else error.
    #[serde(default)]
    pub severity: Option<Severity>,
}

/// A CSV table's header and rows.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CsvRule {
    /// The file, relative to the output folder.
    pub file: RelPath,
    /// At least this many data rows (the header not counted).
    #[serde(default)]
    pub min_rows: Option<u64>,
    /// At most this many data rows.
    #[serde(default)]
    pub max_rows: Option<u64>,
    /// Columns the header must name.
    #[serde(default)]
    pub columns: Vec<String>,
    /// The field separator, one ASCII character (default `,`).
    #[serde(default)]
    pub delimiter: Option<Delimiter>,
    /// Default: the table's, else error.
    #[serde(default)]
    pub severity: Option<Severity>,
}

impl Config {
    /// The severity of a rule that says `own` (or nothing).
    pub fn severity_of(&self, own: Option<Severity>) -> Severity {
        own.or(self.severity).unwrap_or_default()
    }

    /// What serde cannot check: bounds in order, rules that check something.
    pub fn check(&self) -> Result<(), ConfigError> {
        for (i, r) in self.count.iter().enumerate() {
            bounds(&format!("count[{i}]"), r.min, r.max)?;
        }
        for (i, r) in self.size.iter().enumerate() {
            bounds(
                &format!("size[{i}]"),
                r.min.map(Size::bytes),
                r.max.map(Size::bytes),
            )?;
        }
        for (i, r) in self.csv.iter().enumerate() {
            if let (Some(lo), Some(hi)) = (r.min_rows, r.max_rows)
                && lo > hi
            {
                return Err(ConfigError::at(
                    format!("csv[{i}].min_rows"),
                    format!("{lo} is above `max_rows` ({hi})"),
                ));
            }
        }
        for (i, r) in self.json.iter().enumerate() {
            if r.rules.is_empty() {
                return Err(ConfigError::at(
                    format!("json[{i}].rules"),
                    "give at least one rule, like rules = [\"loss < 1.0\"]",
                ));
            }
        }
        Ok(())
    }
}

/// A rule's `min` and `max`: at least one, in order.
fn bounds(key: &str, min: Option<u64>, max: Option<u64>) -> Result<(), ConfigError> {
    match (min, max) {
        (None, None) => Err(ConfigError::at(
            key,
            "give `min`, `max` or both: the rule checks nothing",
        )),
        (Some(lo), Some(hi)) if lo > hi => Err(ConfigError::at(
            format!("{key}.min"),
            format!("{lo} is above `max` ({hi})"),
        )),
        _ => Ok(()),
    }
}

/// Implements `Deserialize` for a type written as one TOML string, refused
/// with `parse`'s message.
pub(crate) fn from_text<'de, D, T>(
    d: D,
    expecting: &'static str,
    parse: fn(&str) -> Result<T, String>,
) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
{
    struct Text<T>(&'static str, fn(&str) -> Result<T, String>);
    impl<T> Visitor<'_> for Text<T> {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str(self.0)
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
            (self.1)(v).map_err(E::custom)
        }
    }
    d.deserialize_str(Text(expecting, parse))
}

/// A glob over the relative paths of the run's files.
#[derive(Debug, Clone)]
pub struct Pattern {
    text: String,
    matcher: GlobMatcher,
}

impl Pattern {
    /// Reads a glob; `*` and `?` do not cross `/`.
    pub fn parse(text: &str) -> Result<Pattern, String> {
        relative(text)?;
        let glob = GlobBuilder::new(text)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|e| format!("`{text}` is not a glob: {}", e.kind()))?;
        Ok(Pattern {
            text: text.to_string(),
            matcher: glob.compile_matcher(),
        })
    }

    /// Whether the relative `path` matches.
    pub fn is_match(&self, path: &str) -> bool {
        self.matcher.is_match(path)
    }

    /// The glob as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl<'de> Deserialize<'de> for Pattern {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        from_text(d, "a glob like \"frames/*.png\"", Pattern::parse)
    }
}

/// A path relative to the output folder, without `..`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelPath(String);

impl RelPath {
    /// The path as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for RelPath {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        from_text(d, "a path like \"metrics.json\"", |t| {
            relative(t).map(|()| RelPath(t.to_string()))
        })
    }
}

/// Refuses a path that is empty, absolute or climbs out with `..`.
fn relative(text: &str) -> Result<(), String> {
    let plain = Path::new(text)
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if text.is_empty() || !plain {
        return Err(format!(
            "`{text}` is not a path relative to the output folder (like \"out/metrics.json\")"
        ));
    }
    Ok(())
}

/// A CSV field separator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delimiter(pub u8);

impl<'de> Deserialize<'de> for Delimiter {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        from_text(d, "one character like \",\" or \"\\t\"", |t| {
            match t.as_bytes() {
                [b] if b.is_ascii() && *b != b'"' && *b != b'\n' => Ok(Delimiter(*b)),
                _ => Err(format!(
                    "`{t}` is not one ASCII character other than a quote or newline"
                )),
            }
        })
    }
}
