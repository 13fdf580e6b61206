//! Secrets of notifiers and of `[mail]`: written in the config as
//! references (`env:NAME`, `file:/path` of a file only its owner may read),
//! resolved when the notifier is configured, and cut out of every text the
//! host keeps or shows (logs, `notify ls`, dead letters, errors). A leaf:
//! it names no other module of the host, so the plugin host, the config and
//! the notifiers can all use it.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};

/// The word a secret is replaced with.
pub const REDACTED: &str = "<redacted>";

/// Shortest secret redacted (a shorter one would blank ordinary words).
const MIN_SECRET: usize = 4;

/// Largest secret file read.
const MAX_FILE: u64 = 64 << 10;

/// The value of reference `r` for key `key` of notifier `name`, or what is
/// wrong with it (naming the key, never the value).
pub fn resolve(name: &str, key: &str, r: &str) -> Result<String, String> {
    resolve_at(&format!("[notifier.{name}] secrets.{key}"), r)
}

/// The value of reference `r`, written at `at` (a key, as errors name it).
pub fn resolve_at(at: &str, r: &str) -> Result<String, String> {
    if let Some(var) = r.strip_prefix("env:") {
        return std::env::var(var).map_err(|_| {
            format!("{at}: the daemon's environment has no `{var}`; set it where the daemon starts")
        });
    }
    if let Some(path) = r.strip_prefix("file:") {
        // Without blocking (a FIFO would wait for a writer forever), and
        // read from the handle checked, no more than the cap.
        let f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
            .map_err(|e| format!("{at}: cannot open {path}: {e}"))?;
        let meta = f.metadata().map_err(|e| format!("{at}: {path}: {e}"))?;
        if !meta.is_file() {
            return Err(format!("{at}: {path} is not a regular file"));
        }
        if meta.mode() & 0o077 != 0 {
            return Err(format!(
                "{at}: {path} may be read by others (mode {:o}); `chmod 600 {path}`",
                meta.mode() & 0o777
            ));
        }
        let mut text = String::new();
        f.take(MAX_FILE + 1)
            .read_to_string(&mut text)
            .map_err(|e| format!("{at}: {path}: {e}"))?;
        if text.len() as u64 > MAX_FILE {
            return Err(format!("{at}: {path} is larger than 64 KiB"));
        }
        return Ok(text.trim_end_matches(['\n', '\r']).to_string());
    }
    Err(format!("{at}: write `env:NAME` or `file:/path`"))
}

/// Every reference of a notifier resolved: key -> value.
pub fn resolve_all(
    name: &str,
    refs: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, String> {
    refs.iter()
        .map(|(k, r)| resolve(name, k, r).map(|v| (k.clone(), v)))
        .collect()
}

/// `text` with every secret in `secrets` replaced by [`REDACTED`].
pub fn redact(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_string();
    for s in secrets.iter().filter(|s| s.len() >= MIN_SECRET) {
        if out.contains(s.as_str()) {
            out = out.replace(s.as_str(), REDACTED);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn references_resolve_and_bad_ones_name_the_key_not_the_value() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("key");
        std::fs::write(&f, "abcd-1234\n").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        let r = format!("file:{}", f.display());
        assert_eq!(resolve("bot", "key", &r).unwrap(), "abcd-1234");
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = resolve("bot", "key", &r).unwrap_err();
        assert!(
            e.contains("secrets.key") && e.contains("chmod 600") && !e.contains("abcd"),
            "{e}"
        );
        let e = resolve("bot", "key", "env:NIGHTJAR_TEST_SURELY_UNSET").unwrap_err();
        assert!(
            e.contains("[notifier.bot] secrets.key") && e.contains("NIGHTJAR_TEST_SURELY_UNSET")
        );
        assert!(
            resolve("bot", "key", "plain-secret")
                .unwrap_err()
                .contains("env:NAME")
        );
    }

    #[test]
    fn a_fifo_a_device_or_a_huge_file_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo reads the NUL-terminated path given.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let (tx, rx) = std::sync::mpsc::channel();
        let r = format!("file:{}", fifo.display());
        std::thread::spawn(move || tx.send(resolve("bot", "key", &r)));
        let e = rx
            .recv_timeout(std::time::Duration::from_secs(5))
            .expect("a FIFO blocks the daemon")
            .unwrap_err();
        assert!(e.contains("not a regular file"), "{e}");
        let e = resolve("bot", "key", "file:/dev/zero").unwrap_err();
        assert!(e.contains("not a regular file"), "{e}");
        let big = dir.path().join("big");
        std::fs::write(&big, vec![b'a'; 100 << 10]).unwrap();
        std::fs::set_permissions(&big, std::fs::Permissions::from_mode(0o600)).unwrap();
        let e = resolve("bot", "key", &format!("file:{}", big.display())).unwrap_err();
        assert!(e.contains("larger than 64 KiB"), "{e}");
    }

    #[test]
    fn secrets_are_cut_out_of_text() {
        let s = vec!["abcd-1234".to_string(), "ab".to_string()];
        assert_eq!(
            redact("POST https://x/send?key=abcd-1234 failed: ab", &s),
            "POST https://x/send?key=<redacted> failed: ab"
        );
    }
}
