//! Judging a run that exited 0: its output folder checked to be a real one,
//! its manifest made, then each of the task's validators (its own, then its
//! project's) called over it. Everything here ends as findings: a validator
//! that cannot load or fails is an error finding (or a warning, when the
//! daemon config says `validators.on_failure = "open"`).

use std::path::Path;
use std::time::Instant;

use nightjar_core::api::findings::{Finding, Severity};

use super::manifest;
use crate::plugins::validator::{RunFacts, STDERR_TAIL, ValidatorRef, Validators};
use crate::sandbox::files::{self, RunAs};

/// The name the host's own findings carry.
pub const HOST: &str = "nightjar";

/// Hard-linked files named one finding each; the rest are counted in one.
const MAX_LINKED_NAMED: usize = 10;

/// What judging a run gave, and what it cost.
#[derive(Debug, Default)]
pub struct Judgement {
    /// Every finding, the host's first.
    pub findings: Vec<Finding>,
    /// Time spent on the manifest (walk and hashes), ms.
    pub manifest_ms: u64,
    /// Time spent in validators, ms.
    pub validators_ms: u64,
    /// The output folder's manifest, when it was walked.
    pub walked: Option<manifest::Manifest>,
}

/// Judges a run: `refs` over the folder `output`, with `facts` (its files
/// filled in here). `fail_open` makes a validator's own failure a warning.
pub fn judge(
    validators: &Validators,
    refs: &[ValidatorRef],
    mut facts: RunFacts,
    output: Option<&Path>,
    run_dir: &Path,
    fail_open: bool,
    who: Option<&RunAs>,
) -> Judgement {
    let mut j = Judgement::default();
    if refs.is_empty() {
        return j;
    }
    let host = |severity, message: String| Finding {
        validator: HOST.into(),
        severity,
        path: None,
        message,
    };
    let Some(output) = output else {
        j.findings.push(host(
            Severity::Error,
            "the task has validators but no output folder: set `output` in the task file, or use ${OUTPUT_PATH} in its command".into(),
        ));
        return j;
    };
    let t0 = Instant::now();
    // As the owner: what they could not read is not hashed, nor shown.
    let walked = crate::privsep::as_owner(who, |_| manifest::walk(output))
        .map_err(std::io::Error::other)
        .and_then(|r| r);
    let m = match walked {
        Ok(m) => m,
        Err(e) => {
            j.findings.push(host(
                Severity::Error,
                format!(
                    "cannot read the output folder {}: {e}; validators were not run",
                    output.display()
                ),
            ));
            return j;
        }
    };
    j.manifest_ms = t0.elapsed().as_millis() as u64;
    // Files validators are not shown, whole folder refused: a hard link's
    // content may live outside the folder; opening a FIFO would block the
    // validator, a device act. A run may make thousands: the first few are
    // named, the rest counted.
    let refused: Vec<(&String, String)> = m
        .linked
        .iter()
        .map(|(path, links)| {
            (path, format!(
                "has {links} hard links: a validator sees only files that belong to the output folder alone; copy the file instead of linking it (validators were not run)"
            ))
        })
        .chain(m.special.iter().map(|(path, kind)| {
            (path, format!(
                "is a {kind}: validators read only regular files and folders; remove it from the output folder (validators were not run)"
            ))
        }))
        .collect();
    if !refused.is_empty() {
        for (path, message) in refused.iter().take(MAX_LINKED_NAMED) {
            j.findings.push(Finding {
                path: Some((*path).clone()),
                ..host(Severity::Error, message.clone())
            });
        }
        if refused.len() > MAX_LINKED_NAMED {
            j.findings.push(host(
                Severity::Error,
                format!(
                    "{} more files with hard links, or FIFOs, sockets or devices, not named",
                    refused.len() - MAX_LINKED_NAMED
                ),
            ));
        }
        drop(refused);
        j.walked = Some(m);
        return j;
    }
    if m.omitted > 0 {
        j.findings.push(host(
            Severity::Info,
            format!(
                "the output folder holds more than {} files; validators were shown the first {} by name",
                manifest::MAX_FILES,
                manifest::MAX_FILES
            ),
        ));
    }
    facts.files = m.files.clone();
    facts.files_omitted = m.omitted;
    j.walked = Some(m);
    facts.stderr_tail = stderr_tail(&run_dir.join(files::STDERR));
    let t1 = Instant::now();
    let failed = if fail_open {
        Severity::Warning
    } else {
        Severity::Error
    };
    for r in refs {
        let shown = display_name(&r.plugin);
        let result = validators.get(&r.plugin, who).and_then(|v| {
            v.validate(&r.config, &facts, Some(output), who)
                .map_err(|e| format!("validator `{shown}` {e}"))
        });
        match result {
            Ok(found) => j.findings.extend(found),
            Err(e) => j.findings.push(Finding {
                validator: shown,
                ..host(failed, format!("{e}; the outputs were not judged by it"))
            }),
        }
    }
    j.validators_ms = t1.elapsed().as_millis() as u64;
    j
}

/// The end of the run's stderr, from a line start, at most [`STDERR_TAIL`].
fn stderr_tail(path: &Path) -> String {
    let text = crate::sandbox::classify::tail_bytes(path, STDERR_TAIL as u64);
    let full = std::fs::symlink_metadata(path)
        .map(|m| m.len())
        .unwrap_or(0)
        <= STDERR_TAIL as u64;
    match text.find('\n') {
        Some(i) if !full => text[i + 1..].to_string(),
        _ => text,
    }
}

/// `outputs`, or a validator file's stem.
fn display_name(plugin: &str) -> String {
    let p = Path::new(plugin);
    if p.is_absolute() {
        crate::plugins::validator::name_of(p)
    } else {
        plugin.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::engine::PluginEngine;
    use crate::plugins::limits::PluginLimits;

    #[test]
    fn thousands_of_hard_links_are_a_few_findings() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        std::fs::create_dir(&out).unwrap();
        let outside = dir.path().join("outside");
        std::fs::write(&outside, b"x").unwrap();
        for i in 0..2000 {
            std::fs::hard_link(&outside, out.join(format!("l{i}"))).unwrap();
        }
        let v = Validators::new(PluginEngine::new(None).unwrap(), PluginLimits::default());
        let refs = [ValidatorRef {
            plugin: "outputs".into(),
            config: String::new(),
        }];
        let j = judge(
            &v,
            &refs,
            RunFacts::default(),
            Some(&out),
            dir.path(),
            false,
            None,
        );
        assert_eq!(
            j.findings.len(),
            MAX_LINKED_NAMED + 1,
            "{:?}",
            j.findings.last()
        );
        let last = &j.findings[MAX_LINKED_NAMED].message;
        assert!(last.contains("1990 more"), "{last}");
    }
}
