//! The host's layers, checked: each top-level module's `crate::` paths (in
//! its code, not its comments or tests) name only the modules it may use.
//! A new edge fails here with the file and line; one that is meant belongs
//! in [`ALLOWED`] with its reason. [`PENDING`] lists the edges the handler
//! layer is to remove (web and http -> api -> daemon, one way); one that
//! goes away must leave the list too, so the list stays true.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Which modules each module may name. `task` and `time` are the core
/// crate's (`nightjar_core`), free to all.
const ALLOWED: &[(&str, &[&str])] = &[
    // Leaves: the kernel (`sys`, the supervise crate's, re-exported), the
    // users database, prices, secret references.
    ("sys", &[]),
    ("users", &[]),
    ("tariff", &[]),
    ("secrets", &[]),
    ("sync", &[]),
    // The Prometheus metrics' instruments and text: read in by the daemon.
    ("metrics", &[]),
    // A node's sampler walks /proc for a run's processes.
    ("gpu", &["sys", "tariff"]),
    // The daemon's side of runs (starting supervisors, their liveness) over
    // the supervise crate's modules, which it re-exports. No store, plugin
    // host, HTTP, notifier or daemon code.
    ("sandbox", &["sys"]),
    ("privsep", &["sandbox", "sys", "users"]),
    ("archive", &["privsep", "sandbox", "sys"]),
    // Placement is pure: the core's task model and nothing else.
    ("scheduler", &[]),
    (
        "config",
        &["gpu", "plugins", "sandbox", "secrets", "tariff", "users"],
    ),
    ("manifest", &["config", "privsep", "sys", "users"]),
    // The plugin host: no daemon, store or notification code.
    (
        "plugins",
        &["config", "privsep", "sandbox", "secrets", "sys", "tariff"],
    ),
    (
        "postrun",
        &["plugins", "privsep", "sandbox", "store", "sys"],
    ),
    ("store", &["gpu", "manifest", "postrun", "users"]),
    // Who may do what: the users' rules, read by every front end and the daemon.
    ("access", &["config", "users"]),
    ("report", &["gpu", "store", "tariff", "users"]),
    // Notifications reach the daemon only through `notify::NotifyHost`.
    (
        "notify",
        &["config", "plugins", "sandbox", "secrets", "store", "sys"],
    ),
    (
        "daemon",
        &[
            "access",
            "archive",
            "config",
            "gpu",
            "manifest",
            "metrics",
            "notify",
            "plugins",
            "postrun",
            "privsep",
            "report",
            "sandbox",
            "scheduler",
            "secrets",
            "store",
            "sys",
            "tariff",
            "users",
        ],
    ),
    (
        "api",
        &[
            "access", "config", "daemon", "privsep", "report", "sandbox", "store", "sys", "users",
        ],
    ),
    // The HTTP server mounts the dashboard's pages on its router.
    ("http", &["access", "api", "metrics", "users", "web"]),
    ("web", &["access", "api", "report"]),
    // The daemon binary's wiring may use anything.
    (
        "nightjard",
        &[
            "access", "api", "config", "daemon", "gpu", "http", "notify", "plugins", "sandbox",
            "store", "sys", "users", "web",
        ],
    ),
];

/// Edges still to remove; each that goes away must leave the list (the
/// test fails until it does). Empty since the handler layer (issue 26,
/// item 1): the front ends reach the daemon only through `api::Api` (its
/// verbs, config, access rules, change feed and token checks), the daemon
/// names no front end (`nightjard` wires them) and no `api` (the access
/// rules are `crate::access`), and tokens are `api/handlers/tokens.rs`.
const PENDING: &[(&str, &str)] = &[];

/// Modules free to all: the core's re-exports, and `sync` (the one
/// poisoned-mutex recovery), a leaf.
const FREE: &[&str] = &["task", "time", "sync"];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The module a file under `src/` belongs to, unless it is a test file.
fn module_of(rel: &Path) -> Option<String> {
    let name = rel.file_name()?.to_str()?;
    if name == "tests.rs" || name.ends_with("_tests.rs") {
        return None;
    }
    let first = rel.components().next()?.as_os_str().to_str()?;
    Some(first.trim_end_matches(".rs").to_string())
}

/// The file's code without its comments and its inline `#[cfg(test)]`
/// modules: comment text is blanked, lines are kept (for line numbers).
fn code_of(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        if t.starts_with("#[cfg(test)]")
            && lines
                .peek()
                .is_some_and(|l| l.trim_start().starts_with("mod ") && l.contains('{'))
        {
            break;
        }
        let code = match line.find("//") {
            Some(at) if !line[..at].contains('"') => &line[..at],
            _ => line,
        };
        out.push_str(code);
        out.push('\n');
    }
    out
}

/// The top-level modules the code names through `crate::` (also inside a
/// `crate::{a, b::c}` group, over several lines), with the line of each.
fn named(code: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(found) = code[from..].find("crate::") {
        let at = from + found;
        from = at + "crate::".len();
        let line = code[..at].matches('\n').count() + 1;
        if code[..at]
            .chars()
            .last()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
        {
            continue; // a path like `nightjar_core::...` ending in `crate`
        }
        let rest = &code[from..];
        let names: Vec<&str> = match rest.strip_prefix('{') {
            Some(group) => {
                let end = group.find('}').unwrap_or(group.len());
                group[..end]
                    .split(',')
                    .map(|p| p.trim().split("::").next().unwrap_or(""))
                    .collect()
            }
            None => vec![
                rest.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .next()
                    .unwrap_or(""),
            ],
        };
        out.extend(
            names
                .into_iter()
                .filter(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
                .map(|n| (line, n.to_string())),
        );
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("read src") {
        let p = e.expect("dir entry").path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Every edge the code has: (from, to) -> the first place that makes it.
fn edges() -> BTreeMap<(String, String), String> {
    let root = src();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let mut edges = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(&root).expect("under src");
        let Some(from) = module_of(rel) else { continue };
        if ["lib", "main", "bin"].contains(&from.as_str()) {
            continue;
        }
        let text = std::fs::read_to_string(&f).expect("read source");
        for (line_no, to) in named(&code_of(&text)) {
            if to != from && !FREE.contains(&to.as_str()) {
                edges
                    .entry((from.clone(), to))
                    .or_insert_with(|| format!("{}:{line_no}", rel.display()));
            }
        }
    }
    edges
}

#[test]
fn every_module_names_only_the_modules_its_layer_allows() {
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let pending: BTreeSet<(&str, &str)> = PENDING.iter().copied().collect();
    let edges = edges();
    let mut wrong = Vec::new();
    for ((from, to), at) in &edges {
        let Some(may) = allowed.get(from.as_str()) else {
            wrong.push(format!("{at}: module `{from}` is not in ALLOWED"));
            continue;
        };
        if !may.contains(&to.as_str()) && !pending.contains(&(from.as_str(), to.as_str())) {
            wrong.push(format!("{at}: `{from}` may not use `{to}`"));
        }
    }
    assert!(wrong.is_empty(), "layering broken:\n{}", wrong.join("\n"));
    let gone: Vec<_> = pending
        .iter()
        .filter(|(f, t)| !edges.contains_key(&(f.to_string(), t.to_string())))
        .collect();
    assert!(
        gone.is_empty(),
        "these PENDING edges are gone; take them off the list: {gone:?}"
    );
}

#[test]
fn the_supervisor_binary_reaches_only_the_sandbox_side() {
    // What the daemon's `sandbox` module adds to the supervise crate's
    // reaches no store, plugin host or front end either.
    let edges = edges();
    let mut reach = BTreeSet::from(["sandbox".to_string()]);
    let mut todo = vec!["sandbox".to_string()];
    while let Some(m) = todo.pop() {
        for (from, to) in edges.keys() {
            if *from == m && reach.insert(to.clone()) {
                todo.push(to.clone());
            }
        }
    }
    for banned in ["store", "plugins", "http", "api", "daemon", "web", "notify"] {
        assert!(
            !reach.contains(banned),
            "the sandbox module reaches `{banned}` (through {reach:?})"
        );
    }
    // `nightjar-supervise` is the supervise crate's code only: its file
    // names nothing of this library (so none of it is linked) ...
    let bin = std::fs::read_to_string(src().join("bin/nightjar-supervise.rs")).expect("bin");
    assert!(
        !code_of(&bin).contains("nightjar::"),
        "bin/nightjar-supervise.rs names the nightjar library"
    );
    assert!(code_of(&bin).contains("nightjar_supervise::run_from_args()"));
    // ... and that crate depends on what one run needs: no wasmtime, SQLite,
    // HTTP, TLS or async runtime. A new dependency is added here with a
    // reason, or kept out of the supervisor.
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("supervise/Cargo.toml");
    let text = std::fs::read_to_string(&manifest).expect("supervise/Cargo.toml");
    let toml: toml::Table = text.parse().expect("supervise/Cargo.toml parses");
    let deps: BTreeSet<&str> = toml["dependencies"]
        .as_table()
        .expect("[dependencies]")
        .keys()
        .map(String::as_str)
        .collect();
    let allowed = BTreeSet::from([
        "nightjar-core",
        "anyhow",
        "bytesize",
        "humantime",
        "libc",
        "serde",
        "serde_json",
        "sha2",
        "tracing",
    ]);
    let extra: Vec<_> = deps.difference(&allowed).collect();
    assert!(extra.is_empty(), "the supervisor now depends on {extra:?}");
    for table in ["target", "build-dependencies"] {
        assert!(
            !toml.contains_key(table),
            "supervise/Cargo.toml has [{table}...]: its dependencies belong in the list above"
        );
    }
}

#[test]
fn the_import_reader_sees_paths_groups_and_skips_comments_and_tests() {
    let names =
        |code: &str| -> Vec<String> { named(&code_of(code)).into_iter().map(|(_, n)| n).collect() };
    assert_eq!(names("use crate::store::Store;"), ["store"]);
    assert_eq!(names("use crate::{sys::x, users};"), ["sys", "users"]);
    assert_eq!(
        names("use crate::{\n    gpu::a,\n    tariff,\n};"),
        ["gpu", "tariff"]
    );
    assert_eq!(names("let n = crate::users::euid();"), ["users"]);
    assert!(names("use nightjar_core::time;").is_empty());
    let code = "use crate::a::x; // crate::b\n// crate::c\nfn f() {}\n#[cfg(test)]\nmod tests {\n use crate::d;\n}\n";
    assert_eq!(names(code), ["a"]);
    assert_eq!(named(&code_of("\n\nuse crate::e;"))[0].0, 3, "line numbers");
}
