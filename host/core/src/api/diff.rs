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

use super::manifest::{GitRecord, InputRecord, Manifest};
use super::outputs::OutputManifest;

/// `diff RUN1 RUN2`: both runs' manifests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diff {
    /// The first run's id.
    pub a: i64,
    /// The second run's id.
    pub b: i64,
}

/// The reply to [`Diff`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunPair {
    /// The first run.
    pub a: RunRecord,
    /// The second run.
    pub b: RunRecord,
}

/// What one run recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// The inputs' digests.
    Inputs,
    /// The Python environment.
    Python,
    /// Driver, CUDA, GPU models.
    Gpus,
    /// Host, kernel, nightjar release.
    System,
    /// The policy chain's plugins.
    Policies,
    /// The output files' digests.
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
pub struct Side {
    /// The run.
    pub run: i64,
    /// Its task.
    pub task: i64,
}

/// Everything that differs between two runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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

/// Env names whose values are new for every run: not differences.
const PER_RUN: [&str; 3] = ["NIGHTJAR_RUN_ID", "NIGHTJAR_TASK_ID", "NIGHTJAR_ATTEMPT"];

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

fn code(d: &mut Differ, a: &GitRecord, b: &GitRecord) {
    let s = Section::Code;
    let flag = |v: Option<bool>| v.map(|v| if v { "dirty" } else { "clean" }.to_string());
    d.field(s, "commit", a.commit.clone(), b.commit.clone());
    d.field(s, "branch", a.branch.clone(), b.branch.clone());
    d.field(s, "dirty", flag(a.dirty), flag(b.dirty));
    d.field(
        s,
        "diff sha256",
        a.diff_sha256.clone(),
        b.diff_sha256.clone(),
    );
    d.field(s, "remote", a.remote.clone(), b.remote.clone());
}

/// A run's command and env with its per-run values put back as variables.
struct Normal {
    argv: Vec<String>,
    env: BTreeMap<String, String>,
}

impl Normal {
    fn of(m: &Manifest) -> Normal {
        // Only absolute folders: a short word would be replaced everywhere.
        let mut own: Vec<(&str, &str)> = [
            ("NIGHTJAR_OUTPUT_PATH", "${OUTPUT_PATH}"),
            ("NIGHTJAR_SCRATCH", "${SCRATCH}"),
        ]
        .into_iter()
        .filter_map(|(k, var)| {
            let v = m.env.get(k)?;
            (v.starts_with('/') && v.len() > 1).then_some((v.as_str(), var))
        })
        .collect();
        own.sort_by_key(|(v, _)| std::cmp::Reverse(v.len()));
        let put_back = |s: &str| {
            own.iter()
                .fold(s.to_string(), |s, (value, var)| s.replace(value, var))
        };
        Normal {
            argv: m.command.iter().map(|a| put_back(a)).collect(),
            env: m
                .env
                .iter()
                .filter(|(k, _)| !PER_RUN.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), put_back(v)))
                .collect(),
        }
    }

    fn argv(&self) -> String {
        self.argv.join(" ")
    }
}

/// An input as compared: its digest, else what it is.
fn input_value(r: &InputRecord) -> String {
    r.sha256.clone().unwrap_or_else(|| format!("<{}>", r.kind))
}

fn inputs(d: &mut Differ, a: &[InputRecord], b: &[InputRecord]) {
    let by_path = |rs: &[InputRecord]| -> BTreeMap<String, (String, Option<u64>)> {
        rs.iter()
            .map(|r| (r.path.display().to_string(), (input_value(r), r.size)))
            .collect()
    };
    let (a, b) = (by_path(a), by_path(b));
    let digests = |m: &BTreeMap<String, (String, Option<u64>)>| {
        m.iter().map(|(k, v)| (k.clone(), v.0.clone())).collect()
    };
    d.map(Section::Inputs, &digests(&a), &digests(&b));
    // The same digest (or none, for a folder or a FIFO) but another size.
    for (path, (va, sa)) in &a {
        if let Some((vb, sb)) = b.get(path)
            && va == vb
            && sa != sb
        {
            let size = |s: &Option<u64>| s.map(|s| format!("{s} B"));
            d.field(Section::Inputs, &format!("{path} size"), size(sa), size(sb));
        }
    }
}

/// A package's name in a `pip freeze` line (`name==1.0`, `name @ url`) or
/// a conda export line (`name=1.0=build`), lower case.
fn package_name(line: &str) -> String {
    let end = line
        .find(['=', '@', ' ', '<', '>', '~', '!'])
        .unwrap_or(line.len());
    line[..end].trim().to_ascii_lowercase()
}

fn python(d: &mut Differ, a: &Manifest, b: &Manifest) {
    let s = Section::Python;
    let kind = |m: &Manifest| m.python.as_ref().map(|p| p.kind.clone());
    let prefix = |m: &Manifest| m.python.as_ref().map(|p| p.prefix.display().to_string());
    d.field(s, "environment", kind(a), kind(b));
    d.field(s, "prefix", prefix(a), prefix(b));
    let (Some(pa), Some(pb)) = (&a.python, &b.python) else {
        return;
    };
    let packages = |p: &super::manifest::PythonEnv| -> BTreeMap<String, String> {
        p.packages
            .iter()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
            .map(|l| (package_name(l), l.clone()))
            .collect()
    };
    d.map(s, &packages(pa), &packages(pb));
    for (run, p) in [("first", pa), ("second", pb)] {
        if let Some(n) = &p.note {
            d.notes.push(format!(
                "python: the {run} run's package list is partial: {n}"
            ));
        }
    }
}

fn gpus(d: &mut Differ, a: &Manifest, b: &Manifest) {
    let s = Section::Gpus;
    let driver = |m: &Manifest| m.gpus.as_ref().and_then(|g| g.driver.clone());
    let cuda = |m: &Manifest| m.gpus.as_ref().and_then(|g| g.cuda.clone());
    let models = |m: &Manifest| {
        let g = m.gpus.as_ref()?;
        let names: Vec<String> = g
            .devices
            .iter()
            .map(|d| d.name.clone().unwrap_or_else(|| format!("GPU {}", d.index)))
            .collect();
        Some(if names.is_empty() {
            "none".to_string()
        } else {
            names.join(", ")
        })
    };
    d.field(s, "driver", driver(a), driver(b));
    d.field(s, "cuda", cuda(a), cuda(b));
    d.field(s, "models", models(a), models(b));
}

fn system(d: &mut Differ, a: &Manifest, b: &Manifest) {
    let s = Section::System;
    let get = |m: &Manifest, f: fn(&super::manifest::SystemInfo) -> &String| {
        m.system.as_ref().map(|i| f(i).clone())
    };
    d.field(s, "host", get(a, |i| &i.hostname), get(b, |i| &i.hostname));
    d.field(s, "kernel", get(a, |i| &i.kernel), get(b, |i| &i.kernel));
    d.field(
        s,
        "nightjar",
        get(a, |i| &i.nightjar),
        get(b, |i| &i.nightjar),
    );
}

fn outputs(d: &mut Differ, a: &RunRecord, b: &RunRecord) {
    let s = Section::Outputs;
    let missing = |r: &RunRecord| {
        format!(
            "run {} has no output manifest (it {}, or had no output folder)",
            r.run,
            if r.state == "running" {
                "has not ended"
            } else {
                "did not succeed"
            }
        )
    };
    let count = |m: &OutputManifest| format!("{} file(s)", m.files.len());
    let (oa, ob) = match (&a.outputs, &b.outputs) {
        (Some(oa), Some(ob)) => (oa, ob),
        (None, None) => {
            d.notes.push(format!(
                "outputs not compared: {}; {}",
                missing(a),
                missing(b)
            ));
            d.uncompared.insert(s);
            return;
        }
        (oa, ob) => {
            let r = if oa.is_none() { a } else { b };
            d.notes.push(format!("outputs: {}", missing(r)));
            d.field(
                s,
                "output manifest",
                oa.as_ref().map(count),
                ob.as_ref().map(count),
            );
            return;
        }
    };
    let files = |m: &OutputManifest| -> BTreeMap<String, String> {
        m.files
            .iter()
            .map(|f| (f.path.clone(), f.sha256.clone()))
            .collect()
    };
    d.map(s, &files(oa), &files(ob));
    for (r, m) in [(a, oa), (b, ob)] {
        if let Some(n) = &m.note {
            d.notes.push(format!("outputs of run {}: {n}", r.run));
        }
        if m.omitted > 0 {
            d.notes.push(format!(
                "outputs of run {}: {} file(s) past the listing cap were counted, not hashed: not compared",
                r.run, m.omitted
            ));
        }
    }
}

/// `text` with every run of 40 or more hex digits (a digest, a commit)
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

#[cfg(test)]
#[path = "diff_tests.rs"]
mod tests;
