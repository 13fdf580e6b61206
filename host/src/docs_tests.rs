//! The book (`docs/`) and the README, held true: every link between
//! chapters reaches a file and a heading, every chapter is in the summary,
//! every place the code cites a chapter names one that exists, every TOML
//! block parses (as a task file or as the daemon's configuration), and the
//! configuration reference (`examples/nightjar.toml`) has every key of the
//! configuration in its own table (`docs_config_tests.rs`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::config::Config;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .expect("the repository's root")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every Markdown file of the book, and the README.
fn pages() -> Vec<PathBuf> {
    let mut all = vec![root().join("README.md"), root().join("CONTRIBUTING.md")];
    walk(&root().join("docs/src"), &mut |p| {
        if p.extension().is_some_and(|e| e == "md") {
            all.push(p.to_path_buf());
        }
    });
    all.sort();
    all
}

fn walk(dir: &Path, f: &mut dyn FnMut(&Path)) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') || name == "target" || name == "node_modules" {
            continue;
        }
        if p.is_dir() {
            walk(&p, f);
        } else {
            f(&p);
        }
    }
}

/// The lines of `text` outside fenced code blocks, with their numbers.
fn prose(text: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push((i + 1, line));
        }
    }
    out
}

/// The fenced blocks of `text` whose info string starts with `lang`, with
/// the line each starts on.
fn blocks(text: &str, lang: &str) -> Vec<(usize, String)> {
    let mut kept = Vec::new();
    // (first line, kept?, body) of the block open now.
    let mut fence: Option<(usize, bool, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        match fence.as_mut() {
            Some(_) if t.starts_with("```") => {
                if let Some((at, true, body)) = fence.take() {
                    kept.push((at, body));
                }
            }
            Some((_, true, body)) => {
                body.push_str(line);
                body.push('\n');
            }
            Some(_) => {}
            None if t.starts_with("```") => {
                let info = t.trim_start_matches('`');
                let first = info.split([',', ' ']).next().unwrap_or("");
                fence = Some((i + 1, first == lang, String::new()));
            }
            None => {}
        }
    }
    kept
}

/// mdBook's id of a heading: lower case, spaces to `-`, only letters,
/// digits, `-` and `_` kept.
fn slug(title: &str) -> String {
    title
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// Each page's headings: title as written and its id.
fn headings(text: &str) -> Vec<(String, String)> {
    prose(text)
        .into_iter()
        .filter_map(|(_, l)| {
            let t = l.trim_start_matches('#');
            (l.starts_with('#') && t.starts_with(' ')).then(|| {
                let t = t.trim().to_string();
                (t.clone(), slug(&t))
            })
        })
        .collect()
}

/// The targets of the Markdown links `[text](target)` and images `![alt](target)` on a line.
fn links(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find("](") {
        let after = &rest[i + 2..];
        let Some(end) = after.find(')') else { break };
        out.push(after[..end].to_string());
        rest = &after[end..];
    }
    out
}

#[test]
fn every_link_in_the_book_and_the_readme_reaches_a_file_and_a_heading() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = read(&page);
        for (n, line) in prose(&text) {
            // Inline code is not a link.
            let line: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
            for target in links(&line) {
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                checked += 1;
                let (file, anchor) = match target.split_once('#') {
                    Some((f, a)) => (f, Some(a)),
                    None => (target.as_str(), None),
                };
                let dest = if file.is_empty() {
                    page.clone()
                } else {
                    page.parent().expect("a folder").join(file)
                };
                let at = format!("{}:{n}: {target}", page.display());
                if !dest.exists() {
                    broken.push(format!("{at}: no such file"));
                    continue;
                }
                if let Some(a) = anchor {
                    let ids: Vec<String> = headings(&read(&dest))
                        .into_iter()
                        .map(|(_, id)| id)
                        .collect();
                    if !ids.iter().any(|id| id == a) {
                        broken.push(format!("{at}: no heading with id {a:?}"));
                    }
                }
            }
        }
    }
    assert!(
        checked > 40,
        "only {checked} links found: is the scan broken?"
    );
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn every_chapter_is_in_the_summary_and_the_summary_names_only_chapters() {
    let src = root().join("docs/src");
    let summary = read(&src.join("SUMMARY.md"));
    let listed: BTreeSet<String> = summary.lines().flat_map(links).collect();
    let mut chapters = BTreeSet::new();
    walk(&src, &mut |p| {
        if p.extension().is_some_and(|e| e == "md") && !p.ends_with("SUMMARY.md") {
            let rel = p.strip_prefix(&src).expect("under src");
            chapters.insert(rel.to_string_lossy().into_owned());
        }
    });
    let missing: Vec<_> = chapters.difference(&listed).collect();
    assert!(
        missing.is_empty(),
        "chapters not in SUMMARY.md: {missing:?}"
    );
    let extra: Vec<_> = listed.difference(&chapters).collect();
    assert!(
        extra.is_empty(),
        "SUMMARY.md names no such chapter: {extra:?}"
    );
}

/// Where the code cites the docs: `docs/src/PATH.md#ID`, the guide's "Title"
/// (or the book's), and the README's "Title".
#[test]
fn every_place_the_code_cites_a_chapter_names_one_that_exists() {
    let root = root();
    let mut titles = BTreeSet::new();
    for page in pages() {
        if page.starts_with(root.join("docs")) {
            titles.extend(headings(&read(&page)).into_iter().map(|(t, _)| t));
        }
    }
    let readme: BTreeSet<String> = headings(&read(&root.join("README.md")))
        .into_iter()
        .map(|(t, _)| t)
        .collect();
    let mut wrong = Vec::new();
    let mut cites = 0;
    for dir in [
        "host", "sdk", "plugins", "examples", "scripts", "wit", "tests", ".ci",
    ] {
        walk(&root.join(dir), &mut |p| {
            let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
            let script = p.starts_with(root.join("scripts")) || p.starts_with(root.join(".ci"));
            if !(script || ["rs", "toml", "md", "in", "yaml", "py", "service"].contains(&ext)) {
                return;
            }
            // This file names the forms it looks for.
            if p.ends_with("host/src/docs_tests.rs") {
                return;
            }
            let Ok(text) = std::fs::read_to_string(p) else {
                return;
            };
            for (n, line) in text.lines().enumerate() {
                let at = format!("{}:{}", p.display(), n + 1);
                let mut rest = line;
                while let Some(i) = rest.find("docs/src/") {
                    let cite: String = rest[i..]
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || "/._-#".contains(*c))
                        .collect();
                    rest = &rest[i + cite.len().max(1)..];
                    let cite = cite.trim_end_matches('.');
                    let (file, anchor) = cite.split_once('#').unwrap_or((cite, ""));
                    if !file.ends_with(".md") {
                        continue;
                    }
                    cites += 1;
                    let dest = root.join(file);
                    if !dest.exists() {
                        wrong.push(format!("{at}: {cite}: no such chapter"));
                    } else if !anchor.is_empty()
                        && !headings(&read(&dest)).iter().any(|(_, id)| id == anchor)
                    {
                        wrong.push(format!("{at}: {cite}: no such heading"));
                    }
                }
                for (marker, known, what) in [
                    ("the guide's \"", &titles, "chapter or section of the book"),
                    ("the book's \"", &titles, "chapter or section of the book"),
                    ("README's \"", &readme, "section of the README"),
                    ("README: \"", &readme, "section of the README"),
                    ("README, \"", &readme, "section of the README"),
                ] {
                    let mut rest = line;
                    while let Some(i) = rest.find(marker) {
                        let after = &rest[i + marker.len()..];
                        let title = after.split('"').next().unwrap_or("");
                        // A Rust string's escaped quote ends the title too.
                        let title = title.trim_end_matches('\\');
                        cites += 1;
                        if !known.contains(title) {
                            wrong.push(format!("{at}: \"{title}\" is no {what}"));
                        }
                        rest = after;
                    }
                }
            }
        });
    }
    assert!(
        cites > 5,
        "only {cites} citations found: is the scan broken?"
    );
    assert!(
        wrong.is_empty(),
        "citations of missing docs:\n{}",
        wrong.join("\n")
    );
}

/// The book's blocks with `{{#include PATH}}` replaced by the file.
fn expand_includes(block: &str, page: &Path) -> String {
    let mut out = String::new();
    for line in block.lines() {
        match line
            .trim()
            .strip_prefix("{{#include ")
            .and_then(|r| r.strip_suffix("}}"))
        {
            Some(path) => out.push_str(&read(&page.parent().expect("a folder").join(path))),
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

#[test]
fn every_toml_block_in_the_docs_parses_as_a_task_file_or_the_daemons_config_and_every_json_block_as_json()
 {
    use nightjar_core::task::file::{Format, parse};
    let mut bad = Vec::new();
    let (mut tasks, mut configs) = (0, 0);
    for page in pages() {
        let text = read(&page);
        for (line, block) in blocks(&text, "toml") {
            let block = expand_includes(&block, &page);
            let at = format!("{}:{line}", page.display());
            // A whole task file, or a part of one (its tables, under a
            // command), or the daemon's configuration: its keys and types
            // (what this machine has, its groups and paths, is not checked).
            let fragment = format!("command = \"true\"\n{block}");
            let as_task = parse(&block, Format::Toml).or_else(|e| {
                if e.contains("missing field `command`") {
                    parse(&fragment, Format::Toml)
                } else {
                    Err(e)
                }
            });
            match as_task {
                Ok(defs) if !defs.is_empty() => tasks += 1,
                as_task => match toml::from_str::<Config>(&block) {
                    Ok(_) => configs += 1,
                    Err(e) => bad.push(format!(
                        "{at}: neither a task file ({}) nor a config ({e})",
                        as_task.err().unwrap_or_else(|| "no task".into())
                    )),
                },
            }
        }
        for (line, block) in blocks(&text, "yaml") {
            if let Err(e) = parse(&block, Format::Yaml) {
                bad.push(format!("{}:{line}: not a task file: {e}", page.display()));
            }
            tasks += 1;
        }
    }
    for page in pages() {
        for (line, block) in blocks(&read(&page), "json") {
            if let Err(e) = serde_json::from_str::<serde_json::Value>(&block) {
                bad.push(format!("{}:{line}: not JSON: {e}", page.display()));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "blocks that do not parse:\n{}",
        bad.join("\n")
    );
    assert!(
        tasks >= 3 && configs >= 5,
        "{tasks} task files, {configs} configs"
    );
}

#[path = "docs_config_tests.rs"]
mod config;
