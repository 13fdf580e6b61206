//! `nightjard plugins check FILE` and `plugins test FILE --snapshot S.json`:
//! a component loaded as the daemon would load it, without a daemon.

use std::path::Path;

use anyhow::{Context, Result};

use super::engine::PluginEngine;
use super::policy::{Evaluation, PluginLimits, Snapshot};
use super::worker::Worker;
use super::{source, validate};

/// The limits the daemon would run plugins under: those of the config
/// (`--config`), else the defaults.
pub fn daemon_limits(config: Option<&Path>) -> Result<PluginLimits> {
    let cfg = crate::config::Config::load(config, None)?;
    Ok(cfg.plugins.limits())
}

/// Largest snapshot file `plugins test` reads: a 100,000-task queue writes
/// about 50 MiB of JSON; past this it is the wrong file (`/dev/zero`).
const MAX_SNAPSHOT: u64 = 256 << 20;

/// The text of snapshot file `p`, refused past [`MAX_SNAPSHOT`] bytes.
fn read_snapshot(p: &Path) -> Result<String> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(p)
        .and_then(|f| f.take(MAX_SNAPSHOT + 1).read_to_end(&mut bytes))
        .with_context(|| format!("read {}", p.display()))?;
    if bytes.len() as u64 > MAX_SNAPSHOT {
        anyhow::bail!(
            "snapshot {} is larger than {} MiB: is it the right file?",
            p.display(),
            MAX_SNAPSHOT >> 20
        );
    }
    String::from_utf8(bytes).with_context(|| format!("snapshot {}: not UTF-8 text", p.display()))
}

/// Loads `file` as the daemon would: a regular file under the size cap, on a
/// worker thread behind the watchdog, with the daemon's limits.
fn load(file: &Path, config: Option<&Path>, limits: &PluginLimits) -> Result<Worker> {
    let wasm = source::read(file, limits.max_file_size)?;
    let config = match config {
        // A plugin's config is a config file: the same 1 MiB cap.
        Some(c) => nightjar_core::paths::read_config(c).map_err(anyhow::Error::msg)?,
        None => String::new(),
    };
    let name = file
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("plugin");
    let engine = PluginEngine::new(None)?;
    Worker::start(&engine, name, wasm, config, limits.clone())
        .map_err(|e| anyhow::anyhow!("{}: {e} ({})", file.display(), e.cause()))
}

/// The interface a result validator exports, as its bytes spell it.
const VALIDATE_EXPORT: &[u8] = b"nightjar:plugin/validate@";

/// The interface a notifier exports, as its bytes spell it.
const NOTIFY_EXPORT: &[u8] = b"nightjar:plugin/notify@";

/// `plugins check`: a scheduling policy, or else a result validator, or a
/// notifier (told apart by the interface its bytes name).
pub fn check(file: &Path, config: Option<&Path>, limits: &PluginLimits) -> Result<i32> {
    // A validator's export name is in its bytes: try that world first, so
    // the component is compiled once (the other world stays the fallback).
    let wasm = source::read(file, limits.max_file_size)?;
    let names = |export: &[u8]| wasm.windows(export.len()).any(|w| w == export);
    let validator_first = names(VALIDATE_EXPORT);
    let notifier = names(NOTIFY_EXPORT);
    drop(wasm);
    if notifier && !validator_first {
        println!("{}", check_notifier(file, config, limits)?);
        return Ok(0);
    }
    if validator_first && let Some(line) = check_validator(file, config, limits)? {
        println!("{line}");
        return Ok(0);
    }
    let p = match load(file, config, limits) {
        Ok(p) => p,
        Err(e) if validator_first => return Err(e),
        Err(e) => match check_validator(file, config, limits)? {
            Some(line) => {
                println!("{line}");
                return Ok(0);
            }
            None => return Err(e),
        },
    };
    println!(
        "{}: ok ({}, nightjar:plugin@{}, sha256 {})",
        file.display(),
        p.version.exported.world(),
        p.version.api,
        p.sha256
    );
    if let Some(note) = p.version.note() {
        println!("note: {note}");
    }
    Ok(0)
}

/// `Some(ok line)` when `file` is a result validator that accepts `config`;
/// `None` when it is not a validator at all (the policy error then stands);
/// an error when it is one but fails.
fn check_validator(
    file: &Path,
    config: Option<&Path>,
    limits: &PluginLimits,
) -> Result<Option<String>> {
    use super::validator::ValidatorPlugin;
    let wasm = source::read(file, limits.max_file_size)?;
    let name = super::validator::name_of(file);
    let engine = PluginEngine::new(None)?;
    let v = match ValidatorPlugin::load(&engine, &name, &wasm, limits.clone()) {
        Ok(v) => std::sync::Arc::new(v),
        Err(super::policy::PluginError::NotValidator(_)) => return Ok(None),
        Err(e) => anyhow::bail!("{}: {e} ({})", file.display(), e.cause()),
    };
    let text = match config {
        Some(c) => nightjar_core::paths::read_config(c).map_err(anyhow::Error::msg)?,
        None => String::new(),
    };
    v.configure(&text)
        .map_err(|e| anyhow::anyhow!("{}: {e} ({})", file.display(), e.cause()))?;
    Ok(Some(format!(
        "{}: ok (result-validator, nightjar:plugin@{}, sha256 {})",
        file.display(),
        v.contract,
        v.sha256
    )))
}

/// The ok line for `file`, a notifier that accepts `config`; an error
/// naming the file when it is not one or refuses its config.
fn check_notifier(file: &Path, config: Option<&Path>, limits: &PluginLimits) -> Result<String> {
    use super::notifier::NotifierPlugin;
    let wasm = source::read(file, limits.max_file_size)?;
    let name = super::validator::name_of(file);
    let engine = PluginEngine::new(None)?;
    let n = NotifierPlugin::load(&engine, &name, &wasm, limits.clone())
        .map(std::sync::Arc::new)
        .map_err(|e| anyhow::anyhow!("{}: {e} ({})", file.display(), e.cause()))?;
    let text = match config {
        Some(c) => nightjar_core::paths::read_config(c).map_err(anyhow::Error::msg)?,
        None => String::new(),
    };
    n.configure(&text)
        .map_err(|e| anyhow::anyhow!("{}: {e} ({})", file.display(), e.cause()))?;
    Ok(format!(
        "{}: ok (notifier, nightjar:plugin@{}, sha256 {})",
        file.display(),
        n.contract,
        n.sha256
    ))
}

/// `plugins test`.
pub fn test(
    file: &Path,
    snapshot: &Path,
    config: Option<&Path>,
    limits: &PluginLimits,
) -> Result<i32> {
    let answer = answer(file, snapshot, config, limits)?;
    println!("{}", serde_json::to_string_pretty(&answer)?);
    Ok(0)
}

/// The validated answer `plugins test` prints.
fn answer(
    file: &Path,
    snapshot: &Path,
    config: Option<&Path>,
    limits: &PluginLimits,
) -> Result<Evaluation> {
    let text = read_snapshot(snapshot)?;
    let snap: Snapshot =
        serde_json::from_str(&text).with_context(|| format!("snapshot {}", snapshot.display()))?;
    let p = load(file, config, limits)?;
    let answer = p
        .evaluate(std::sync::Arc::new(snap.clone()))
        .result
        .map_err(|e| anyhow::anyhow!("{}: {e} ({})", file.display(), e.cause()))?;
    validate::check(&snap, &answer).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    // The documented form: a verdict for each task judged, an incremental
    // policy's score column read back as the allows it stands for.
    Ok(Evaluation {
        verdicts: answer.all_verdicts(&snap.queue),
        scores: Vec::new(),
        ..answer
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::policy::{Priority, TaskVerdict, Verdict};
    use crate::plugins::tests::{snapshot, task};

    /// `plugins test` prints the documented form: a verdict for each task
    /// the policy judged, an incremental policy's score column included
    /// (as allows), and no column of its own.
    #[test]
    fn plugins_test_prints_an_incremental_policys_scores_as_verdicts() {
        let dir = tempfile::tempdir().unwrap();
        let wasm = dir.path().join("priority.wasm");
        let priority = (super::super::first_party::FIRST_PARTY.iter())
            .find(|(n, _)| *n == "priority")
            .map(|(_, w)| *w)
            .unwrap();
        std::fs::write(&wasm, priority).unwrap();
        let snap = dir.path().join("snap.json");
        let s = snapshot(vec![
            task(7, "p", Priority::Normal, 0),
            task(8, "p", Priority::High, 0),
        ]);
        std::fs::write(&snap, serde_json::to_string(&s).unwrap()).unwrap();
        // Deadlines a loaded machine cannot miss (the default is 100 ms).
        let limits = PluginLimits {
            evaluate_timeout: std::time::Duration::from_secs(10),
            configure_timeout: std::time::Duration::from_secs(10),
            ..PluginLimits::default()
        };
        let answer = answer(&wasm, &snap, None, &limits).unwrap();
        let scores: Vec<(i64, bool)> = (answer.verdicts.iter())
            .map(|v: &TaskVerdict| (v.task, matches!(v.verdict, Verdict::Allow(n) if n > 0)))
            .collect();
        assert_eq!(scores, [(7, true), (8, true)], "{answer:?}");
        let json = serde_json::to_value(&answer).unwrap();
        assert!(json.get("scores").is_none(), "{json}");
        assert_eq!(json["verdicts"][1]["task"], 8, "{json}");
    }
}
