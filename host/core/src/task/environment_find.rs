//! Finding a conda environment by name, as the submitting user sees it:
//! first through the conda-like programs on their `PATH` (`conda`, `mamba`,
//! `micromamba`, `$CONDA_EXE`, `$MAMBA_EXE`: `env list --json`, each under
//! a deadline), then in the usual folders (`$CONDA_PREFIX/envs`,
//! `$MAMBA_ROOT_PREFIX/envs`, `~/.conda/envs`).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Time allowed for one `env list --json`.
const LIST_TIMEOUT: Duration = Duration::from_secs(15);
/// Most bytes of its output read.
const MAX_LIST: usize = 4 << 20;

/// The prefix of the conda environment called `name`; the error lists
/// where it looked and says what to do.
pub fn conda_prefix(name: &str) -> Result<PathBuf, String> {
    let mut looked = Vec::new();
    for program in programs() {
        match list_envs(&program) {
            Ok(envs) => {
                if let Some(p) = pick(name, &envs) {
                    return Ok(p);
                }
                looked.push(format!("`{} env list`", program.display()));
            }
            Err(e) => looked.push(format!("`{} env list` ({e})", program.display())),
        }
    }
    for dir in env_dirs() {
        let p = dir.join(name);
        if p.join("conda-meta").is_dir() {
            return Ok(p);
        }
        looked.push(dir.display().to_string());
    }
    Err(format!(
        "environment.conda: no conda environment named `{name}` (looked in: {}); create it (`conda create -n {name}`), or give its prefix path instead of its name",
        if looked.is_empty() {
            "nothing: no conda, mamba or micromamba on PATH and no envs folder".to_string()
        } else {
            looked.join(", ")
        }
    ))
}

/// The environment among `envs` (prefixes) called `name`: its folder's
/// name under an `envs` folder, or `base` for the one that is not.
pub fn pick(name: &str, envs: &[PathBuf]) -> Option<PathBuf> {
    let under_envs = |p: &Path| {
        p.parent()
            .and_then(Path::file_name)
            .is_some_and(|n| n == "envs")
    };
    envs.iter()
        .find(|p| {
            if name == "base" {
                !under_envs(p)
            } else {
                under_envs(p) && p.file_name().is_some_and(|n| n == name)
            }
        })
        .cloned()
}

/// The conda-like programs to ask, each once.
fn programs() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for var in ["CONDA_EXE", "MAMBA_EXE"] {
        if let Some(p) = std::env::var_os(var).map(PathBuf::from)
            && p.is_absolute()
            && p.is_file()
        {
            out.push(p);
        }
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for name in ["conda", "mamba", "micromamba"] {
        if let Some(p) = std::env::split_paths(&path)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
        {
            out.push(p);
        }
    }
    let mut seen = Vec::new();
    out.retain(|p| {
        let key = std::fs::canonicalize(p).unwrap_or_else(|_| p.clone());
        let fresh = !seen.contains(&key);
        seen.push(key);
        fresh
    });
    out
}

/// Folders that hold environments by name.
fn env_dirs() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for var in ["CONDA_PREFIX", "MAMBA_ROOT_PREFIX", "CONDA_ROOT"] {
        if let Some(p) = std::env::var_os(var).map(PathBuf::from) {
            // Inside an activated environment, its siblings are the others.
            if p.parent()
                .and_then(Path::file_name)
                .is_some_and(|n| n == "envs")
            {
                out.extend(p.parent().map(Path::to_path_buf));
            } else {
                out.push(p.join("envs"));
            }
        }
    }
    if let Some(home) = std::env::var_os("HOME") {
        out.push(PathBuf::from(home).join(".conda/envs"));
    }
    out.retain(|d| d.is_absolute());
    out.dedup();
    out
}

/// `PROGRAM env list --json`: the prefixes it lists.
fn list_envs(program: &Path) -> Result<Vec<PathBuf>, String> {
    let mut child = Command::new(program)
        .args(["env", "list", "--json"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut stdout = child.stdout.take().ok_or("no stdout")?;
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = (&mut stdout).take(MAX_LIST as u64).read_to_end(&mut buf);
        buf
    });
    let deadline = Instant::now() + LIST_TIMEOUT;
    let status = loop {
        match child.try_wait().map_err(|e| e.to_string())? {
            Some(s) => break s,
            None if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("took longer than {}s", LIST_TIMEOUT.as_secs()));
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    let text = reader.join().map_err(|_| "reader failed".to_string())?;
    if !status.success() {
        return Err(format!("exited with {status}"));
    }
    parse_list(&text)
}

/// The `envs` of `env list --json` output.
pub fn parse_list(text: &[u8]) -> Result<Vec<PathBuf>, String> {
    #[derive(serde::Deserialize)]
    struct List {
        envs: Vec<PathBuf>,
    }
    serde_json::from_slice::<List>(text)
        .map(|l| l.envs)
        .map_err(|e| format!("unreadable JSON: {e}"))
}
