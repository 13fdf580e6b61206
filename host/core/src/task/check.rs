//! The checks every submission passes, in the CLI and again in the daemon
//! (a raw API request gets exactly the same answer as the CLI): names,
//! NUL bytes, empty commands, attempts, sizes, dependencies and cycles.

use std::collections::BTreeMap;

use super::model::{CommandSpec, DepTarget, NewEntry, TaskSpec};

/// Longest task or project name, in bytes.
pub const MAX_NAME: usize = 128;
/// Most bytes of a task's command plus its env values (Linux refuses a
/// single argument above 128 KiB; E2BIG at dispatch would cost an attempt).
pub const MAX_COMMAND_ENV: usize = 128 * 1024;
/// Most bytes of one task's stored spec (JSON).
pub const MAX_SPEC: usize = 1024 * 1024;

/// Checks a task or project name: letters, digits, `-`, `_`, `.`, no
/// leading dot, 1 to 128 bytes. `what` is `name` or `project` in the error.
pub fn check_name(what: &str, name: &str) -> Result<(), String> {
    let rule = format!(
        "use letters, digits, `-`, `_` and `.` only, not starting with a dot, at most {MAX_NAME} bytes"
    );
    if name.is_empty() {
        return Err(format!("{what} is empty: {rule}"));
    }
    if name.len() > MAX_NAME {
        return Err(format!("{what} is {} bytes long: {rule}", name.len()));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        return Err(format!(
            "{what} `{}` contains `{}`: {rule}",
            name.escape_debug(),
            bad.escape_debug()
        ));
    }
    if name.starts_with('.') {
        return Err(format!(
            "{what} `{}` starts with a dot: {rule}",
            name.escape_debug()
        ));
    }
    Ok(())
}

/// Turns any text (a program's file name, a task file's stem) into a valid
/// default name: other characters become `_`, a leading dot is dropped.
pub fn sanitize_name(raw: &str) -> String {
    let mut s: String = raw
        .trim_start_matches('.')
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    s.truncate(MAX_NAME - 8);
    if s.is_empty() { "task".to_string() } else { s }
}

/// Checks a whole submission; the error names the entry and the problem.
pub fn check_entries(entries: &[NewEntry]) -> Result<(), String> {
    if entries.is_empty() {
        return Err("the submission holds no task".into());
    }
    for (i, e) in entries.iter().enumerate() {
        check_entry(i, e, entries.len())
            .map_err(|m| format!("task `{}`: {m}", e.name.escape_debug()))?;
    }
    check_cycles(entries)
}

fn check_entry(index: usize, e: &NewEntry, count: usize) -> Result<(), String> {
    check_name("name", &e.name)?;
    check_name("project", &e.project)?;
    no_nul("name", &e.name)?;
    if e.members.is_empty() {
        return Err("it has no members".into());
    }
    if !e.is_sweep && e.members.len() != 1 {
        return Err(format!(
            "it has {} members but is not a sweep",
            e.members.len()
        ));
    }
    if e.members.len() > super::resolve::MAX_SWEEP {
        return Err(format!(
            "sweep expands to more than {} members; split it",
            super::resolve::MAX_SWEEP
        ));
    }
    if let Some(s) = &e.schedule {
        no_nul("schedule", s)?;
        super::schedule::parse(s)?;
        if e.is_sweep || !e.deps.is_empty() {
            return Err("a recurring task cannot be a sweep or have dependencies".into());
        }
    }
    for (target, _) in &e.deps {
        match *target {
            DepTarget::Local(j) if j == index => {
                return Err("it depends on itself".into());
            }
            DepTarget::Local(j) if j >= count => {
                return Err(format!(
                    "dependency on entry {j}, but the submission has {count} entries"
                ));
            }
            DepTarget::Existing(id) if id <= 0 => {
                return Err(format!("dependency on task id {id}: ids start at 1"));
            }
            _ => {}
        }
    }
    for m in &e.members {
        if let Some(mask) = m.umask
            && mask > 0o777
        {
            return Err(format!(
                "umask {mask:#o} is not a file-mode mask: it is 0 to 0o777 (the client sends its own; `umask` in the shell shows it)"
            ));
        }
        if e.is_sweep {
            let label_ok = m
                .name
                .strip_prefix(e.name.as_str())
                .is_some_and(|rest| rest.starts_with('[') && rest.ends_with(']'));
            if !label_ok {
                return Err(format!(
                    "sweep member `{}` is not named `{}[PARAMS]`",
                    m.name.escape_debug(),
                    e.name
                ));
            }
        } else if m.name != e.name {
            return Err(format!(
                "member name `{}` differs from the task's name",
                m.name.escape_debug()
            ));
        }
        if m.project != e.project {
            return Err(format!(
                "member project `{}` differs from the task's project",
                m.project.escape_debug()
            ));
        }
        check_spec(m)?;
    }
    Ok(())
}

/// Checks one member's spec: NUL bytes, command, attempts, sizes.
pub fn check_spec(m: &TaskSpec) -> Result<(), String> {
    let argv = m.command.to_argv();
    match &m.command {
        CommandSpec::Shell(s) if s.trim().is_empty() => return Err("command is empty".into()),
        CommandSpec::Argv(v) if v.first().is_none_or(|p| p.is_empty()) => {
            return Err("command is empty (no program to run)".into());
        }
        _ => {}
    }
    for a in &argv {
        no_nul("command", a)?;
    }
    no_nul("name", &m.name)?;
    no_nul("workdir", &m.workdir.to_string_lossy())?;
    if !m.workdir.is_absolute() {
        return Err(format!("workdir {} is not absolute", m.workdir.display()));
    }
    for (k, v) in &m.env {
        if k.is_empty() || k.contains('=') {
            return Err(format!(
                "env key `{}` is not a valid variable name",
                k.escape_debug()
            ));
        }
        if k.starts_with("NIGHTJAR_") {
            return Err(format!(
                "env key `{k}`: NIGHTJAR_* variables are set by the host"
            ));
        }
        no_nul("env key", k)?;
        no_nul(&format!("env value of `{k}`"), v)?;
    }
    for p in &m.inputs {
        no_nul("input", &p.to_string_lossy())?;
    }
    if let Some(o) = &m.output {
        no_nul("output", o)?;
    }
    check_params(&m.params)?;
    if let Some(c) = &m.checkpoint {
        c.check(m.output.is_some())?;
    }
    // Sweep values are substituted at submit; what is left must be built in.
    for t in argv.iter().chain(m.env.values()).chain(m.output.iter()) {
        super::vars::check(t, &[]).map_err(|e| e.to_string())?;
    }
    m.retry.check()?;
    if let Some(e) = &m.environment {
        super::environment::check_stored(e)?;
    }
    for (i, v) in m.validate.iter().enumerate() {
        super::validate::check(v).map_err(|e| format!("validate[{}]: {e}", i + 1))?;
    }
    if m.validate.len() > super::validate::MAX_VALIDATORS {
        return Err(format!(
            "validate: at most {} validators judge one task",
            super::validate::MAX_VALIDATORS
        ));
    }
    if let Some(seed) = m.seed
        && seed > super::model::MAX_SEED
    {
        return Err(format!(
            "seed {seed} is too large: give a whole number from 0 to {}",
            super::model::MAX_SEED
        ));
    }
    if m.resources.cpus == Some(0) {
        return Err("resources.cpus must be at least 1 when set".into());
    }
    let size: usize = argv.iter().map(|a| a.len() + 1).sum::<usize>()
        + m.env
            .iter()
            .map(|(k, v)| k.len() + v.len() + 2)
            .sum::<usize>()
        // A resume is appended to the command (with the checkpoint's path).
        + m.checkpoint
            .as_ref()
            .and_then(|c| c.resume.as_ref())
            .map_or(0, |r| r.len() + 4096);
    if size > MAX_COMMAND_ENV {
        return Err(format!(
            "command and env values are {size} bytes; the limit is {} KiB in all (pass large data in a file under `inputs`)",
            MAX_COMMAND_ENV / 1024
        ));
    }
    let spec = serde_json::to_vec(m).map_err(|e| e.to_string())?.len();
    if spec > MAX_SPEC {
        return Err(format!(
            "the task's spec is {spec} bytes; the limit is {} MiB",
            MAX_SPEC / (1024 * 1024)
        ));
    }
    Ok(())
}

fn check_params(params: &BTreeMap<String, String>) -> Result<(), String> {
    for (k, v) in params {
        if k.is_empty() || !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!(
                "sweep parameter `{}` must be letters, digits and `_`",
                k.escape_debug()
            ));
        }
        no_nul(&format!("sweep value of `{k}`"), v)?;
    }
    Ok(())
}

fn no_nul(what: &str, s: &str) -> Result<(), String> {
    if s.contains('\0') {
        return Err(format!(
            "{what} contains a NUL byte (\\0), which no program can receive"
        ));
    }
    Ok(())
}

/// Rejects a submission whose local dependencies form a cycle, naming it.
pub fn check_cycles(entries: &[NewEntry]) -> Result<(), String> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Active,
        Done,
    }
    // Iterative depth-first search: a hostile request cannot overflow the stack.
    let mut marks = vec![Mark::New; entries.len()];
    for start in 0..entries.len() {
        if marks[start] != Mark::New {
            continue;
        }
        let mut path: Vec<(usize, usize)> = vec![(start, 0)];
        marks[start] = Mark::Active;
        while let Some(top) = path.last_mut() {
            let node = top.0;
            let deps = &entries[node].deps;
            if top.1 >= deps.len() {
                marks[node] = Mark::Done;
                path.pop();
                continue;
            }
            let k = top.1;
            top.1 += 1;
            let DepTarget::Local(j) = deps[k].0 else {
                continue;
            };
            let Some(mark) = marks.get(j).copied() else {
                return Err(format!("dependency on entry {j}, which does not exist"));
            };
            match mark {
                Mark::Done => {}
                Mark::Active => {
                    let from = path.iter().position(|p| p.0 == j).unwrap_or(0);
                    let mut names: Vec<&str> = path[from..]
                        .iter()
                        .map(|p| entries[p.0].name.as_str())
                        .collect();
                    names.push(entries[j].name.as_str());
                    return Err(format!("dependency cycle: {}", names.join(" -> ")));
                }
                Mark::New => {
                    marks[j] = Mark::Active;
                    path.push((j, 0));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_allow_the_safe_set_only() {
        assert!(check_name("name", "train-v2_1.0").is_ok());
        for bad in [
            "",
            ".hidden",
            "../../etc/x",
            "a b",
            "a/b",
            "é",
            "x\u{1b}[31m",
        ] {
            let err = check_name("name", bad).unwrap_err();
            assert!(err.contains("letters, digits"), "{bad}: {err}");
        }
        let long = "a".repeat(129);
        assert!(
            check_name("project", &long)
                .unwrap_err()
                .contains("129 bytes")
        );
        assert!(check_name("project", &"a".repeat(128)).is_ok());
    }

    #[test]
    fn default_names_are_made_safe() {
        assert_eq!(sanitize_name("my prog.sh"), "my_prog.sh");
        assert_eq!(sanitize_name(".hidden"), "hidden");
        assert_eq!(sanitize_name(""), "task");
        assert!(check_name("name", &sanitize_name(&"é".repeat(200))).is_ok());
    }
}
