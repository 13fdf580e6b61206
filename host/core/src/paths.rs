//! Where the daemon keeps its state and where its socket is, as both the
//! daemon and the client work it out (so the two never disagree).

use std::path::{Path, PathBuf};

/// `$XDG_STATE_HOME/nightjar`, else `~/.local/state/nightjar`.
pub fn default_state_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("XDG_STATE_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(d).join("nightjar");
    }
    let home = std::env::var_os("HOME").unwrap_or_else(|| "/tmp".into());
    PathBuf::from(home).join(".local/state/nightjar")
}

/// `$XDG_RUNTIME_DIR/nightjar.sock` for the default state dir, else a socket inside the state dir.
pub fn default_socket(state_dir: &Path) -> PathBuf {
    if state_dir == default_state_dir()
        && let Some(d) = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty())
    {
        return PathBuf::from(d).join("nightjar.sock");
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

/// The socket the daemon of `config` (a TOML file) listens on, reading only
/// its `state_dir` and `socket` keys: what a client needs to connect. The
/// daemon checks the rest of the file.
pub fn socket_of(config: Option<&Path>, cli_state_dir: Option<&Path>) -> Result<PathBuf, String> {
    let (mut file_dir, mut file_socket) = (None, None);
    if let Some(p) = config {
        let text = std::fs::read_to_string(p)
            .map_err(|e| format!("cannot read config file {}: {e}", p.display()))?;
        let table: toml::Table =
            toml::from_str(&text).map_err(|e| format!("config file {}: {e}", p.display()))?;
        let path_key = |key: &str| -> Result<Option<PathBuf>, String> {
            match table.get(key) {
                None => Ok(None),
                Some(toml::Value::String(s)) => Ok(Some(PathBuf::from(s))),
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
}
