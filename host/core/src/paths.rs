//! Where the daemon keeps its state and where its socket is, as both the
//! daemon and the client work it out (so the two never disagree).

use std::path::{Path, PathBuf};

/// Where a daemon run as root keeps its state by default (the lab-wide daemon).
pub const SYSTEM_STATE_DIR: &str = "/var/lib/nightjar";

/// The socket of a root daemon with the default state dir; clients of
/// other users look here when their own daemon's socket is not there.
pub const SYSTEM_SOCKET: &str = "/run/nightjar/nightjar.sock";

/// The variable naming the socket a client connects to, before any other rule.
pub const SOCKET_VAR: &str = "NIGHTJAR_SOCKET";

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// For root [`SYSTEM_STATE_DIR`]; else `$XDG_STATE_HOME/nightjar`, else
/// `~/.local/state/nightjar`.
pub fn default_state_dir() -> PathBuf {
    if is_root() {
        return PathBuf::from(SYSTEM_STATE_DIR);
    }
    if let Some(d) = std::env::var_os("XDG_STATE_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(d).join("nightjar");
    }
    let home = std::env::var_os("HOME").unwrap_or_else(|| "/tmp".into());
    PathBuf::from(home).join(".local/state/nightjar")
}

/// For the default state dir: [`SYSTEM_SOCKET`] for root, else
/// `$XDG_RUNTIME_DIR/nightjar.sock`; otherwise a socket inside the state dir.
pub fn default_socket(state_dir: &Path) -> PathBuf {
    if state_dir == default_state_dir() {
        if is_root() {
            return PathBuf::from(SYSTEM_SOCKET);
        }
        if let Some(d) = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
            return PathBuf::from(d).join("nightjar.sock");
        }
    }
    state_dir.join("nightjar.sock")
}

/// The state dir and socket: the config file's `state_dir` and `socket`
/// when it names them, then `--state-dir` (which moves a default socket
/// with it).
pub fn locate(
    file_state_dir: Option<PathBuf>,
    file_socket: Option<PathBuf>,
    cli_state_dir: Option<&Path>,
) -> (PathBuf, PathBuf) {
    let mut state_dir = file_state_dir.unwrap_or_else(default_state_dir);
    let mut socket = file_socket.unwrap_or_else(|| default_socket(&state_dir));
    if let Some(dir) = cli_state_dir {
        if socket == default_socket(&state_dir) {
            socket = dir.join("nightjar.sock");
        }
        state_dir = dir.to_path_buf();
    }
    (state_dir, socket)
}

/// Longest config file read (1 MiB, some hundred times the example with
/// every key): `--config /dev/zero` or a wrong multi-gigabyte file is an
/// error, not a process that reads until memory runs out.
pub const MAX_CONFIG: u64 = 1 << 20;

/// The text of config file `p`, refused past [`MAX_CONFIG`] bytes. Client
/// and daemon read it alike.
pub fn read_config(p: &Path) -> Result<String, String> {
    use std::io::Read;
    let cannot = |e: std::io::Error| format!("cannot read config file {}: {e}", p.display());
    let mut bytes = Vec::new();
    std::fs::File::open(p)
        .and_then(|f| f.take(MAX_CONFIG + 1).read_to_end(&mut bytes))
        .map_err(cannot)?;
    if bytes.len() as u64 > MAX_CONFIG {
        return Err(format!(
            "config file {} is larger than {} MiB: is it the right file?",
            p.display(),
            MAX_CONFIG >> 20
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        format!(
            "config file {}: not UTF-8 text (byte {})",
            p.display(),
            e.utf8_error().valid_up_to()
        )
    })
}

/// A path given in config file `config`: a relative one starts at the
/// file's folder (as in task files), so the daemon and every client find the
/// same place whatever their working directories. Empty stays empty (a
/// default).
pub fn from_config(config: &Path, value: &Path) -> PathBuf {
    if value.is_absolute() || value.as_os_str().is_empty() {
        return value.to_path_buf();
    }
    let file = std::path::absolute(config).unwrap_or_else(|_| config.to_path_buf());
    file.parent().unwrap_or(Path::new("/")).join(value)
}

/// The socket the daemon of `config` (a TOML file) listens on, reading only
/// its `state_dir` and `socket` keys: what a client needs to connect. The
/// daemon checks the rest of the file.
pub fn socket_of(config: Option<&Path>, cli_state_dir: Option<&Path>) -> Result<PathBuf, String> {
    let (mut file_dir, mut file_socket) = (None, None);
    if let Some(p) = config {
        let text = read_config(p)?;
        let table: toml::Table =
            toml::from_str(&text).map_err(|e| format!("config file {}: {e}", p.display()))?;
        let path_key = |key: &str| -> Result<Option<PathBuf>, String> {
            match table.get(key) {
                None => Ok(None),
                Some(toml::Value::String(s)) => Ok(Some(from_config(p, Path::new(s)))),
                Some(v) => Err(format!(
                    "config file {}: key `{key}` must be a path in quotes, not `{v}`",
                    p.display()
                )),
            }
        };
        file_dir = path_key("state_dir")?;
        file_socket = path_key("socket")?;
    }
    Ok(locate(file_dir, file_socket, cli_state_dir).1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_state_dir_moves_a_default_socket_but_not_a_named_one() {
        let (dir, sock) = locate(Some("/s".into()), None, Some(Path::new("/cli")));
        assert_eq!(
            (dir.as_path(), sock.as_path()),
            (Path::new("/cli"), Path::new("/cli/nightjar.sock"))
        );
        let (_, sock) = locate(
            Some("/s".into()),
            Some("/run/x.sock".into()),
            Some(Path::new("/cli")),
        );
        assert_eq!(sock, Path::new("/run/x.sock"));
        let (_, sock) = locate(Some("/s".into()), None, None);
        assert_eq!(sock, Path::new("/s/nightjar.sock"));
    }

    #[test]
    fn root_defaults_to_the_system_daemons_places_and_others_to_their_own() {
        let dir = default_state_dir();
        let sock = default_socket(&dir);
        if is_root() {
            assert_eq!(dir, Path::new(SYSTEM_STATE_DIR));
            assert_eq!(sock, Path::new(SYSTEM_SOCKET));
        } else {
            assert_ne!(dir, Path::new(SYSTEM_STATE_DIR));
            assert_ne!(sock, Path::new(SYSTEM_SOCKET));
        }
        // A state dir of one's own keeps its socket inside, root or not.
        assert_eq!(
            default_socket(Path::new("/srv/nj")),
            Path::new("/srv/nj/nightjar.sock")
        );
    }

    #[test]
    fn socket_of_reads_only_the_two_keys_and_names_a_bad_one() {
        let dir = std::env::temp_dir().join(format!("nj-paths-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("c.toml");
        std::fs::write(&f, "state_dir = \"/x\"\nslots = 3\n[plugins]\nchain = []\n").unwrap();
        assert_eq!(
            socket_of(Some(&f), None).unwrap(),
            Path::new("/x/nightjar.sock")
        );
        std::fs::write(&f, "socket = 5\n").unwrap();
        let e = socket_of(Some(&f), None).unwrap_err();
        assert!(e.contains("key `socket`") && e.contains("c.toml"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_relative_state_dir_starts_at_the_config_files_folder_not_the_working_dir() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("lab/c.toml");
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(&f, "state_dir = \"state\"\n").unwrap();
        assert_eq!(
            socket_of(Some(&f), None).unwrap(),
            dir.path().join("lab/state/nightjar.sock")
        );
        std::fs::write(&f, "socket = \"../run/nj.sock\"\n").unwrap();
        assert_eq!(
            socket_of(Some(&f), None).unwrap(),
            dir.path().join("lab/../run/nj.sock")
        );
        // A relative config path is made absolute first (from the working dir).
        let rel = from_config(Path::new("c.toml"), Path::new("state"));
        assert_eq!(rel, std::env::current_dir().unwrap().join("state"));
        assert_eq!(from_config(&f, Path::new("/abs")), Path::new("/abs"));
        assert_eq!(from_config(&f, Path::new("")), Path::new(""));
    }

    #[test]
    fn a_config_file_past_the_limit_or_not_text_is_refused_without_reading_it_all() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big.toml");
        let f = std::fs::File::create(&big).unwrap();
        f.set_len(1 << 30).unwrap(); // 1 GiB, sparse
        let e = socket_of(Some(&big), None).unwrap_err();
        assert!(
            e.contains("larger than 1 MiB") && e.contains("big.toml"),
            "{e}"
        );
        // A device that never ends reads no further than the limit.
        let e = socket_of(Some(Path::new("/dev/zero")), None).unwrap_err();
        assert!(e.contains("larger than 1 MiB"), "{e}");
        let bin = dir.path().join("bin.toml");
        std::fs::write(&bin, b"state_dir = \"/x\xff\"\n").unwrap();
        let e = socket_of(Some(&bin), None).unwrap_err();
        assert!(e.contains("not UTF-8 text (byte 15)"), "{e}");
    }
}
