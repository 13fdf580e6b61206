//! `[[validate]]` in a task file (or a project's list in the daemon
//! config): which result validator judges the task's runs, and the table it
//! is configured with.

use std::path::Path;

use super::model::ValidatorRef;

/// The validators built into the daemon.
pub const BUILT_IN: &[&str] = &["outputs"];

/// Longest validator table, as TOML text.
pub const MAX_CONFIG: usize = 64 << 10;

/// Most validators one task may name.
pub const MAX_VALIDATORS: usize = 16;

/// Resolves `[[validate]]` tables: `plugin` is a built-in name or a path to
/// a `.wasm` result validator, relative to `base` (the task file's folder);
/// the rest of each table is the validator's own config.
pub fn resolve(defs: &[toml::Table], base: &Path) -> Result<Vec<ValidatorRef>, String> {
    if defs.len() > MAX_VALIDATORS {
        return Err(format!(
            "validate: {} validators; at most {MAX_VALIDATORS} judge one task",
            defs.len()
        ));
    }
    defs.iter()
        .enumerate()
        .map(|(i, t)| resolve_one(t, base).map_err(|e| format!("validate[{}]: {e}", i + 1)))
        .collect()
}

fn resolve_one(table: &toml::Table, base: &Path) -> Result<ValidatorRef, String> {
    let plugin = match table.get("plugin") {
        Some(toml::Value::String(s)) if !s.trim().is_empty() => s.trim(),
        Some(_) => return Err("`plugin` must be a name or a path (text)".into()),
        None => {
            return Err(format!(
                "`plugin` is missing: name a built-in validator ({}) or the path of a .wasm result validator",
                BUILT_IN.join(", ")
            ));
        }
    };
    let plugin = if BUILT_IN.contains(&plugin) {
        plugin.to_string()
    } else if plugin.contains('/') || plugin.ends_with(".wasm") {
        let path = base.join(plugin);
        if !path.is_file() {
            return Err(format!(
                "plugin {} does not exist or is not a file; build the validator or fix the path (relative paths start at the task file's folder)",
                path.display()
            ));
        }
        std::path::absolute(&path)
            .map_err(|e| format!("plugin {}: {e}", path.display()))?
            .display()
            .to_string()
    } else {
        return Err(format!(
            "`{}` is not a built-in validator ({}); give the path of a .wasm result validator instead",
            plugin.escape_debug(),
            BUILT_IN.join(", ")
        ));
    };
    let mut rest = table.clone();
    rest.remove("plugin");
    let config = toml::to_string(&rest).map_err(|e| format!("cannot write its table: {e}"))?;
    let r = ValidatorRef { plugin, config };
    check(&r)?;
    Ok(r)
}

/// What the daemon re-checks of a reference it receives.
pub fn check(r: &ValidatorRef) -> Result<(), String> {
    if !BUILT_IN.contains(&r.plugin.as_str()) && !Path::new(&r.plugin).is_absolute() {
        return Err(format!(
            "plugin `{}` is neither built in nor an absolute path",
            r.plugin.escape_debug()
        ));
    }
    if r.plugin.contains('\0') || r.config.contains('\0') {
        return Err("a NUL byte in the validator's table".into());
    }
    if r.config.len() > MAX_CONFIG {
        return Err(format!(
            "its table is {} bytes; at most {MAX_CONFIG}",
            r.config.len()
        ));
    }
    r.config
        .parse::<toml::Table>()
        .map_err(|e| format!("its table is not TOML: {e}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tables(text: &str) -> Vec<toml::Table> {
        let t: toml::Table = text.parse().unwrap();
        t["validate"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_table().unwrap().clone())
            .collect()
    }

    #[test]
    fn a_built_in_keeps_its_name_and_its_table_becomes_its_config() {
        let dir = tempfile::tempdir().unwrap();
        let r = resolve(
            &tables("[[validate]]\nplugin = \"outputs\"\nrequired = [\"a.json\"]\n"),
            dir.path(),
        )
        .unwrap();
        assert_eq!(r[0].plugin, "outputs");
        let config: toml::Table = r[0].config.parse().unwrap();
        assert_eq!(config["required"][0].as_str(), Some("a.json"));
        assert!(config.get("plugin").is_none(), "`plugin` is the host's");
    }

    #[test]
    fn a_path_is_made_absolute_from_the_task_file_and_must_exist() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("v.wasm"), b"x").unwrap();
        let r = resolve(&tables("[[validate]]\nplugin = \"v.wasm\"\n"), dir.path()).unwrap();
        assert_eq!(
            Path::new(&r[0].plugin),
            std::path::absolute(dir.path().join("v.wasm")).unwrap()
        );
        let e = resolve(
            &tables("[[validate]]\nplugin = \"gone.wasm\"\n"),
            dir.path(),
        )
        .unwrap_err();
        assert!(
            e.starts_with("validate[1]: plugin") && e.contains("gone.wasm"),
            "{e}"
        );
    }

    #[test]
    fn unknown_names_and_missing_plugins_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let e = resolve(&tables("[[validate]]\nplugin = \"outptus\"\n"), dir.path()).unwrap_err();
        assert!(
            e.contains("`outptus` is not a built-in validator (outputs)"),
            "{e}"
        );
        let e = resolve(&tables("[[validate]]\nrequired = []\n"), dir.path()).unwrap_err();
        assert!(e.contains("`plugin` is missing"), "{e}");
        let e = resolve(&tables("[[validate]]\nplugin = 3\n"), dir.path()).unwrap_err();
        assert!(e.contains("`plugin` must be"), "{e}");
    }
}
