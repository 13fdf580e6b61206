//! `nightjar diff RUN1 RUN2`: what differs between two runs. The daemon
//! answers [`Diff`] with both runs' start manifests and output manifests
//! ([`RunPair`]); [`diff`] compares them here, a pure function, section by
//! section: code, command, workdir, env, inputs, python, gpus, system,
//! policies, outputs.
//!
//! Values are compared as stored: an env value redacted at capture reads
//! `<redacted>` on both sides (a changed secret is not seen, and never
//! shown). What is new for every run is not a difference: the run and task
//! ids and the attempt (`NIGHTJAR_RUN_ID`, `NIGHTJAR_TASK_ID`,
//! `NIGHTJAR_ATTEMPT`), and the run's own output and scratch folders, which
//! read `${OUTPUT_PATH}` and `${SCRATCH}` in the compared command and env.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::manifest::Manifest;
use super::outputs::OutputManifest;
use sections::{Normal, code, gpus, inputs, outputs, python, system};

/// `diff RUN1 RUN2`: both runs' manifests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Diff {
    /// The first run's id.
    pub a: i64,
    /// The second run's id.
    pub b: i64,
}

/// The reply to [`Diff`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RunPair {
    /// The first run.
    pub a: RunRecord,
    /// The second run.
    pub b: RunRecord,
}

/// What one run recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RunRecord {
    /// The run.
    pub run: i64,
    /// Its task.
    pub task: i64,
    /// `running` or `finished`.
    pub state: String,
    /// Its manifest at start.
    pub start: Manifest,
    /// Its output manifest (absent: it did not succeed, had no output
    /// folder, has not ended, or ended before nightjar 0.3).
    pub outputs: Option<OutputManifest>,
}

/// A part of what a run is made of, in the order the table prints them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Section {
    /// The workdir's git state.
    Code,
    /// The command as executed.
    Command,
    /// The working directory.
    Workdir,
    /// The environment the run got.
    Env,
    /// The inputs' hashes.
    Inputs,
    /// The Python environment.
    Python,
    /// Driver, CUDA, GPU models.
    Gpus,
    /// Host, kernel, nightjar release.
    System,
    /// The policy chain's plugins.
    Policies,
    /// The output files' hashes.
    Outputs,
}

impl Section {
    /// Every section, in table order.
    pub const ALL: [Section; 10] = [
        Section::Code,
        Section::Command,
        Section::Workdir,
        Section::Env,
        Section::Inputs,
        Section::Python,
        Section::Gpus,
        Section::System,
        Section::Policies,
        Section::Outputs,
    ];

    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            Section::Code => "code",
            Section::Command => "command",
            Section::Workdir => "workdir",
            Section::Env => "env",
            Section::Inputs => "inputs",
            Section::Python => "python",
            Section::Gpus => "gpus",
            Section::System => "system",
            Section::Policies => "policies",
            Section::Outputs => "outputs",
        }
    }
}

/// How one item differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    /// Both runs have it, with different values.
    Changed,
    /// Only the second run has it.
    Added,
    /// Only the first run has it.
    Removed,
}

/// One difference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Change {
    /// Where.
    pub section: Section,
    /// What: a field (`commit`), an env name, a file's path, a package.
    pub what: String,
    /// Changed, added or removed.
    pub change: ChangeKind,
    /// The first run's value (absent: it has none).
    pub a: Option<String>,
    /// The second run's value.
    pub b: Option<String>,
}

/// Which run is which.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Side {
    /// The run.
    pub run: i64,
    /// Its task.
    pub task: i64,
}

/// Everything that differs between two runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RunDiff {
    /// The first run.
    pub a: Side,
    /// The second run.
    pub b: Side,
    /// Each difference, by section.
    pub changes: Vec<Change>,
    /// The sections without a difference.
    pub same: Vec<Section>,
    /// What could not be compared, and why.
    pub notes: Vec<String>,
}

/// Compares two runs.
pub fn diff(a: &RunRecord, b: &RunRecord) -> RunDiff {
    let mut d = Differ::default();
    let (ma, mb) = (&a.start, &b.start);
    code(&mut d, &ma.git, &mb.git);
    let (na, nb) = (Normal::of(ma), Normal::of(mb));
    d.field(Section::Command, "argv", Some(na.argv()), Some(nb.argv()));
    d.field(
        Section::Workdir,
        "path",
        Some(ma.workdir.display().to_string()),
        Some(mb.workdir.display().to_string()),
    );
    d.map(Section::Env, &na.env, &nb.env);
    inputs(&mut d, &ma.inputs, &mb.inputs);
    python(&mut d, ma, mb);
    gpus(&mut d, ma, mb);
    system(&mut d, ma, mb);
    let policies = |m: &Manifest| -> BTreeMap<String, String> {
        m.policies
            .iter()
            .map(|p| {
                let v = p.sha256.clone().unwrap_or_else(|| p.source.clone());
                (p.name.clone(), v)
            })
            .collect()
    };
    d.map(Section::Policies, &policies(ma), &policies(mb));
    outputs(&mut d, a, b);
    let touched: BTreeSet<Section> = d.changes.iter().map(|c| c.section).collect();
    let same = Section::ALL
        .into_iter()
        .filter(|s| !touched.contains(s) && !d.uncompared.contains(s))
        .collect();
    RunDiff {
        a: Side {
            run: a.run,
            task: a.task,
        },
        b: Side {
            run: b.run,
            task: b.task,
        },
        changes: d.changes,
        same,
        notes: d.notes,
    }
}

#[derive(Default)]
struct Differ {
    changes: Vec<Change>,
    notes: Vec<String>,
    /// Sections that could not be compared: neither same nor different.
    uncompared: BTreeSet<Section>,
}

impl Differ {
    /// One value: a row when they differ.
    fn field(&mut self, section: Section, what: &str, a: Option<String>, b: Option<String>) {
        if a == b {
            return;
        }
        let change = match (&a, &b) {
            (None, Some(_)) => ChangeKind::Added,
            (Some(_), None) => ChangeKind::Removed,
            _ => ChangeKind::Changed,
        };
        self.changes.push(Change {
            section,
            what: what.to_string(),
            change,
            a,
            b,
        });
    }

    /// Keyed values: a row per key added, removed or changed.
    fn map(
        &mut self,
        section: Section,
        a: &BTreeMap<String, String>,
        b: &BTreeMap<String, String>,
    ) {
        let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
        for k in keys {
            self.field(section, k, a.get(k).cloned(), b.get(k).cloned());
        }
    }
}

/// `text` with every run of 40 or more hex digits (a hash, a commit)
/// cut to its first 12, for tables.
pub fn shorten(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut run = String::new();
    let flush = |run: &mut String, out: &mut String| {
        if run.len() >= 40 {
            out.push_str(&run[..12]);
        } else {
            out.push_str(run);
        }
        run.clear();
    };
    for c in text.chars() {
        if c.is_ascii_hexdigit() {
            run.push(c);
        } else {
            flush(&mut run, &mut out);
            out.push(c);
        }
    }
    flush(&mut run, &mut out);
    out
}

#[path = "diff_sections.rs"]
mod sections;

#[cfg(test)]
#[path = "diff_tests.rs"]
mod tests;
