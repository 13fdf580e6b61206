//! `nightjar plugins new NAME --kind policy|notifier|validator`: a plugin
//! crate from the SDK that builds for wasm32-wasip2 and passes `plugins
//! check` as written. The SDK is not on crates.io, so the crate depends on
//! a copy on disk, found by [`find_sdk`].

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// The kinds of plugin there are templates for (one per world).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    /// A scheduling policy (world `scheduling-policy`).
    Policy,
    /// A notifier (world `notifier`).
    Notifier,
    /// A result validator (world `result-validator`).
    Validator,
}

impl Kind {
    fn word(self) -> &'static str {
        match self {
            Kind::Policy => "policy",
            Kind::Notifier => "notifier",
            Kind::Validator => "validator",
        }
    }

    fn title(self) -> &'static str {
        match self {
            Kind::Policy => "scheduling policy",
            Kind::Notifier => "notifier",
            Kind::Validator => "result validator",
        }
    }

    /// (src/lib.rs, the README's how-to-use part, extra dependencies, the
    /// SDK names the template imports).
    fn template(
        self,
    ) -> (
        &'static str,
        &'static str,
        &'static str,
        &'static [&'static str],
    ) {
        match self {
            Kind::Policy => (
                include_str!("../templates/plugin/policy.rs"),
                include_str!("../templates/plugin/install-policy.md"),
                "",
                &["Evaluation", "Policy", "Snapshot", "Priority", "Verdict"],
            ),
            Kind::Notifier => (
                include_str!("../templates/plugin/notifier.rs"),
                include_str!("../templates/plugin/install-notifier.md"),
                "serde_json = \"1\"\n",
                &[
                    "ConfigError",
                    "DeliveryError",
                    "Event",
                    "Notifier",
                    "HttpMock",
                ],
            ),
            Kind::Validator => (
                include_str!("../templates/plugin/validator.rs"),
                include_str!("../templates/plugin/install-validator.md"),
                "",
                &["Finding", "Run", "Validator", "RunBuilder"],
            ),
        }
    }
}

/// `plugins new`'s arguments.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The crate's name: letters, digits, `-` and `_`, starting with a
    /// letter (the component is built as NAME.wasm, `-` becoming `_`).
    pub name: String,
    /// What it is.
    #[arg(long, value_enum, default_value = "policy")]
    pub kind: Kind,
    /// The folder to create (it must not exist). Default: ./NAME.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// The nightjar SDK (the `sdk` folder of a nightjar source tree, or
    /// /usr/share/nightjar/sdk from the package). Default: $NIGHTJAR_SDK,
    /// else the package's copy next to this binary, else the source tree
    /// this binary was built from.
    #[arg(long, env = "NIGHTJAR_SDK")]
    pub sdk: Option<PathBuf>,
}

/// Longest crate name accepted (crates.io's limit).
const MAX_NAME: usize = 64;

/// Names cargo refuses or that would shadow what the crate uses.
const RESERVED: &[&str] = &[
    "alloc",
    "core",
    "std",
    "test",
    "proc_macro",
    "proc-macro",
    "self",
    "super",
    "crate",
    "build",
    "deps",
    "examples",
    "incremental",
    "nightjar-sdk",
    "nightjar_sdk",
    "serde",
    "serde_json",
    "serde-json",
    "wit-bindgen",
    "wit_bindgen",
    "con",
    "prn",
    "aux",
    "nul",
    "com1",
    "com2",
    "com3",
    "com4",
    "com5",
    "com6",
    "com7",
    "com8",
    "com9",
    "lpt1",
    "lpt2",
    "lpt3",
    "lpt4",
    "lpt5",
    "lpt6",
    "lpt7",
    "lpt8",
    "lpt9",
];

/// Rust's keywords (a crate may not be named as one).
const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "dyn", "else", "enum", "extern", "false",
    "fn", "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub",
    "ref", "return", "static", "struct", "trait", "true", "type", "unsafe", "use", "where",
    "while", "abstract", "become", "box", "do", "final", "macro", "override", "priv", "try",
    "typeof", "unsized", "virtual", "yield",
];

/// Why `name` cannot be a plugin crate's name, or `Ok`.
pub fn check_name(name: &str) -> Result<()> {
    let shown = name.escape_debug();
    if name.is_empty() {
        bail!("the plugin's name is empty: give a crate name such as `night-hold`");
    }
    if name.len() > MAX_NAME {
        let start: String = name.chars().take(40).collect();
        bail!(
            "plugin name `{}...` is {} bytes long; use at most {MAX_NAME}",
            start.escape_debug(),
            name.len()
        );
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
    {
        bail!(
            "plugin name `{shown}` has {:?}: a crate name has only ASCII letters, digits, `-` and `_`",
            c
        );
    }
    if !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
        bail!("plugin name `{shown}` must start with a letter (a crate name)");
    }
    let lower = name.to_ascii_lowercase();
    if KEYWORDS.contains(&lower.as_str()) || RESERVED.contains(&lower.as_str()) {
        bail!(
            "plugin name `{shown}` is reserved (a Rust keyword, a crate the plugin uses, or a name cargo refuses); choose another"
        );
    }
    Ok(())
}

/// `night-hold` -> `NightHold`; with the kind appended when that would be
/// a name the template uses (`policy` -> `PolicyPolicy`).
fn type_name(name: &str, kind: Kind) -> String {
    let camel: String = name
        .split(['-', '_'])
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut c = p.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect();
    let (_, _, _, imported) = kind.template();
    // `Config` is the template's config type, `P` its tests' alias.
    if imported.contains(&camel.as_str()) || camel == "Config" || camel == "P" {
        let mut word = kind.word().to_string();
        word[..1].make_ascii_uppercase();
        camel + &word
    } else {
        camel
    }
}

/// Where an SDK was found, for the error and the Cargo.toml's comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sdk {
    /// Its folder, absolute.
    pub path: PathBuf,
    /// How it was found.
    pub from: String,
}

/// Is `dir` the nightjar SDK (a Cargo.toml naming package `nightjar-sdk`)?
fn is_sdk(dir: &Path) -> bool {
    use std::io::Read;
    let mut text = String::new();
    let read = std::fs::File::open(dir.join("Cargo.toml"))
        .and_then(|f| f.take(64 << 10).read_to_string(&mut text));
    read.is_ok()
        && text
            .lines()
            .any(|l| l.replace(' ', "") == "name=\"nightjar-sdk\"")
}

/// The SDK: `flag` (`--sdk`, or `NIGHTJAR_SDK` through clap) when given,
/// and then it must be one; else the package's copy at
/// `<this binary's folder>/../share/nightjar/sdk`; else `source`, the
/// source tree's `sdk` this binary was built from, if it is still there.
pub fn find_sdk(flag: Option<&Path>, exe: Option<&Path>, source: &Path) -> Result<Sdk> {
    if let Some(p) = flag {
        if !is_sdk(p) {
            bail!(
                "--sdk (or NIGHTJAR_SDK) {} is not the nightjar SDK (no Cargo.toml of package `nightjar-sdk` there); give the `sdk` folder of a nightjar source tree, or /usr/share/nightjar/sdk of the package",
                p.display()
            );
        }
        return absolute(p, "given by --sdk or NIGHTJAR_SDK");
    }
    let mut looked = Vec::new();
    if let Some(share) = exe
        .and_then(Path::parent)
        .map(|bin| bin.join("../share/nightjar/sdk"))
    {
        if is_sdk(&share) {
            return absolute(&share, "installed with nightjar");
        }
        looked.push(share);
    }
    if is_sdk(source) {
        return absolute(source, "the source tree nightjar was built from");
    }
    looked.push(source.to_path_buf());
    bail!(
        "no nightjar SDK found (looked at {}); pass --sdk PATH (or set NIGHTJAR_SDK) to the `sdk` folder of a nightjar source tree (git clone the nightjar repository), or install the nightjar package, which puts it in /usr/share/nightjar/sdk",
        looked
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

fn absolute(p: &Path, from: &str) -> Result<Sdk> {
    let path = p
        .canonicalize()
        .with_context(|| format!("the SDK folder {}", p.display()))?;
    Ok(Sdk {
        path,
        from: from.to_string(),
    })
}

/// `s` as a TOML basic string.
fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The files of a new plugin crate: (path in the folder, text).
pub fn files(name: &str, kind: Kind, sdk: &Sdk) -> Result<Vec<(&'static str, String)>> {
    check_name(name)?;
    let Some(sdk_path) = sdk.path.to_str() else {
        bail!(
            "the SDK's path {} is not UTF-8, which Cargo.toml cannot hold; move it or pass --sdk with another copy",
            sdk.path.display()
        );
    };
    let (lib, install, extra_deps, _) = kind.template();
    let stem = name.replace('-', "_");
    let fill = |t: &str| {
        t.replace("{{name}}", name)
            .replace("{{stem}}", &stem)
            .replace("{{kind}}", kind.word())
            .replace("{{kind_title}}", kind.title())
            .replace("{{Type}}", &type_name(name, kind))
    };
    let cargo = fill(include_str!("../templates/plugin/Cargo.toml.in"))
        .replace("{{sdk_from}}", &sdk.from)
        .replace("{{sdk_path}}", &toml_string(sdk_path))
        .replace("{{extra_deps}}", extra_deps);
    let readme = fill(include_str!("../templates/plugin/README.md.in"))
        .replace("{{install}}", &fill(install));
    Ok(vec![
        ("Cargo.toml", cargo),
        ("README.md", readme),
        (
            ".gitignore",
            include_str!("../templates/plugin/gitignore").to_string(),
        ),
        ("src/lib.rs", fill(lib)),
    ])
}

/// Writes the crate into `dir`, which this call creates: an existing
/// folder, file or symlink there is refused, never written into. A
/// failure part way removes what it wrote.
pub fn write(dir: &Path, files: &[(&str, String)]) -> Result<()> {
    match std::fs::create_dir(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => bail!(
            "{} already exists; `plugins new` never writes into an existing path: choose another NAME or --dir",
            dir.display()
        ),
        Err(e) => bail!("cannot create {}: {e}", dir.display()),
    }
    let written = files.iter().try_for_each(|(rel, text)| {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::File::options()
            .write(true)
            .create_new(true)
            .open(&path)?
            .write_all(text.as_bytes())
    });
    if let Err(e) = written {
        let _ = std::fs::remove_dir_all(dir);
        bail!("cannot write the plugin into {}: {e}", dir.display());
    }
    Ok(())
}

/// Runs `plugins new`.
pub fn run(a: &Args) -> Result<i32> {
    check_name(&a.name)?;
    let exe = std::env::current_exe().ok();
    let source = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../sdk"));
    let sdk = find_sdk(a.sdk.as_deref(), exe.as_deref(), source)?;
    let files = files(&a.name, a.kind, &sdk)?;
    let dir = a.dir.clone().unwrap_or_else(|| PathBuf::from(&a.name));
    write(&dir, &files)?;
    let stem = a.name.replace('-', "_");
    println!(
        "made {} `{}` in {} (SDK: {}, {})",
        a.kind.title(),
        a.name,
        dir.display(),
        sdk.path.display(),
        sdk.from
    );
    println!("next:");
    println!("  cd {}", dir.display());
    println!("  cargo build --release --target wasm32-wasip2");
    println!("  nightjar plugins check target/wasm32-wasip2/release/{stem}.wasm");
    println!("README.md says how to test and use it.");
    Ok(0)
}

#[cfg(test)]
#[path = "plugin_new_tests.rs"]
mod tests;
