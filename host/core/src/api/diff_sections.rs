//! The comparison of each section of two runs (see [`super::diff`]).

use std::collections::BTreeMap;

use super::{Differ, RunRecord, Section};
use crate::api::manifest::{GitRecord, InputRecord, Manifest};
use crate::api::outputs::OutputManifest;

/// Env names whose values are new for every run: not differences.
const PER_RUN: [&str; 3] = ["NIGHTJAR_RUN_ID", "NIGHTJAR_TASK_ID", "NIGHTJAR_ATTEMPT"];

/// Commit, branch, dirty, the diff's hash, remote.
pub(super) fn code(d: &mut Differ, a: &GitRecord, b: &GitRecord) {
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
pub(super) struct Normal {
    /// The command.
    argv: Vec<String>,
    /// The env, without the per-run ids.
    pub(super) env: BTreeMap<String, String>,
}

impl Normal {
    /// `m`'s command and env, its own folders as variables.
    pub(super) fn of(m: &Manifest) -> Normal {
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

    /// The command on one line.
    pub(super) fn argv(&self) -> String {
        self.argv.join(" ")
    }
}

/// An input as compared: its hash, else what it is.
fn input_value(r: &InputRecord) -> String {
    r.sha256.clone().unwrap_or_else(|| format!("<{}>", r.kind))
}

/// Inputs by path: hash (else kind), and size when only it differs.
pub(super) fn inputs(d: &mut Differ, a: &[InputRecord], b: &[InputRecord]) {
    let by_path = |rs: &[InputRecord]| -> BTreeMap<String, (String, Option<u64>)> {
        rs.iter()
            .map(|r| (r.path.display().to_string(), (input_value(r), r.size)))
            .collect()
    };
    let (a, b) = (by_path(a), by_path(b));
    let hashes = |m: &BTreeMap<String, (String, Option<u64>)>| {
        m.iter().map(|(k, v)| (k.clone(), v.0.clone())).collect()
    };
    d.map(Section::Inputs, &hashes(&a), &hashes(&b));
    // The same hash (or none, for a folder or a FIFO) but another size.
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
pub(super) fn package_name(line: &str) -> String {
    let end = line
        .find(['=', '@', ' ', '<', '>', '~', '!'])
        .unwrap_or(line.len());
    line[..end].trim().to_ascii_lowercase()
}

/// Environment kind and prefix, then each package by name.
pub(super) fn python(d: &mut Differ, a: &Manifest, b: &Manifest) {
    let s = Section::Python;
    let kind = |m: &Manifest| m.python.as_ref().map(|p| p.kind.clone());
    let prefix = |m: &Manifest| m.python.as_ref().map(|p| p.prefix.display().to_string());
    d.field(s, "environment", kind(a), kind(b));
    d.field(s, "prefix", prefix(a), prefix(b));
    let (Some(pa), Some(pb)) = (&a.python, &b.python) else {
        return;
    };
    let packages = |p: &crate::api::manifest::PythonEnv| -> BTreeMap<String, String> {
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

/// Driver, CUDA, the models given.
pub(super) fn gpus(d: &mut Differ, a: &Manifest, b: &Manifest) {
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

/// Host, kernel, nightjar release.
pub(super) fn system(d: &mut Differ, a: &Manifest, b: &Manifest) {
    let s = Section::System;
    let get = |m: &Manifest, f: fn(&crate::api::manifest::SystemInfo) -> &String| {
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

/// Output files by path; a run without an output manifest is a note.
pub(super) fn outputs(d: &mut Differ, a: &RunRecord, b: &RunRecord) {
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
