//! The host-hardening keys: the API socket's limits (`[api]`), the env
//! patterns redacted from output (`sandbox.redact_env`) and the folders task
//! output may go to (`output_roots`).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

use super::humantime_serde_compat;

/// The env-name patterns whose values `show`, `--json` and logs never print.
pub const DEFAULT_REDACT_ENV: &[&str] = &["*KEY*", "*TOKEN*", "*SECRET*", "*PASSWORD*"];

/// Limits of the API socket.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ApiConfig {
    /// Most client connections open at once; more are answered with an error and closed.
    pub max_connections: usize,
    /// How long a connection may take to send its next request line (a reply
    /// in progress, such as `wait`, is not limited by it).
    #[serde(with = "humantime_serde_compat")]
    pub idle_timeout: Duration,
}

impl Default for ApiConfig {
    fn default() -> Self {
        ApiConfig {
            max_connections: 256,
            idle_timeout: Duration::from_secs(300),
        }
    }
}

/// The default `sandbox.redact_env`.
pub fn default_redact_env() -> Vec<String> {
    DEFAULT_REDACT_ENV.iter().map(|s| s.to_string()).collect()
}

/// Checks the hardening keys of a loaded config.
pub fn validate(api: &ApiConfig, redact: &[String], output_roots: &[PathBuf]) -> Result<()> {
    if api.max_connections == 0 {
        bail!(
            "key `api.max_connections` is 0: at least one connection is needed to talk to the daemon"
        );
    }
    if api.idle_timeout < Duration::from_secs(1) {
        bail!("key `api.idle_timeout` must be at least 1s");
    }
    if let Some(p) = redact.iter().find(|p| p.is_empty()) {
        bail!("key `sandbox.redact_env` holds an empty pattern `{p}`; write `*KEY*`-style globs");
    }
    if let Some(r) = output_roots.iter().find(|r| !r.is_absolute()) {
        bail!(
            "key `output_roots`: `{}` is not an absolute path; write the full path (for example `/srv/results`)",
            r.display()
        );
    }
    Ok(())
}

/// True when `name` matches one of the glob `patterns` (`*` any run of
/// characters, `?` one character), ignoring ASCII case.
pub fn redacted(name: &str, patterns: &[String]) -> bool {
    // Compared byte by byte, case folded there: no copy of either (this is
    // asked for each variable of each run's manifest).
    patterns.iter().any(|p| glob(p.as_bytes(), name.as_bytes()))
}

/// The placeholder shown instead of a redacted value.
pub const REDACTED: &str = "<redacted>";

fn glob(p: &[u8], s: &[u8]) -> bool {
    // Iterative wildcard matching with one backtrack point: linear in practice.
    let (mut pi, mut si) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        if pi < p.len() && (p[pi] == b'?' || p[pi].eq_ignore_ascii_case(&s[si])) {
            pi += 1;
            si += 1;
        } else if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, si));
            pi += 1;
        } else if let Some((sp, ss)) = star {
            pi = sp + 1;
            si = ss + 1;
            star = Some((sp, ss + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::super::Config;
    use super::*;
    use std::path::Path;

    #[test]
    fn default_patterns_redact_keys_tokens_secrets_and_passwords_in_any_case() {
        let p = default_redact_env();
        for name in [
            "WANDB_API_KEY",
            "hf_token",
            "AWS_SECRET_ACCESS_KEY",
            "db_Password",
            "KEY",
        ] {
            assert!(redacted(name, &p), "{name}");
        }
        for name in ["OMP_NUM_THREADS", "PATH", "LR"] {
            assert!(!redacted(name, &p), "{name}");
        }
        assert!(redacted("MY_CRED", &["my_?red".to_string()]));
    }

    #[test]
    fn hardening_keys_parse_and_are_checked() {
        let cfg = Config::parse(
            "output_roots = [\"/srv/results\"]\n[api]\nmax_connections = 8\nidle_timeout = \"10s\"\n[sandbox]\nredact_env = [\"*CRED*\"]\n",
            Path::new("c.toml"),
        )
        .unwrap();
        assert_eq!(cfg.api.max_connections, 8);
        assert_eq!(cfg.api.idle_timeout, Duration::from_secs(10));
        assert_eq!(cfg.sandbox.redact_env, vec!["*CRED*".to_string()]);
        assert_eq!(cfg.output_roots, vec![PathBuf::from("/srv/results")]);
        let err = format!(
            "{:#}",
            Config::parse("output_roots = [\"results\"]\n", Path::new("c.toml")).unwrap_err()
        );
        assert!(
            err.contains("output_roots") && err.contains("`results`"),
            "{err}"
        );
        let err = format!(
            "{:#}",
            Config::parse("[api]\nmax_connections = 0\n", Path::new("c.toml")).unwrap_err()
        );
        assert!(err.contains("api.max_connections"), "{err}");
    }
}
