//! Task files: one schema, written in TOML or YAML.
//!
//! A file holds one task (its fields at the top level) or several (`[[task]]`
//! in TOML, `tasks:` in YAML). Unknown keys and wrong types are errors that
//! name the file, line and key.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow};
use serde::Deserialize;
use serde::de::{self, Deserializer, SeqAccess, Visitor};

use super::model::{CommandSpec, Priority, Resources, RetryPolicy};

/// One task as written by a user, before resolution.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskDef {
    /// Name (defaults to the file's stem or the command's program).
    pub name: Option<String>,
    /// Project (defaults to `default`).
    pub project: Option<String>,
    /// Shell string or argv list.
    pub command: CommandDef,
    /// Working directory, relative to the task file's folder.
    pub workdir: Option<PathBuf>,
    /// Extra environment variables.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Input files, relative to the workdir; they must exist at submit.
    #[serde(default)]
    pub inputs: Vec<PathBuf>,
    /// Output folder (relative to the workdir), may use variables.
    pub output: Option<String>,
    /// low, normal, high or urgent.
    #[serde(default)]
    pub priority: Priority,
    /// What the task needs.
    #[serde(default)]
    pub resources: Resources,
    /// Tasks that must succeed first (names in this file or task ids).
    #[serde(default)]
    pub after: Vec<DepRef>,
    /// Tasks that must have ended first, whatever their outcome.
    #[serde(default)]
    pub after_any: Vec<DepRef>,
    /// Recurring schedule.
    pub schedule: Option<String>,
    /// Retry settings.
    #[serde(default)]
    pub retry: RetryPolicy,
    /// Parameter grid: every combination becomes a member task.
    #[serde(default)]
    pub sweep: BTreeMap<String, Vec<Scalar>>,
    /// Submit held.
    #[serde(default)]
    pub hold: bool,
    /// A policy may stop it (SIGTERM, grace) and queue it again; the attempt is not counted.
    #[serde(default)]
    pub preemptible: bool,
    /// Result validators (`[[validate]]`): `plugin` plus the validator's own keys.
    #[serde(default)]
    pub validate: Vec<toml::Table>,
    /// Where it saves checkpoints; a later attempt resumes from the newest complete one.
    #[serde(default)]
    pub checkpoint: Option<super::checkpoint::CheckpointDef>,
    /// The seed each run gets as `NIGHTJAR_SEED` (default: one per run, generated and recorded).
    #[serde(default)]
    pub seed: Option<u64>,
    /// Complete the task from an earlier successful run with the same cache key.
    #[serde(default)]
    pub cache: bool,
    /// The venv, conda environment or container the command runs in (`[environment]`).
    #[serde(default)]
    pub environment: Option<super::environment::EnvironmentDef>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ManyTasks {
    #[serde(alias = "tasks")]
    task: Vec<TaskDef>,
}

/// A command as written: a shell string or a list of arguments.
#[derive(Debug, Clone)]
pub struct CommandDef(pub CommandSpec);

impl<'de> Deserialize<'de> for CommandDef {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = CommandDef;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a shell command string or a list of arguments")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<CommandDef, E> {
                if s.trim().is_empty() {
                    return Err(E::custom("command is empty"));
                }
                Ok(CommandDef(CommandSpec::Shell(s.to_string())))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<CommandDef, A::Error> {
                let mut v = Vec::new();
                while let Some(s) = seq.next_element::<String>()? {
                    v.push(s);
                }
                if v.is_empty() {
                    return Err(de::Error::custom("command list is empty"));
                }
                Ok(CommandDef(CommandSpec::Argv(v)))
            }
        }
        d.deserialize_any(V)
    }
}

/// A dependency as written: a name in the same file, or a task id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DepRef {
    /// A task of the same submission, by name.
    Name(String),
    /// A task already queued, by id.
    Id(i64),
}

impl<'de> Deserialize<'de> for DepRef {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = DepRef;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a task name or a task id")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<DepRef, E> {
                Ok(DepRef::parse(s))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<DepRef, E> {
                Ok(DepRef::Id(n))
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<DepRef, E> {
                i64::try_from(n)
                    .map(DepRef::Id)
                    .map_err(|_| E::custom("task id too large"))
            }
        }
        d.deserialize_any(V)
    }
}

impl DepRef {
    /// `12` is an id, anything else a name.
    pub fn parse(s: &str) -> DepRef {
        match s.parse::<i64>() {
            Ok(n) => DepRef::Id(n),
            Err(_) => DepRef::Name(s.to_string()),
        }
    }
}

/// A sweep value: any TOML/YAML scalar, kept as the text it substitutes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scalar(pub String);

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Scalar;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string, number or boolean")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Scalar, E> {
                Ok(Scalar(s.to_string()))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Scalar, E> {
                Ok(Scalar(n.to_string()))
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Scalar, E> {
                Ok(Scalar(n.to_string()))
            }
            fn visit_f64<E: de::Error>(self, n: f64) -> Result<Scalar, E> {
                Ok(Scalar(n.to_string()))
            }
            fn visit_bool<E: de::Error>(self, b: bool) -> Result<Scalar, E> {
                Ok(Scalar(b.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

/// The file formats accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `.toml`
    Toml,
    /// `.yaml` / `.yml`
    Yaml,
}

impl Format {
    /// Picks the format from the file name (TOML unless it ends in .yaml/.yml).
    pub fn of(path: &Path) -> Format {
        match path.extension().and_then(|e| e.to_str()) {
            Some("yaml" | "yml") => Format::Yaml,
            _ => Format::Toml,
        }
    }
}

/// Reads and parses a task file.
pub fn read(path: &Path) -> Result<Vec<TaskDef>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read task file {}", path.display()))?;
    parse(&text, Format::of(path)).map_err(|e| anyhow!("task file {}: {e}", path.display()))
}

/// Parses task-file text.
pub fn parse(text: &str, format: Format) -> Result<Vec<TaskDef>, String> {
    match format {
        Format::Toml => {
            let table: toml::Table = toml::from_str(text).map_err(|e| e.to_string())?;
            if table.contains_key("task") || table.contains_key("tasks") {
                let many: ManyTasks = toml::from_str(text).map_err(|e| e.to_string())?;
                Ok(many.task)
            } else {
                toml::from_str::<TaskDef>(text)
                    .map(|t| vec![t])
                    .map_err(|e| e.to_string())
            }
        }
        Format::Yaml => {
            yaml_budget(text)?;
            let value: serde_norway::Value =
                serde_norway::from_str(text).map_err(|e| e.to_string())?;
            let many = value
                .as_mapping()
                .is_some_and(|m| m.contains_key("task") || m.contains_key("tasks"));
            if many {
                let many: ManyTasks = serde_norway::from_str(text).map_err(|e| e.to_string())?;
                Ok(many.task)
            } else {
                serde_norway::from_str::<TaskDef>(text)
                    .map(|t| vec![t])
                    .map_err(|e| e.to_string())
            }
        }
    }
}

/// Most values a YAML task file may expand to: its length in bytes plus
/// 100,000. A file without aliases never comes near it; a file of nested
/// aliases (`*name` repeats the anchored content) is refused after that many
/// values instead of growing to gigabytes.
fn yaml_budget(text: &str) -> Result<(), String> {
    use std::cell::Cell;
    struct Count<'a> {
        left: &'a Cell<usize>,
    }
    impl Count<'_> {
        fn tick<E: de::Error>(&self) -> Result<(), E> {
            match self.left.get().checked_sub(1) {
                Some(n) => {
                    self.left.set(n);
                    Ok(())
                }
                None => Err(E::custom(EXPANDS)),
            }
        }
    }
    const EXPANDS: &str = "the YAML expands to too many values (nested aliases `*name`?)";
    impl<'de> de::DeserializeSeed<'de> for Count<'_> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_any(self)
        }
    }
    impl<'de> Visitor<'de> for Count<'_> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("any YAML value")
        }
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
            self.tick()
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
            self.tick()
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
            self.tick()
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
            self.tick()
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
            self.tick()
        }
        fn visit_unit<E: de::Error>(self) -> Result<(), E> {
            self.tick()
        }
        fn visit_none<E: de::Error>(self) -> Result<(), E> {
            self.tick()
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            self.tick()?;
            d.deserialize_any(self)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            self.tick()?;
            while seq.next_element_seed(Count { left: self.left })?.is_some() {}
            Ok(())
        }
        fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            self.tick()?;
            while map.next_key_seed(Count { left: self.left })?.is_some() {
                map.next_value_seed(Count { left: self.left })?;
            }
            Ok(())
        }
        fn visit_enum<A: de::EnumAccess<'de>>(self, data: A) -> Result<(), A::Error> {
            use de::VariantAccess;
            self.tick()?;
            let ((), v) = data.variant_seed(Count { left: self.left })?;
            v.newtype_variant_seed(Count { left: self.left })
        }
    }
    let budget = text.len().saturating_add(100_000);
    let left = Cell::new(budget);
    de::DeserializeSeed::deserialize(
        Count { left: &left },
        serde_norway::Deserializer::from_str(text),
    )
    .map_err(|e| {
        if e.to_string().contains(EXPANDS) {
            format!(
                "the YAML expands to more than {budget} values (aliases `*name` repeat their anchor's content): refused; write the values out instead of nesting aliases"
            )
        } else {
            e.to_string()
        }
    })
}

#[cfg(test)]
#[path = "file_tests.rs"]
mod tests;
