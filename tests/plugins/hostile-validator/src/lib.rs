//! A result validator that misbehaves the way its config says, so the
//! host's tests can pin what happens to each kind of hostile validator. The
//! config is `mode = "word"` (as a `[[validate]]` table reaches `configure`)
//! or a bare word:
//!
//! - `escape`: tries every way out of the sandbox and answers one `info`
//!   finding per attempt, with no path, whose message is
//!   `OPENED <attempt>: <what it got>` (the first 32 bytes read, escaped;
//!   names listed; what was written) or `REFUSED <attempt>: <the error>`.
//!   The attempts, in this order (`<attempt>` is the text before the colon):
//!   `read /etc/passwd`, `read /output/../etc/passwd`, `read ../etc/passwd`,
//!   `read /output/../../etc/passwd`, `read /`, `list /`, `list /output/..`,
//!   `read /output/etc-link/passwd`, `list /output/etc-link` (a symbolic
//!   link the test plants to /etc), `read /output/passwd-link` (a symbolic
//!   link to /etc/passwd), `read /output/hardlink` (a hard link the test
//!   plants), `write /output/written`, `mkdir /output/newdir`,
//!   `rename /output/<first listed file>` (to `/output/renamed`),
//!   `remove /output/<last listed file>` (both `/output/victim` when the run
//!   lists no file), `env` (OPENED with the first variables when there are
//!   any), `clock` (OPENED when the wall clock reads later than 2001),
//!   `monotonic-clock` (OPENED when it advances over a busy loop)
//! - `spin`: `validate` never returns
//! - `sleep`: `validate` sleeps 120 s (a WASI clock subscription)
//! - `memory`: allocates (and touches) 1 MiB at a time until an allocation
//!   fails, then answers one `info` finding `ALLOCATED <n> MiB`
//! - `flood`: 100,000 `info` findings, each with a 64 KiB path and a 64 KiB
//!   message (every one of them points at one 64 KiB string: 12.5 GiB for a
//!   host that copies each, 64 KiB in the plugin)
//! - `panic`: `validate` panics
//! - `bad-config`: `configure` refuses its config (key `mode`)
//! - `ok` (or empty): no finding
//! - `error`: one `error` finding, path `result.txt`, message
//!   `ERROR the hostile validator fails this run`
//!
//! Any other word is refused by `configure` (key `mode`).

use std::io::{Read, Write};
use std::time::{Duration, Instant, SystemTime};

use nightjar_sdk::*;

const MODES: &[&str] = &[
    "escape",
    "spin",
    "sleep",
    "memory",
    "flood",
    "panic",
    "bad-config",
    "ok",
    "",
    "error",
];

struct Hostile;

impl Validator for Hostile {
    /// The mode.
    type Config = String;

    /// Not TOML: `mode = "spin"` or a bare word.
    fn parse(config: &str) -> Result<String, ConfigError> {
        let mode = mode_of(config);
        if mode == "bad-config" {
            return Err(ConfigError::at(
                "mode",
                "this validator refuses every config",
            ));
        }
        if !MODES.contains(&mode.as_str()) {
            return Err(ConfigError::at(
                "mode",
                format!("unknown mode `{mode}`; one of {}", MODES.join(", ")),
            ));
        }
        Ok(mode)
    }

    fn validate(mode: &String, run: &Run) -> Vec<Finding> {
        match mode.as_str() {
            "escape" => escape(run),
            "spin" => loop {
                std::hint::black_box(0);
            },
            "sleep" => {
                std::thread::sleep(Duration::from_secs(120));
                Vec::new()
            }
            "memory" => memory(),
            "flood" => flood(),
            "panic" => panic!("hostile validator panics on purpose"),
            "error" => vec![Finding::error(
                "result.txt",
                "ERROR the hostile validator fails this run",
            )],
            _ => Vec::new(),
        }
    }
}

export_validator!(Hostile);

/// The mode a config names: `mode = "word"` or a bare word.
fn mode_of(config: &str) -> String {
    config
        .split('"')
        .nth(1)
        .unwrap_or(config.trim())
        .to_string()
}

/// One finding per attempt: what it got, or why not.
fn attempt(out: &mut Vec<Finding>, what: &str, result: std::io::Result<String>) {
    let message = match result {
        Ok(got) => format!("OPENED {what}: {got}"),
        Err(e) => format!("REFUSED {what}: {e}"),
    };
    out.push(Finding::about_run(Severity::Info, message));
}

/// The first 32 bytes of the file at `path`, escaped.
fn read32(path: &str) -> std::io::Result<String> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(32)
        .read_to_end(&mut bytes)?;
    Ok(String::from_utf8_lossy(&bytes).escape_debug().to_string())
}

/// The names in the folder at `path`, at most 32 bytes of them.
fn list(path: &str) -> std::io::Result<String> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(path)? {
        names.push(entry?.file_name().to_string_lossy().into_owned());
    }
    let mut text = names.join(",");
    let mut end = text.len().min(32);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    Ok(format!("{} names: {text}", names.len()))
}

fn escape(run: &Run) -> Vec<Finding> {
    let mut out = Vec::new();
    for path in [
        "/etc/passwd",
        "/output/../etc/passwd",
        "../etc/passwd",
        "/output/../../etc/passwd",
        "/",
    ] {
        attempt(&mut out, &format!("read {path}"), read32(path));
    }
    for path in ["/", "/output/.."] {
        attempt(&mut out, &format!("list {path}"), list(path));
    }
    attempt(
        &mut out,
        "read /output/etc-link/passwd",
        read32("/output/etc-link/passwd"),
    );
    attempt(&mut out, "list /output/etc-link", list("/output/etc-link"));
    attempt(
        &mut out,
        "read /output/passwd-link",
        read32("/output/passwd-link"),
    );
    attempt(
        &mut out,
        "read /output/hardlink",
        read32("/output/hardlink"),
    );
    attempt(
        &mut out,
        "write /output/written",
        std::fs::File::create("/output/written")
            .and_then(|mut f| f.write_all(b"hostile"))
            .map(|()| "wrote 7 bytes".to_string()),
    );
    attempt(
        &mut out,
        "mkdir /output/newdir",
        std::fs::create_dir("/output/newdir").map(|()| "created".to_string()),
    );
    let first = run.files.first().map_or("victim", |f| f.path.as_str());
    let last = run.files.last().map_or("victim", |f| f.path.as_str());
    attempt(
        &mut out,
        &format!("rename /output/{first}"),
        std::fs::rename(format!("/output/{first}"), "/output/renamed")
            .map(|()| "renamed to /output/renamed".to_string()),
    );
    attempt(
        &mut out,
        &format!("remove /output/{last}"),
        std::fs::remove_file(format!("/output/{last}")).map(|()| "removed".to_string()),
    );
    let vars: Vec<String> = std::env::vars_os()
        .map(|(k, v)| format!("{}={}", k.to_string_lossy(), v.to_string_lossy()))
        .collect();
    attempt(
        &mut out,
        "env",
        if vars.is_empty() {
            Err(std::io::Error::other("no variables"))
        } else {
            let text = vars.join(" ");
            Ok(text
                .chars()
                .take(32)
                .collect::<String>()
                .escape_debug()
                .to_string())
        },
    );
    let secs = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    attempt(
        &mut out,
        "clock",
        if secs > 1_000_000_000 {
            Ok(format!("{secs} s after 1970"))
        } else {
            Err(std::io::Error::other(format!("reads {secs} s after 1970")))
        },
    );
    let start = Instant::now();
    let mut x = 0u64;
    for i in 0..10_000_000u64 {
        x = std::hint::black_box(x.wrapping_add(i));
    }
    let ns = start.elapsed().as_nanos();
    attempt(
        &mut out,
        "monotonic-clock",
        if ns > 0 {
            Ok(format!("advanced {ns} ns over a busy loop"))
        } else {
            Err(std::io::Error::other("did not advance over a busy loop"))
        },
    );
    out
}

/// Allocates and touches 1 MiB at a time until an allocation fails.
fn memory() -> Vec<Finding> {
    let mut held: Vec<Vec<u8>> = Vec::new();
    loop {
        let mut piece = Vec::new();
        if piece.try_reserve_exact(1 << 20).is_err() || held.try_reserve(1).is_err() {
            break;
        }
        piece.resize(1 << 20, 1u8);
        held.push(piece);
    }
    let n = held.len();
    drop(held);
    vec![Finding::about_run(
        Severity::Info,
        format!("ALLOCATED {n} MiB"),
    )]
}

/// 100,000 findings whose paths and messages all point at one 64 KiB string.
fn flood() -> Vec<Finding> {
    let big = std::mem::ManuallyDrop::new("f".repeat(64 << 10));
    let alias = || {
        // SAFETY: every alias is handed to the host, which reads the answer
        // before the plugin frees it (then 200,000 times: a test plugin may
        // trap there; the instance is thrown away after one run).
        unsafe { String::from_raw_parts(big.as_ptr() as *mut u8, big.len(), big.capacity()) }
    };
    (0..100_000)
        .map(|_| Finding {
            severity: Severity::Info,
            path: Some(alias()),
            message: alias(),
        })
        .collect()
}
