//! `manifest`: what reproducibility manifests cost. Hashing an input
//! against `sha256sum` on the same 1 GiB file (MB/s, ratio; goal >= 0.9),
//! and what the capture adds to a run's start in a workdir repository of
//! 10,000 files with 10 inputs already hashed (goal: under 100 ms), against
//! the same task in a folder that is no repository and has no inputs.

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result, bail};
use nightjar::manifest::inputs::{Key, hash_file};

pub fn manifest(files: usize) -> Result<()> {
    println!("== manifest: hashing inputs, and what capturing adds to a start ==");
    let tmp = match std::env::var_os("BENCH_DIR") {
        Some(base) => tempfile::tempdir_in(base)?,
        None => tempfile::tempdir()?,
    };
    hashing(tmp.path())?;
    start_cost(tmp.path(), files)
}

/// 1 GiB of incompressible bytes (xorshift), written once.
fn big_file(path: &Path) -> Result<()> {
    let mut f = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut buf = vec![0u8; 1 << 20];
    for _ in 0..1024 {
        for chunk in buf.chunks_mut(8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            chunk.copy_from_slice(&x.to_le_bytes());
        }
        f.write_all(&buf)?;
    }
    f.flush()?;
    Ok(())
}

fn hashing(dir: &Path) -> Result<()> {
    let path = dir.join("input.bin");
    big_file(&path)?;
    let m = std::fs::metadata(&path)?;
    let key = {
        use std::os::unix::fs::MetadataExt;
        Key {
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mtime_ns: m.mtime() * 1_000_000_000 + m.mtime_nsec(),
            ctime_ns: m.ctime() * 1_000_000_000 + m.ctime_nsec(),
        }
    };
    // Alternating rounds, best of 3 each: both read the same (cached) pages.
    let (mut ours, mut theirs) = (f64::MAX, f64::MAX);
    let mut hashes = (String::new(), String::new());
    for _ in 0..3 {
        let t0 = Instant::now();
        let out = Command::new("sha256sum").arg(&path).output()?;
        theirs = theirs.min(t0.elapsed().as_secs_f64());
        if !out.status.success() {
            bail!("sha256sum failed");
        }
        hashes.1 = String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_string();
        let t0 = Instant::now();
        let (sha, _) = hash_file(&path, &key).map_err(anyhow::Error::msg)?;
        ours = ours.min(t0.elapsed().as_secs_f64());
        hashes.0 = sha;
    }
    if hashes.0 != hashes.1 {
        bail!("hashes differ: {} vs {}", hashes.0, hashes.1);
    }
    let mb = key.size as f64 / 1e6;
    println!(
        "  hashing a 1 GiB input: {:.0} MB/s; `sha256sum` on the same file {:.0} MB/s: ratio {:.2} (goal >= 0.9)",
        mb / ours,
        mb / theirs,
        theirs / ours
    );
    Ok(())
}

fn git(dir: &Path, args: &[&str]) -> Result<()> {
    let s = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=b", "-c", "user.email=b@example.org"])
        .args(args)
        .stdout(std::process::Stdio::null())
        .status()?;
    if !s.success() {
        bail!("git {args:?} failed");
    }
    Ok(())
}

/// A repository of `files` files (100 folders) with 10 inputs of 10 MiB in
/// `data/`, committed, one tracked file changed (dirty, so the diff is
/// hashed too), the inputs' times an hour back.
fn repository(dir: &Path, files: usize) -> Result<()> {
    for i in 0..files {
        let sub = dir.join(format!("src/{:02}", i % 100));
        if i < 100 {
            std::fs::create_dir_all(&sub)?;
        }
        std::fs::write(sub.join(format!("f{i}.py")), format!("x = {i}\n"))?;
    }
    std::fs::create_dir_all(dir.join("data"))?;
    for i in 0..10 {
        let p = dir.join(format!("data/in{i}.bin"));
        std::fs::write(&p, vec![i as u8; 10 << 20])?;
        std::fs::File::options()
            .write(true)
            .open(&p)?
            .set_modified(SystemTime::now() - Duration::from_secs(3600))?;
    }
    git(dir, &["init", "-q", "-b", "main"])?;
    git(dir, &["add", "."])?;
    git(dir, &["commit", "-q", "-m", "bench"])?;
    std::fs::write(dir.join("src/00/f0.py"), "x = -1\n")?;
    git(dir, &["status", "-s"])?; // refresh the index, as a person's shell does
    Ok(())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn start_cost(tmp: &Path, files: usize) -> Result<()> {
    let repo = tmp.join("repo");
    repository(&repo, files)?;
    let plain = tmp.join("plain");
    std::fs::create_dir_all(&plain)?;
    let inputs: Vec<String> = (0..10).map(|i| format!("\"data/in{i}.bin\"")).collect();
    std::fs::write(
        repo.join("t.toml"),
        format!("command = \"true\"\ninputs = [{}]\n", inputs.join(", ")),
    )?;
    std::fs::write(plain.join("t.toml"), "command = \"true\"\n")?;
    // Settled: an input changed less than 2 s ago is not cached, nor is
    // the git state of a repository with files changed less than
    // `git_cache::RACY` ago; so every capture timed below checks the kept
    // git state (a stat per tracked file) instead of running git.
    std::thread::sleep(nightjar::manifest::git_cache::RACY + Duration::from_millis(500));
    let d = super::Daemon::start("slots = 1")?;
    let nj = |args: &[&str]| super::vs::nightjar_text(&d, args);
    // One run of each, so the inputs are hashed (once) before timing.
    let run = |file: &Path| -> Result<serde_json::Value> {
        let out = nj(&["--json", "submit", file.to_str().unwrap_or_default()])?;
        let v: serde_json::Value = serde_json::from_str(&out)?;
        let id = v[0]["id"].as_i64().context("no id")?.to_string();
        nj(&["wait", &id])?;
        Ok(serde_json::from_str(&nj(&["--json", "show", &id])?)?)
    };
    let first = run(&repo.join("t.toml"))?;
    let hashed = first["manifests"]["submit"]["stats"]["hashed"]
        .as_u64()
        .unwrap_or(0);
    run(&plain.join("t.toml"))?;
    let (mut waited_plain, mut waited_repo, mut capture, mut submit_capture) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let waited = |d: &serde_json::Value| -> f64 {
        let r = &d["runs"][0];
        (r["started_at"].as_i64().unwrap_or(0) - r["eligible_at"].as_i64().unwrap_or(0)) as f64
    };
    for _ in 0..15 {
        let p = run(&plain.join("t.toml"))?;
        waited_plain.push(waited(&p));
        let r = run(&repo.join("t.toml"))?;
        let m = &r["manifests"]["runs"][0];
        if m["stats"]["hashed"].as_u64() != Some(0) || m["git"]["dirty"] != true {
            bail!("expected a dirty repository and no input read at start: {m}");
        }
        waited_repo.push(waited(&r));
        capture.push(m["capture_ms"].as_f64().unwrap_or(0.0));
        submit_capture.push(
            r["manifests"]["submit"]["capture_ms"]
                .as_f64()
                .unwrap_or(0.0),
        );
    }
    let (wp, wr) = (median(waited_plain), median(waited_repo));
    println!(
        "  a repository of {files} files (dirty) with 10 inputs of 10 MiB ({hashed} hashed at the first submit, then cached):"
    );
    println!(
        "    start manifest capture (the kept git state checked, a stat per tracked file; 10 inputs as stats) median {:.0} ms; at submit {:.0} ms",
        median(capture),
        median(submit_capture)
    );
    println!(
        "    submit to start, median of 15: {wr:.0} ms vs {wp:.0} ms for a task in a plain folder without inputs: +{:.0} ms (goal: under 100 ms)",
        wr - wp
    );
    Ok(())
}
