//! Finding the newest complete checkpoint a pattern matches, without ever
//! hanging or failing a start: the walk reads at most [`MAX_ENTRIES`]
//! directory entries and [`MAX_DEPTH`] levels under a `**`, and every error
//! (a folder that cannot be read, a file gone meanwhile) becomes a note.
//!
//! The pattern is matched one path component at a time (globset compiles
//! each), so only the folders a component can lead into are read: a
//! literal component costs no directory read at all. Names starting with a
//! dot are never matched by a wildcard, so a checkpoint written to a hidden
//! temporary file and renamed into place is never seen half-written.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use globset::{Glob, GlobMatcher};

use crate::task::checkpoint::CheckpointSpec;

/// Most directory entries read in one search.
pub const MAX_ENTRIES: usize = 50_000;
/// Deepest a `**` descends.
pub const MAX_DEPTH: usize = 32;
/// Most read errors named in a note (the rest are counted).
const MAX_ERRORS: usize = 3;

/// What a search found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The newest complete checkpoint, if any.
    pub path: Option<PathBuf>,
    /// One line for the task's events: what was chosen or why none was.
    pub note: String,
}

enum Comp {
    Literal(String),
    Glob(GlobMatcher, bool),
    AnyDepth,
}

/// The newest complete checkpoint (by modification time, then name) that
/// `pattern` (absolute, variables substituted) matches at `now`.
pub fn newest_complete(pattern: &str, spec: &CheckpointSpec, now: SystemTime) -> Found {
    search(pattern, spec, now, MAX_ENTRIES)
}

/// [`newest_complete`], reading at most `cap` folder entries.
fn search(pattern: &str, spec: &CheckpointSpec, now: SystemTime, cap: usize) -> Found {
    let mut walk = Walk {
        cap,
        ..Walk::default()
    };
    let comps = match parse(pattern) {
        Ok(c) => c,
        Err(e) => {
            return Found {
                path: None,
                note: format!(
                    "checkpoint.pattern `{pattern}` is not a valid glob ({e}); started without resuming"
                ),
            };
        }
    };
    walk.run(&comps);
    // Several `**` can reach one path twice.
    walk.matches.sort();
    walk.matches.dedup();
    let mut matched: Vec<(SystemTime, PathBuf)> = Vec::with_capacity(walk.matches.len());
    for p in std::mem::take(&mut walk.matches) {
        match crate::privsep::open::metadata(&p, true).and_then(|m| m.modified()) {
            Ok(t) => matched.push((t, p)),
            Err(e) => walk.error(&p, &e),
        }
    }
    // Newest first; equal times by name, so the choice never depends on read order.
    matched.sort_by(|a, b| b.cmp(a));
    let complete = |(t, p): &(SystemTime, PathBuf)| match spec.marker_of(&p.to_string_lossy()) {
        Some(marker) => Path::new(&marker).exists(),
        None => now.duration_since(*t).unwrap_or(Duration::ZERO) >= spec.settle,
    };
    let chosen = matched.iter().position(complete);
    let rule = match &spec.marker {
        Some(m) => format!("marker `{m}` exists"),
        None => format!("unmodified for {}", humantime::format_duration(spec.settle)),
    };
    let mut note = match chosen {
        Some(i) => format!(
            "resumed from {} (the newest of {} matching {pattern} that is complete: {rule}{})",
            matched[i].1.display(),
            matched.len(),
            if i > 0 {
                format!("; {i} newer not complete yet")
            } else {
                String::new()
            }
        ),
        None if matched.is_empty() => {
            format!("no checkpoint matches {pattern}; started without resuming")
        }
        None => format!(
            "{} match {pattern} but none is complete ({rule}); started without resuming",
            matched.len()
        ),
    };
    if walk.truncated {
        note.push_str(&format!(
            "; looked at the first {} folder entries only (narrow the pattern)",
            walk.cap
        ));
    }
    if !walk.errors.is_empty() {
        note.push_str("; ");
        note.push_str(&walk.errors.join("; "));
        if walk.more_errors > 0 {
            note.push_str(&format!("; {} more read errors", walk.more_errors));
        }
    }
    Found {
        path: chosen.map(|i| matched.swap_remove(i).1),
        note,
    }
}

/// `/a/b*/**/c.pt` -> components; a trailing `**` means everything below.
fn parse(pattern: &str) -> Result<Vec<Comp>, globset::Error> {
    let mut out = Vec::new();
    for c in pattern.split('/').filter(|c| !c.is_empty() && *c != ".") {
        out.push(if c == "**" {
            Comp::AnyDepth
        } else if c.contains(['*', '?', '[', ']', '{', '}', '\\']) {
            Comp::Glob(Glob::new(c)?.compile_matcher(), c.starts_with('.'))
        } else {
            Comp::Literal(c.to_string())
        });
    }
    if matches!(out.last(), Some(Comp::AnyDepth)) {
        out.push(Comp::Glob(Glob::new("*")?.compile_matcher(), false));
    }
    Ok(out)
}

#[derive(Default)]
struct Walk {
    cap: usize,
    matches: Vec<PathBuf>,
    read: usize,
    truncated: bool,
    errors: Vec<String>,
    more_errors: usize,
}

impl Walk {
    fn error(&mut self, path: &Path, e: &std::io::Error) {
        if e.kind() == std::io::ErrorKind::NotFound {
            return;
        }
        if self.errors.len() < MAX_ERRORS {
            self.errors
                .push(format!("cannot read {}: {e}", path.display()));
        } else {
            self.more_errors += 1;
        }
    }

    /// Entries of `dir` as (name, path, is a folder not reached by a symlink).
    fn entries(&mut self, dir: &Path) -> Vec<(String, PathBuf, bool)> {
        // Past the cap nothing more is read; what was found still counts.
        if self.truncated {
            return Vec::new();
        }
        // No magic link on the way (`privsep::open`): the search runs on
        // a thread acting as the task's owner, in the daemon's process.
        let rd = match crate::privsep::open::read_dir(dir) {
            Ok(rd) => rd,
            Err(e) => {
                self.error(dir, &e);
                return Vec::new();
            }
        };
        let mut out = Vec::new();
        for entry in rd {
            if self.read >= self.cap {
                self.truncated = true;
                break;
            }
            self.read += 1;
            match entry {
                Ok(e) => {
                    let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
                    let name = e.file_name().to_string_lossy().into_owned();
                    out.push((name, dir.join(e.file_name()), is_dir));
                }
                Err(e) => self.error(dir, &e),
            }
        }
        out
    }

    fn run(&mut self, comps: &[Comp]) {
        // (folder or candidate, next component, `**` depth used)
        let mut stack: Vec<(PathBuf, usize, usize)> = vec![(PathBuf::from("/"), 0, 0)];
        while let Some((path, i, depth)) = stack.pop() {
            let Some(comp) = comps.get(i) else {
                self.matches.push(path);
                continue;
            };
            let last = i + 1 == comps.len();
            match comp {
                Comp::Literal(name) => {
                    // No read for a literal name: a folder that is missing
                    // or not a folder shows when the next component reads it.
                    let next = path.join(name);
                    if !last || crate::privsep::open::metadata(&next, false).is_ok() {
                        stack.push((next, i + 1, depth));
                    }
                }
                Comp::Glob(m, hidden_ok) => {
                    for (name, p, is_dir) in self.entries(&path) {
                        let hidden = name.starts_with('.');
                        if (hidden && !hidden_ok) || !m.is_match(&name) {
                            continue;
                        }
                        // A symlinked folder is followed where a component
                        // names it (the depth is bounded by the pattern).
                        if last || is_dir || p.is_dir() {
                            stack.push((p, i + 1, depth));
                        }
                    }
                }
                Comp::AnyDepth => {
                    stack.push((path.clone(), i + 1, depth));
                    if depth >= MAX_DEPTH {
                        continue;
                    }
                    // Below a `**` only real folders: a symlink loop never ends.
                    for (name, p, is_dir) in self.entries(&path) {
                        if is_dir && !name.starts_with('.') {
                            stack.push((p, i, depth + 1));
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "checkpoint_find_tests.rs"]
mod tests;
