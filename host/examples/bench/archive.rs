//! `archive [MIB]`: what the verified archive costs, end to end through the
//! daemon, against the script a lab runs instead. A task writes MIB (512)
//! MiB in one file plus 1,000 small files into its output folder; the time
//! from the run's end to its archive being verified (output manifest, copy,
//! fsync, read-back, rename) is read from `show --json`, against `find |
//! xargs sha256sum` over the same outputs, `cp -a` to the archive's file
//! system, `sync -f` and `sha256sum -c` of the copy, timed on the same files.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::Daemon;
use super::vs::{id_of, nightjar, nightjar_text};

/// The task's outputs: one big incompressible file and 1,000 small ones.
fn writer(mib: usize) -> String {
    format!(
        "head -c {mib}M /dev/urandom > \"${{OUTPUT_PATH}}/model.pt\" && mkdir -p \"${{OUTPUT_PATH}}/frames\" \
         && for i in $(seq 1000); do echo \"frame $i\" > \"${{OUTPUT_PATH}}/frames/$i.txt\"; done"
    )
}

fn sh(script: &str) -> Result<()> {
    let st = Command::new("sh").args(["-c", script]).status()?;
    if !st.success() {
        bail!("`{script}` failed");
    }
    Ok(())
}

pub fn archive(mib: usize) -> Result<()> {
    println!("== archive: {mib} MiB + 1,000 small files, run end to verified archive ==");
    let tmp = match std::env::var_os("BENCH_DIR") {
        Some(base) => tempfile::tempdir_in(base)?,
        None => tempfile::tempdir()?,
    };
    let root = tmp.path().join("nas");
    std::fs::create_dir_all(&root)?;
    let d = Daemon::start(&format!(
        "[archive]\nroot = \"{}\"\n[retention]\noutputs_archived = \"1d\"",
        root.display()
    ))?;
    let id = id_of(&nightjar(
        &d,
        &["submit", "--name", "bench", "--", "sh", "-c", &writer(mib)],
    )?)?;
    nightjar(&d, &["wait", &id])?;
    let t0 = Instant::now();
    let (ended, done, output) = loop {
        let v: serde_json::Value =
            serde_json::from_str(&nightjar_text(&d, &["--json", "show", &id])?)?;
        let run = &v["runs"][0];
        let a = &run["outputs"]["archive"];
        if a["state"] == "done" {
            let folder = run["outputs"]["manifest"]["folder"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            break (run["finished_at"].as_i64(), a["done_at"].as_i64(), folder);
        }
        if t0.elapsed() > Duration::from_secs(600) {
            bail!("the archive was not verified within 10 minutes: {a}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let ours = (done.context("no done_at")? - ended.context("no finished_at")?) as f64 / 1e3;
    // The lab's script over the same files, to the same file system.
    let out = Path::new(&output);
    let copy = root.join("script-copy");
    let t0 = Instant::now();
    sh(&format!(
        "cd '{o}' && find . -type f -print0 | xargs -0 sha256sum > '{t}/sums' \
         && cp -a '{o}' '{c}' && sync -f '{c}' && cd '{c}' && sha256sum --quiet -c '{t}/sums'",
        o = out.display(),
        t = tmp.path().display(),
        c = copy.display()
    ))?;
    let theirs = t0.elapsed().as_secs_f64();
    println!(
        "  nightjar (output manifest, copy, fsync, read-back, rename): {ours:.2} s; \
         sha256sum + cp -a + sync + sha256sum -c: {theirs:.2} s: ratio {:.2}",
        ours / theirs
    );
    println!(
        "  ({:.0} MB/s of outputs through nightjar's whole archive path)",
        (mib as f64 * 1.048_576) / ours
    );
    Ok(())
}
