//! Turns task definitions into a checked submission: absolute paths, sweeps
//! expanded, variables and schedules validated, dependencies resolved and
//! free of cycles. Everything that can be wrong is an error here, at submit.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::file::{DepRef, TaskDef};
use super::model::{DepKind, DepTarget, NewEntry, TaskSpec};
use super::{schedule, vars};

/// Most members one sweep may expand to.
pub use super::grid::MAX_SWEEP;

/// Resolves `defs`; relative paths are taken from `base` (the task file's
/// folder, or the current directory for `submit -- CMD`); `default_name`
/// names a lone unnamed task.
pub fn resolve(defs: &[TaskDef], base: &Path, default_name: &str) -> Result<Vec<NewEntry>, String> {
    let names: Vec<String> = defs
        .iter()
        .enumerate()
        .map(|(i, d)| match &d.name {
            Some(n) => n.clone(),
            None if defs.len() == 1 => super::check::sanitize_name(default_name),
            None => format!("{}-{}", super::check::sanitize_name(default_name), i + 1),
        })
        .collect();
    let mut entries = Vec::with_capacity(defs.len());
    for (i, def) in defs.iter().enumerate() {
        let name = &names[i];
        let entry = resolve_one(def, name, base, &names)
            .map_err(|e| format!("task `{}`: {e}", name.escape_debug()))?;
        entries.push(entry);
    }
    super::check::check_entries(&entries)?;
    Ok(entries)
}

fn resolve_one(
    def: &TaskDef,
    name: &str,
    base: &Path,
    names: &[String],
) -> Result<NewEntry, String> {
    super::check::check_name("name", name)?;
    let project = def.project.clone().unwrap_or_else(|| "default".into());
    super::check::check_name("project", &project)?;
    let workdir = absolute(base, def.workdir.as_deref().unwrap_or(Path::new(".")));
    if !workdir.is_dir() {
        return Err(format!(
            "workdir {} does not exist or is not a folder; create it or fix `workdir`",
            workdir.display()
        ));
    }
    let inputs: Vec<PathBuf> = def.inputs.iter().map(|p| absolute(&workdir, p)).collect();
    if let Some(missing) = inputs.iter().find(|p| !p.exists()) {
        return Err(format!("input {} does not exist", missing.display()));
    }
    for key in def.env.keys() {
        if key.is_empty() || key.contains('=') || key.contains('\0') {
            return Err(format!("env key `{key}` is not a valid variable name"));
        }
        if key.starts_with("NIGHTJAR_") {
            return Err(format!(
                "env key `{key}`: NIGHTJAR_* variables are set by the host"
            ));
        }
    }
    let params: Vec<&str> = def.sweep.keys().map(String::as_str).collect();
    if let Some(bad) = params.iter().find(|p| vars::BUILTINS.contains(p)) {
        return Err(format!(
            "sweep parameter `{bad}` shadows a built-in variable; rename it"
        ));
    }
    let templates = def
        .command
        .0
        .to_argv()
        .into_iter()
        .chain(def.env.values().cloned())
        .chain(def.output.clone());
    for t in templates {
        vars::check(&t, &params).map_err(|e| e.to_string())?;
    }
    if let Some(s) = &def.schedule {
        schedule::parse(s)?;
        if !def.sweep.is_empty() {
            return Err("a recurring task cannot also be a sweep; submit the sweep from a schedule-free file".into());
        }
        if !def.after.is_empty() || !def.after_any.is_empty() {
            return Err("a recurring task cannot have dependencies".into());
        }
    }
    let checkpoint = def
        .checkpoint
        .as_ref()
        .map(|c| c.resolve(&params, def.output.is_some()))
        .transpose()?;
    def.retry.check()?;
    if def.resources.cpus == Some(0) {
        return Err("resources.cpus must be at least 1 when set".into());
    }

    let mut deps = Vec::new();
    for (list, kind) in [
        (&def.after, DepKind::AfterOk),
        (&def.after_any, DepKind::AfterAny),
    ] {
        for d in list {
            let target = match d {
                DepRef::Id(id) => DepTarget::Existing(*id),
                DepRef::Name(n) => {
                    let hits: Vec<usize> = names
                        .iter()
                        .enumerate()
                        .filter(|(_, x)| *x == n)
                        .map(|(i, _)| i)
                        .collect();
                    match hits.as_slice() {
                        [i] => DepTarget::Local(*i),
                        [] => {
                            return Err(format!(
                                "unknown dependency `{n}`: no task of that name in this submission (use a task id for one already queued)"
                            ));
                        }
                        _ => {
                            return Err(format!(
                                "dependency `{n}` is ambiguous: several tasks have that name"
                            ));
                        }
                    }
                }
            };
            deps.push((target, kind));
        }
    }

    let validate = super::validate::resolve(&def.validate, base)?;
    let environment = match &def.environment {
        Some(e) => super::environment::resolve(e, base)?,
        None => None,
    };
    let values: BTreeMap<String, Vec<String>> = def
        .sweep
        .iter()
        .map(|(k, v)| (k.clone(), v.iter().map(|s| s.0.clone()).collect()))
        .collect();
    let is_sweep = !def.sweep.is_empty();
    let template = TaskSpec {
        name: name.to_string(),
        project: project.clone(),
        command: def.command.0.clone(),
        workdir: workdir.clone(),
        env: def.env.clone(),
        inputs: inputs.clone(),
        output: def.output.clone(),
        priority: def.priority,
        resources: def.resources.clone(),
        retry: def.retry.clone(),
        params: BTreeMap::new(),
        preemptible: def.preemptible,
        validate: validate.clone(),
        owner: None,
        umask: None,
        checkpoint: checkpoint.clone().map(Box::new),
        seed: def.seed,
        cache: def.cache,
        environment: environment.clone().map(Box::new),
    };
    let members = super::grid::combinations(&values)?
        .iter()
        .map(|p| super::grid::member(&template, p, is_sweep))
        .collect::<Result<Vec<_>, String>>()?;
    Ok(NewEntry {
        name: name.to_string(),
        project,
        members,
        is_sweep,
        schedule: def.schedule.clone(),
        deps,
        held: def.hold,
        no_cache: false,
        grid: is_sweep.then_some(super::grid::Grid { template, values }),
    })
}

/// `p` made absolute against `base`, with `.` and `..` folded away.
pub(crate) fn absolute(base: &Path, p: &Path) -> PathBuf {
    use std::path::Component;
    let joined = if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::file::{Format, parse};

    fn go(text: &str) -> Result<Vec<NewEntry>, String> {
        let dir = std::env::temp_dir();
        resolve(&parse(text, Format::Toml)?, &dir, "t")
    }

    #[test]
    fn sweep_expands_to_one_member_per_combination() {
        let e = go("command = \"train --lr ${lr} --seed ${seed} --out ${OUTPUT_PATH}\"\n[sweep]\nlr = [0.1, 0.01]\nseed = [1, 2, 3]\n").unwrap();
        assert_eq!(e[0].members.len(), 6);
        assert!(e[0].is_sweep);
        let first = &e[0].members[0];
        assert_eq!(first.name, "t[lr=0.1,seed=1]");
        assert_eq!(
            first.command.display(),
            "train --lr 0.1 --seed 1 --out ${OUTPUT_PATH}"
        );
    }

    #[test]
    fn unknown_variable_fails_at_submit() {
        let err = go("command = \"echo ${NOPE}\"\n").unwrap_err();
        assert!(err.contains("NOPE"), "{err}");
    }

    #[test]
    fn unknown_dependency_fails_at_submit() {
        let err =
            go("[[task]]\nname = \"a\"\ncommand = \"true\"\nafter = [\"ghost\"]\n").unwrap_err();
        assert!(err.contains("ghost"), "{err}");
    }

    #[test]
    fn cycle_is_named() {
        let err = go("[[task]]\nname = \"a\"\ncommand = \"true\"\nafter = [\"b\"]\n[[task]]\nname = \"b\"\ncommand = \"true\"\nafter = [\"a\"]\n").unwrap_err();
        assert!(err.contains("cycle: a -> b -> a"), "{err}");
    }

    #[test]
    fn a_sweep_value_is_substituted_once_and_stays_literal_at_dispatch() {
        let e =
            go("command = \"echo ${v}\"\n[sweep]\nv = [\"${TASK_ID}\", \"$${HOME}\"]\n").unwrap();
        let dispatch = |m: &TaskSpec| {
            vars::expand(&m.command.display(), true, |n| {
                Some(vars::Subst::Value(format!("<{n}>")))
            })
            .unwrap()
        };
        assert_eq!(dispatch(&e[0].members[0]), "echo ${TASK_ID}");
        assert_eq!(dispatch(&e[0].members[1]), "echo $${HOME}");
        assert_eq!(e[0].members[0].params["v"], "${TASK_ID}");
    }

    #[test]
    fn self_dependency_and_bad_names_are_refused() {
        let err = go("[[task]]\nname = \"a\"\ncommand = \"true\"\nafter = [\"a\"]\n").unwrap_err();
        assert!(err.contains("depends on itself"), "{err}");
        let err = go("name = \"../../etc/x\"\ncommand = \"true\"\n").unwrap_err();
        assert!(err.contains("contains `/`"), "{err}");
        let err = go("project = \".x\"\ncommand = \"true\"\n").unwrap_err();
        assert!(err.contains("project `.x` starts with a dot"), "{err}");
        let err = go("command = \"true\"\n[retry]\nmax_attempts = 0\n").unwrap_err();
        assert!(err.contains("max_attempts"), "{err}");
    }

    #[test]
    fn paths_are_absolute_without_dot_segments() {
        assert_eq!(
            absolute(Path::new("/a/b"), Path::new("./c/../d")),
            PathBuf::from("/a/b/d")
        );
        assert_eq!(
            absolute(Path::new("/a/b"), Path::new(".")),
            PathBuf::from("/a/b")
        );
    }

    #[test]
    fn missing_workdir_is_named() {
        let err = go("command = \"true\"\nworkdir = \"/definitely/not/here\"\n").unwrap_err();
        assert!(err.contains("/definitely/not/here"), "{err}");
    }

    #[test]
    fn checkpoint_takes_sweep_values_and_errors_name_the_task() {
        let e = go("command = \"train\"\ncheckpoint = { pattern = \"ck-${lr}/*.pt\", resume = \"--from ${CHECKPOINT} --lr ${lr}\", signal = \"usr1\" }\n[sweep]\nlr = [0.1]\n").unwrap();
        let c = e[0].members[0].checkpoint.clone().unwrap();
        assert_eq!(c.pattern, "ck-0.1/*.pt");
        assert_eq!(c.resume.as_deref(), Some("--from ${CHECKPOINT} --lr 0.1"));
        assert_eq!(c.signal, "SIGUSR1");
        let err = go("command = \"train\"\ncheckpoint = { pattern = \"\" }\n").unwrap_err();
        assert!(
            err.starts_with("task `t`: checkpoint.pattern is empty"),
            "{err}"
        );
    }

    #[test]
    fn local_and_existing_dependencies_resolve() {
        let e = go("[[task]]\nname = \"a\"\ncommand = \"true\"\n[[task]]\nname = \"b\"\ncommand = \"true\"\nafter = [\"a\", 7]\nafter_any = [\"a\"]\n").unwrap();
        assert_eq!(
            e[1].deps,
            vec![
                (DepTarget::Local(0), DepKind::AfterOk),
                (DepTarget::Existing(7), DepKind::AfterOk),
                (DepTarget::Local(0), DepKind::AfterAny)
            ]
        );
    }
}
