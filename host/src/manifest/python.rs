//! The Python environment a task's env activates: `VIRTUAL_ENV` (the
//! packages by `pip freeze`, time-bounded) or `CONDA_PREFIX` (the packages
//! from its `conda-meta` folder, as `conda list --export` prints them,
//! without starting conda). A list is kept in memory until the
//! environment's package folders change, so a night of runs in one
//! environment asks pip once. pip runs as the task's owner and the lists
//! are kept per owner: one user's list is never another's answer.

use std::collections::{BTreeMap, HashMap};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::privsep::Owned;
use crate::sync::LockUnpoisoned;
use crate::sys::bounded;
use nightjar_core::api::manifest::PythonEnv;

/// Most bytes of `pip freeze` output kept.
const MAX_LIST: usize = 1 << 20;

/// Most `conda-meta` entries read.
const MAX_CONDA: usize = 50_000;

/// The environment `env` activates: (`venv` or `conda`, its folder).
pub fn active(env: &BTreeMap<String, String>) -> Option<(&'static str, PathBuf)> {
    let set = |k: &str| env.get(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    set("VIRTUAL_ENV")
        .map(|p| ("venv", p))
        .or_else(|| set("CONDA_PREFIX").map(|p| ("conda", p)))
}

/// The stamp of an environment's package folders: they change when a
/// package is installed or removed.
type Stamp = Vec<(PathBuf, i64)>;

/// Lists by (the uid that read it, or none for the daemon's own; prefix).
type Lists = HashMap<(Option<u32>, PathBuf), (Stamp, PythonEnv)>;

static LISTS: Mutex<Option<Lists>> = Mutex::new(None);

/// The packages of the environment at `prefix`; `env` is the run's
/// environment (pip runs in it), `timeout` bounds pip.
pub fn capture(
    kind: &str,
    prefix: &Path,
    env: &BTreeMap<String, String>,
    timeout: Duration,
    owned: Owned<'_>,
) -> PythonEnv {
    let stamp = stamp(kind, prefix);
    let key = (owned.uid(), prefix.to_path_buf());
    if !stamp.is_empty() {
        let lists = LISTS.lock_unpoisoned();
        if let Some((s, list)) = lists.as_ref().and_then(|m| m.get(&key))
            && *s == stamp
        {
            return list.clone();
        }
    }
    let list = match kind {
        "conda" => conda(prefix),
        _ => pip(prefix, env, timeout, owned),
    };
    if !stamp.is_empty() && (list.note.is_none() || !list.packages.is_empty()) {
        let mut lists = LISTS.lock_unpoisoned();
        let map = lists.get_or_insert_with(HashMap::new);
        if map.len() > 256 {
            map.clear();
        }
        map.insert(key, (stamp, list.clone()));
    }
    list
}

fn stamp(kind: &str, prefix: &Path) -> Stamp {
    let mut dirs = Vec::new();
    if kind == "conda" {
        dirs.push(prefix.join("conda-meta"));
    } else {
        for lib in ["lib", "lib64"] {
            let at = prefix.join(lib);
            if let Ok(rd) = crate::privsep::open::read_dir(&at) {
                for e in rd.flatten().take(16) {
                    dirs.push(at.join(e.file_name()).join("site-packages"));
                }
            }
        }
    }
    dirs.into_iter()
        .filter_map(|d| {
            let m = crate::privsep::open::metadata(&d, true).ok()?;
            Some((d, m.mtime() * 1_000_000_000 + m.mtime_nsec()))
        })
        .collect()
}

fn pip(
    prefix: &Path,
    env: &BTreeMap<String, String>,
    timeout: Duration,
    owned: Owned<'_>,
) -> PythonEnv {
    let mut out = PythonEnv {
        kind: "venv".into(),
        prefix: prefix.to_path_buf(),
        packages: Vec::new(),
        source: "pip freeze".into(),
        note: None,
    };
    let python = prefix.join("bin/python");
    let mut text = Vec::new();
    let mut cmd = match owned.command(&python) {
        Ok(c) => c,
        Err(e) => {
            out.note = Some(format!("skipped: {e}"));
            return out;
        }
    };
    cmd.args(["-m", "pip", "freeze", "--disable-pip-version-check"])
        .env_clear()
        .envs(env)
        .env("PIP_NO_INPUT", "1")
        .current_dir(prefix);
    let ran = bounded::run(&mut cmd, Instant::now() + timeout, |b| {
        let room = MAX_LIST.saturating_sub(text.len());
        text.extend_from_slice(&b[..b.len().min(room)]);
    });
    match ran {
        Err(e) => out.note = Some(format!("skipped: cannot run {} ({e})", python.display())),
        Ok(r) if r.timed_out => {
            out.note = Some(format!(
                "skipped: pip freeze took longer than {} (raise [manifest] python_timeout)",
                humantime::format_duration(timeout)
            ))
        }
        Ok(r) if !r.ok() => {
            out.note = Some(format!(
                "skipped: pip freeze failed: {}",
                r.first_line().chars().take(300).collect::<String>()
            ))
        }
        Ok(_) => {
            out.packages = String::from_utf8_lossy(&text)
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(String::from)
                .collect();
            if text.len() >= MAX_LIST {
                out.note = Some("the list was cut at 1 MiB".into());
            }
        }
    }
    out
}

/// `name=version=build` for each `conda-meta/NAME-VERSION-BUILD.json`
/// (conda's own naming: version and build never hold a `-`).
fn conda(prefix: &Path) -> PythonEnv {
    let mut out = PythonEnv {
        kind: "conda".into(),
        prefix: prefix.to_path_buf(),
        packages: Vec::new(),
        source: "conda-meta".into(),
        note: None,
    };
    let meta = prefix.join("conda-meta");
    let rd = match crate::privsep::open::read_dir(&meta) {
        Ok(rd) => rd,
        Err(e) => {
            out.note = Some(format!("skipped: cannot read {}: {e}", meta.display()));
            return out;
        }
    };
    let mut bytes = 0usize;
    let mut entries = 0usize;
    for e in rd.flatten() {
        entries += 1;
        if entries > MAX_CONDA || bytes >= MAX_LIST {
            out.note = Some(format!(
                "the list was cut at {} packages or 1 MiB (conda-meta holds more)",
                out.packages.len()
            ));
            break;
        }
        let name = e.file_name();
        let Some(stem) = name.to_str().and_then(|n| n.strip_suffix(".json")) else {
            continue;
        };
        let mut parts = stem.rsplitn(3, '-');
        if let (Some(build), Some(version), Some(pkg)) = (parts.next(), parts.next(), parts.next())
        {
            let line = format!("{pkg}={version}={build}");
            bytes += line.len() + 1;
            out.packages.push(line);
        }
    }
    out.packages.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn virtual_env_wins_and_empty_values_do_not_count() {
        let mut env = BTreeMap::new();
        env.insert("CONDA_PREFIX".to_string(), "/opt/conda/envs/x".to_string());
        assert_eq!(active(&env).unwrap().0, "conda");
        env.insert("VIRTUAL_ENV".to_string(), String::new());
        assert_eq!(active(&env).unwrap().0, "conda");
        env.insert("VIRTUAL_ENV".to_string(), "/srv/venv".to_string());
        assert_eq!(active(&env), Some(("venv", PathBuf::from("/srv/venv"))));
        assert_eq!(active(&BTreeMap::new()), None);
    }

    #[test]
    fn a_conda_env_is_read_from_its_meta_folder() {
        let dir = tempfile::tempdir().unwrap();
        let meta = dir.path().join("conda-meta");
        std::fs::create_dir(&meta).unwrap();
        for f in [
            "numpy-1.26.4-py311h64a7726_0.json",
            "ca-certificates-2024.2.2-hbcca054_0.json",
            "history",
        ] {
            std::fs::write(meta.join(f), "{}").unwrap();
        }
        let env = capture(
            "conda",
            dir.path(),
            &BTreeMap::new(),
            Duration::from_secs(1),
            Owned::own(),
        );
        assert_eq!(
            env.packages,
            [
                "ca-certificates=2024.2.2=hbcca054_0",
                "numpy=1.26.4=py311h64a7726_0"
            ]
        );
        assert_eq!(env.note, None);
    }

    #[test]
    fn a_pip_that_hangs_is_skipped_with_a_note_in_time() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let python = bin.join("python");
        std::fs::write(&python, "#!/bin/sh\nsleep 30\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
        let t0 = Instant::now();
        let env = capture(
            "venv",
            dir.path(),
            &BTreeMap::new(),
            Duration::from_millis(300),
            Owned::own(),
        );
        assert!(t0.elapsed() < Duration::from_secs(5));
        assert!(env.note.unwrap().contains("took longer than 300ms"));
        let missing = capture(
            "venv",
            &dir.path().join("nope"),
            &BTreeMap::new(),
            Duration::from_secs(1),
            Owned::own(),
        );
        assert!(missing.note.unwrap().starts_with("skipped: cannot run"));
    }
}
