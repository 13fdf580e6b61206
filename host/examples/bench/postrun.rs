//! `postrun`: what judging a run's end adds to it. A run with 1,000 output
//! files: classification of its 64 KiB log tail, the output manifest (walk
//! and sha256 of every file), and the whole judgement with the built-in
//! `outputs` validator, against `find | xargs sha256sum` over the same folder
//! (what a lab's own script runs to checksum its outputs). Then the peak
//! memory of hashing a 2 GiB file (it must stay flat: the hash streams).

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{Result, bail};
use nightjar::plugins::engine::PluginEngine;
use nightjar::plugins::limits::PluginLimits;
use nightjar::plugins::validator::{RunFacts, Validators};
use nightjar::postrun::{manifest, validate};
use nightjar::sandbox::classify;
use nightjar::task::model::ValidatorRef;

/// Median milliseconds of `runs` calls of `f`.
fn median_ms(runs: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    let mut t = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t0 = Instant::now();
        f()?;
        t.push(t0.elapsed().as_secs_f64() * 1e3);
    }
    t.sort_by(f64::total_cmp);
    Ok(t[t.len() / 2])
}

/// Peak resident memory of this process so far, KiB.
fn max_rss_kib() -> i64 {
    // SAFETY: getrusage writes one rusage into the valid pointer given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above: `u` lives here and is of the type getrusage fills.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    u.ru_maxrss
}

fn outputs(dir: &Path, files: usize) -> Result<()> {
    std::fs::create_dir_all(dir.join("frames"))?;
    for i in 0..files {
        let body: Vec<u8> = (0..4096u32).map(|b| (b ^ i as u32) as u8).collect();
        std::fs::write(dir.join(format!("frames/{i:05}.png")), body)?;
    }
    std::fs::write(
        dir.join("metrics.json"),
        br#"{"loss": 0.21, "accuracy": 0.93}"#,
    )?;
    Ok(())
}

pub fn postrun(files: usize) -> Result<()> {
    println!("== postrun: judging a run with {files} output files ==");
    let tmp = tempfile::tempdir()?;
    // First, while the process is small: the peak it reaches is the hash's.
    let big = tmp.path().join("big");
    std::fs::create_dir_all(&big)?;
    std::fs::File::create(big.join("model.pt"))?.set_len(2 << 30)?;
    let before = max_rss_kib();
    let t0 = Instant::now();
    let m = manifest::walk(&big)?;
    let secs = t0.elapsed().as_secs_f64();
    let grew = max_rss_kib() - before;
    println!(
        "  hashing a 2 GiB file: {secs:.1} s ({:.0} MB/s), peak memory grew {grew} KiB (streams in 64 KiB; goal: flat)",
        m.files[0].size as f64 / secs / 1e6
    );
    let out = tmp.path().join("output");
    outputs(&out, files)?;
    let log = tmp.path().join("stderr");
    std::fs::write(
        &log,
        "x".repeat(70_000) + "\nRuntimeError: CUDA out of memory\n",
    )?;

    let baseline = median_ms(5, || {
        let s = Command::new("sh")
            .arg("-c")
            .arg("find . -type f -print0 | xargs -0 sha256sum > /dev/null")
            .current_dir(&out)
            .status()?;
        if !s.success() {
            bail!("sha256sum failed");
        }
        Ok(())
    })?;
    let patterns = classify::ClassPatterns::default();
    let class_ms = median_ms(5, || {
        let tail = classify::tail(&log);
        classify::detect(&patterns, Some(1), 0, &tail)
            .map(|_| ())
            .ok_or_else(|| anyhow::anyhow!("not classed"))
    })?;
    let manifest_ms = median_ms(5, || manifest::walk(&out).map(|_| ()).map_err(Into::into))?;
    let validators = Validators::new(
        PluginEngine::new(None)?,
        PluginLimits {
            evaluate_timeout: std::time::Duration::from_secs(10),
            memory: 256 << 20,
            ..PluginLimits::default()
        },
    );
    let refs = vec![ValidatorRef {
        plugin: "outputs".into(),
        config: format!(
            "required = [\"metrics.json\", \"frames/*.png\"]\ncount = [{{ glob = \"frames/*.png\", min = {files} }}]\njson = [{{ file = \"metrics.json\", rules = [\"loss < 1.0\", \"accuracy >= 0.8\"] }}]\n"
        ),
    }];
    let judge = |facts: RunFacts| {
        validate::judge(
            &validators,
            &refs,
            facts,
            Some(&out),
            tmp.path(),
            false,
            None,
        )
    };
    let first = Instant::now();
    let j = judge(RunFacts::default());
    let first_ms = first.elapsed().as_secs_f64() * 1e3;
    if !j.findings.is_empty() {
        bail!("the outputs validator found {:?}", j.findings);
    }
    let judge_ms = median_ms(5, || {
        let j = judge(RunFacts::default());
        if j.findings.is_empty() {
            Ok(())
        } else {
            bail!("{:?}", j.findings)
        }
    })?;
    println!("  `find | xargs sha256sum` (baseline): {baseline:.1} ms");
    println!("  classify a 64 KiB log tail:          {class_ms:.2} ms");
    println!(
        "  output manifest (walk + sha256):     {manifest_ms:.1} ms = {:.2}x the baseline",
        manifest_ms / baseline
    );
    println!(
        "  manifest + outputs validator:        {judge_ms:.1} ms = {:.2}x the baseline (goal: under 50 ms; first call with compile {first_ms:.0} ms)",
        judge_ms / baseline
    );

    through_the_daemon(files)
}

/// What a person sees: `nightjar submit` + `nightjar wait` of a task that
/// writes `files` files, with and without the `outputs` validator, median of
/// 5 each on one daemon. The difference is what judging adds to a run's end.
fn through_the_daemon(files: usize) -> Result<()> {
    let d = super::Daemon::start("slots = 1")?;
    let dir = tempfile::tempdir()?;
    let write = format!(
        "command = '''mkdir -p \"$NIGHTJAR_OUTPUT_PATH/frames\"; cd \"$NIGHTJAR_OUTPUT_PATH/frames\"; for f in $(seq 1 {files}); do echo x > $f; done; echo '{{\"loss\": 0.2}}' > ../metrics.json; : ${{OUTPUT_PATH}}'''\n"
    );
    let plain = dir.path().join("plain.toml");
    std::fs::write(&plain, &write)?;
    let judged = dir.path().join("judged.toml");
    std::fs::write(
        &judged,
        format!(
            "{write}[[validate]]\nplugin = \"outputs\"\nrequired = [\"metrics.json\", \"frames/*\"]\ncount = [{{ glob = \"frames/*\", min = {files} }}]\njson = [{{ file = \"metrics.json\", rules = [\"loss < 1.0\"] }}]\n"
        ),
    )?;
    let nj = |args: &[&str]| super::vs::nightjar_text(&d, args);
    let run = |file: &Path| -> Result<()> {
        let id = nj(&["submit", file.to_str().unwrap_or_default()])?;
        let id = id.split_whitespace().next().unwrap_or_default().to_string();
        nj(&["wait", &id]).map(|_| ())
    };
    run(&judged)?; // compiles the validator once, as a daemon's first use does
    let plain_ms = median_ms(5, || run(&plain))?;
    let judged_ms = median_ms(5, || run(&judged))?;
    println!(
        "  through the daemon, `nightjar submit` + `wait` of a task writing {files} files: {plain_ms:.0} ms; with the outputs validator {judged_ms:.0} ms: +{:.0} ms (goal: under 50 ms)",
        judged_ms - plain_ms
    );
    Ok(())
}
