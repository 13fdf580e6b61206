//! Reproducibility manifests, captured at submit (what was asked) and at a
//! run's start (what ran): the workdir's git state, the inputs' hashes
//! (cached: a file hashed once is a stat afterwards), the Python
//! environment, the machine. Everything here is bounded in time (git and
//! pip under deadlines, inputs never opened unless they are regular files)
//! and blocking: callers run it off the async runtime. A system daemon
//! runs it on a thread acting as the task's owner ([`crate::privsep`]):
//! what the owner could not read is not captured, and git and pip run as
//! the owner.

pub mod git;
pub mod git_cache;
mod git_witness;
pub mod inputs;
pub mod python;
pub mod system;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nightjar_core::api::manifest::{InputChange, InputRecord, Manifest, Phase};

use crate::privsep::Owned;
use crate::privsep::thread::Ask;

pub use inputs::{Earlier, HashCache, Key};

/// What a capture may cost, and what it may reuse.
#[derive(Clone, Copy)]
pub struct Budget<'a> {
    /// All git calls together.
    pub git: Duration,
    /// pip freeze.
    pub python: Duration,
    /// Repositories' git states kept from earlier captures (none: git is
    /// asked every time).
    pub repos: Option<&'a git_cache::GitCache>,
}

/// What one capture looks at.
pub struct Subject<'a> {
    /// The task's workdir.
    pub workdir: &'a Path,
    /// Its inputs (absolute).
    pub inputs: &'a [PathBuf],
    /// The environment the run gets (for the Python environment it activates).
    pub env: &'a BTreeMap<String, String>,
}

/// Captures the parts of a manifest that read the world: git, inputs,
/// Python. `earlier` is the submit manifest when capturing at a start
/// (unchanged inputs keep its hashes, changed ones are listed).
pub fn capture(
    phase: Phase,
    subject: &Subject<'_>,
    earlier: Option<&Manifest>,
    cache: &mut dyn HashCache,
    verify: bool,
    budget: Budget<'_>,
    owned: Owned<'_>,
) -> Manifest {
    let t0 = Instant::now();
    let mut m = Manifest::new(phase, crate::time::now_ms(), subject.workdir.to_path_buf());
    m.git = git::capture(subject.workdir, budget.git, owned, budget.repos);
    let before = earlier.map(|e| Earlier {
        inputs: &e.inputs,
        at_ms: e.captured_at,
    });
    m.inputs = inputs::record_all(subject.inputs, before, cache, verify, &mut m.stats);
    if let Some(e) = earlier {
        m.inputs_changed = changes(&e.inputs, &m.inputs);
    }
    if let Some((kind, prefix)) = python::active(subject.env) {
        m.python = Some(python::capture(
            kind,
            &prefix,
            subject.env,
            budget.python,
            owned,
        ));
    }
    m.capture_ms = t0.elapsed().as_millis() as u64;
    m
}

/// A hash-cache call the owner's thread sends to the daemon's, which
/// keeps the store (the owner's thread opens none of its files).
pub enum CacheCall {
    /// [`HashCache::lookup`].
    Lookup(Vec<Key>),
    /// [`HashCache::remember`].
    Remember(Vec<(Key, String, String)>),
}

/// The hash cache as the owner's thread sees it: each call asked of the
/// daemon's thread.
pub struct Remote<'a, 's>(pub &'a Ask<'s, CacheCall, HashMap<Key, String>>);

impl HashCache for Remote<'_, '_> {
    fn lookup(&mut self, keys: &[Key]) -> HashMap<Key, String> {
        self.0
            .ask(CacheCall::Lookup(keys.to_vec()))
            .unwrap_or_default()
    }

    fn remember(&mut self, fresh: &[(Key, String, String)]) {
        self.0.ask(CacheCall::Remember(fresh.to_vec()));
    }
}

/// Answers `call` from `cache` (on the daemon's thread).
pub fn serve(cache: &mut dyn HashCache, call: CacheCall) -> HashMap<Key, String> {
    match call {
        CacheCall::Lookup(keys) => cache.lookup(&keys),
        CacheCall::Remember(fresh) => {
            cache.remember(&fresh);
            HashMap::new()
        }
    }
}

/// The inputs whose hash now differs from `before`'s (or that cannot be
/// hashed now, or are gone).
pub fn changes(before: &[InputRecord], now: &[InputRecord]) -> Vec<InputChange> {
    let mut out = Vec::new();
    for b in before {
        let Some(n) = now.iter().find(|n| n.path == b.path) else {
            continue;
        };
        let what = if n.kind != b.kind {
            format!("was a {}, now {}", b.kind, article(&n.kind))
        } else if b.sha256.is_some() && n.sha256.is_none() {
            format!(
                "cannot be hashed now: {}",
                n.note.as_deref().unwrap_or("no hash")
            )
        } else if b.sha256 != n.sha256 {
            "content changed".into()
        } else {
            continue;
        };
        out.push(InputChange {
            path: b.path.clone(),
            before: b.sha256.clone(),
            after: n.sha256.clone(),
            what,
        });
    }
    out
}

fn article(kind: &str) -> String {
    match kind {
        "missing" | "unreadable" => kind.to_string(),
        _ => format!("a {kind}"),
    }
}

/// Hides secrets in what a manifest shows: values of env names matching
/// `sandbox.redact_env`, those values wherever else they appear (another
/// variable, an argument), and the password of a URL (`scheme://user:pw@host`).
pub struct Redactor {
    patterns: Vec<String>,
    secrets: Vec<String>,
}

/// A secret shorter than this is not searched for elsewhere (it would hide
/// ordinary words).
const MIN_SECRET: usize = 6;

impl Redactor {
    /// A redactor for `env` (whose secret values it learns) under `patterns`.
    pub fn new(env: &BTreeMap<String, String>, patterns: &[String]) -> Redactor {
        let mut secrets: Vec<String> = env
            .iter()
            .filter(|(k, v)| crate::config::redacted(k, patterns) && v.len() >= MIN_SECRET)
            .map(|(_, v)| v.clone())
            .collect();
        // Longest first, so a secret inside another is replaced whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        Redactor {
            patterns: patterns.to_vec(),
            secrets,
        }
    }

    /// `env` as a manifest shows it.
    pub fn env(&self, env: &BTreeMap<String, String>) -> BTreeMap<String, String> {
        env.iter()
            .map(|(k, v)| {
                let v = if crate::config::redacted(k, &self.patterns) {
                    crate::config::REDACTED.to_string()
                } else {
                    self.text(v)
                };
                (k.clone(), v)
            })
            .collect()
    }

    /// `text` with known secrets and URL passwords replaced.
    pub fn text(&self, text: &str) -> String {
        let mut out = url_passwords(text);
        for s in &self.secrets {
            if out.contains(s.as_str()) {
                out = out.replace(s.as_str(), crate::config::REDACTED);
            }
        }
        out
    }
}

/// `scheme://user:password@host` with the password replaced, anywhere in `text`.
fn url_passwords(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        let end = tail
            .find(|c: char| c == '/' || c == '?' || c == '#' || c.is_whitespace())
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        match (authority.rfind('@'), authority.find(':')) {
            (Some(at), Some(colon)) if colon < at => {
                out.push_str(&authority[..colon + 1]);
                out.push_str(crate::config::REDACTED);
                out.push_str(&authority[at..]);
            }
            _ => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// The message of a run refused because its inputs changed since submit.
pub fn refusal(changed: &[InputChange]) -> String {
    let list: Vec<String> = changed
        .iter()
        .take(5)
        .map(|c| format!("{} ({})", c.path.display(), c.what))
        .collect();
    let more = changed.len().saturating_sub(5);
    format!(
        "not started: input {}{} changed since submit, and [manifest] inputs_changed = \"refuse\"; restore the file or submit the task again to run on what is there now",
        list.join(", "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(path: &str, kind: &str, sha: Option<&str>) -> InputRecord {
        InputRecord {
            path: path.into(),
            kind: kind.into(),
            sha256: sha.map(String::from),
            ..InputRecord::default()
        }
    }

    #[test]
    fn changes_name_content_kind_and_disappearance() {
        let before = [
            rec("/a", "file", Some("1")),
            rec("/b", "file", Some("2")),
            rec("/c", "file", Some("3")),
            rec("/d", "fifo", None),
        ];
        let now = [
            rec("/a", "file", Some("1")),
            rec("/b", "file", Some("9")),
            rec("/c", "missing", None),
            rec("/d", "fifo", None),
        ];
        let c = changes(&before, &now);
        let got: Vec<(&str, &str)> = c
            .iter()
            .map(|c| (c.path.to_str().unwrap(), c.what.as_str()))
            .collect();
        assert_eq!(
            got,
            [("/b", "content changed"), ("/c", "was a file, now missing")]
        );
        let msg = refusal(&c);
        assert!(
            msg.contains("/b (content changed)") && msg.contains("refuse"),
            "{msg}"
        );
    }

    #[test]
    fn secrets_are_redacted_by_name_by_value_and_in_urls() {
        let env: BTreeMap<String, String> = [
            ("API_KEY", "k"),
            ("aws_secret_access_key", "s3cr3t-value"),
            ("OMP_NUM_THREADS", "4"),
            ("CURL_OPTS", "--header x-auth:s3cr3t-value"),
            ("DATABASE_URL", "postgres://lab:hunter2@db:5432/runs"),
        ]
        .into_iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
        let r = Redactor::new(&env, &crate::config::Config::default().sandbox.redact_env);
        let shown = r.env(&env);
        assert_eq!(shown["API_KEY"], "<redacted>");
        assert_eq!(shown["aws_secret_access_key"], "<redacted>");
        assert_eq!(shown["OMP_NUM_THREADS"], "4");
        assert_eq!(shown["CURL_OPTS"], "--header x-auth:<redacted>");
        assert_eq!(
            shown["DATABASE_URL"],
            "postgres://lab:<redacted>@db:5432/runs"
        );
        assert_eq!(r.text("see https://a.org/x?y=1"), "see https://a.org/x?y=1");
        assert_eq!(r.text("git@host:x and ://"), "git@host:x and ://");
    }
}
