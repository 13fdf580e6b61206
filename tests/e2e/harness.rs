//! A real daemon on a throwaway state dir, driven through the real CLI.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_nightjar");

/// The daemon binary (`nightjar daemon` runs it; it sits next to `BIN`).
pub const DAEMON_BIN: &str = env!("CARGO_BIN_EXE_nightjard");

/// A raw request line of this protocol version for `req` (a JSON object
/// with `verb`), without the newline.
pub fn raw_request(req: serde_json::Value) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({ "v": nightjar::api::PROTOCOL, "req": req })).unwrap()
}

/// One daemon's world: a temp dir with its config, state dir and a scratch area.
pub struct Nj {
    pub dir: tempfile::TempDir,
    pub state: PathBuf,
    pub config: PathBuf,
    /// Extra environment for the daemon.
    pub env: Vec<(String, String)>,
    /// The folder the daemon is started in (none: the test's own).
    pub cwd: Option<PathBuf>,
    daemon: Option<Child>,
}

impl Nj {
    /// A world whose config holds `extra` (TOML) besides the state dir and a 1 s grace.
    pub fn new(extra: &str) -> Nj {
        let dir = tempfile::tempdir().expect("tempdir");
        let state = dir.path().join("state");
        let config = dir.path().join("nightjar.toml");
        std::fs::create_dir_all(dir.path().join("work")).expect("work dir");
        let nj = Nj {
            dir,
            state,
            config,
            env: Vec::new(),
            cwd: None,
            daemon: None,
        };
        nj.set_config(extra);
        nj
    }

    /// Writes the config again with `extra` (read at the daemon's next start).
    pub fn set_config(&self, extra: &str) {
        let text = format!(
            "state_dir = \"{}\"\n{extra}\n{}",
            self.state.display(),
            if extra.contains("[sandbox]") {
                ""
            } else {
                "[sandbox]\ngrace = \"1s\"\n"
            }
        );
        std::fs::write(&self.config, text).expect("write config");
    }

    /// A folder inside the world, created.
    pub fn path(&self, name: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::create_dir_all(&p).expect("mkdir");
        p
    }

    /// Starts the daemon and waits until it answers.
    pub fn start(&mut self) {
        self.start_with(Path::new(BIN));
    }

    /// Starts the daemon from the binary `bin` and waits until it answers.
    pub fn start_with(&mut self, bin: &Path) {
        let log = std::fs::File::options()
            .create(true)
            .append(true)
            .open(self.dir.path().join("daemon.log"))
            .expect("daemon log");
        let mut cmd = Command::new(bin);
        if let Some(d) = &self.cwd {
            cmd.current_dir(d);
        }
        cmd.args(["--config", self.config.to_str().unwrap(), "daemon"])
            .env("SECRET_TOKEN", "must-not-leak")
            // Compiled plugin code is shared by every test daemon (compiling in a debug build is slow).
            .env(
                "NIGHTJAR_PLUGIN_CACHE",
                concat!(env!("CARGO_TARGET_TMPDIR"), "/plugin-cache"),
            )
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        // A test that just wrote `bin` (a wrapper script) may race another
        // test's fork, whose child holds the file open for writing until it
        // execs: ETXTBSY, for a moment.
        let mut tries = 0;
        let child = loop {
            match cmd.spawn() {
                Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 200 => {
                    tries += 1;
                    std::thread::sleep(Duration::from_millis(10));
                }
                other => break other.expect("spawn daemon"),
            }
        };
        self.daemon = Some(child);
        let t0 = Instant::now();
        while !self.cli(&["ls"]).status.success() {
            assert!(
                t0.elapsed() < Duration::from_secs(90),
                "daemon did not come up: {}",
                self.daemon_log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Starts the daemon expecting it to refuse: waits (30 s at most) for
    /// it to exit and returns its exit code and what it logged meanwhile.
    pub fn start_refused(&mut self) -> (i32, String) {
        let before = self.daemon_log().len();
        let log = std::fs::File::options()
            .create(true)
            .append(true)
            .open(self.dir.path().join("daemon.log"))
            .expect("daemon log");
        let mut child = Command::new(BIN)
            .args(["--config", self.config.to_str().unwrap(), "daemon"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn daemon");
        let t0 = Instant::now();
        let code = loop {
            if let Some(st) = child.try_wait().expect("poll daemon") {
                break st.code().unwrap_or(-1);
            }
            if t0.elapsed() > Duration::from_secs(30) {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "the daemon started although it should refuse:\n{}",
                    self.daemon_log()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        (code, self.daemon_log()[before..].to_string())
    }

    /// The running daemon's pid.
    pub fn daemon_pid(&self) -> Option<u32> {
        self.daemon.as_ref().map(|c| c.id())
    }

    /// The daemon's stderr so far.
    pub fn daemon_log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("daemon.log")).unwrap_or_default()
    }

    /// kill -9 of the daemon (supervisors live on).
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.daemon.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// SIGTERM to the daemon; returns its exit status.
    pub fn term(&mut self) -> std::process::ExitStatus {
        let mut c = self.daemon.take().expect("daemon running");
        unsafe_kill(c.id() as i32, 15);
        c.wait().expect("wait daemon")
    }

    /// Runs the CLI against this world.
    pub fn cli(&self, args: &[&str]) -> Output {
        Command::new(BIN)
            .arg("--config")
            .arg(&self.config)
            .args(args)
            .current_dir(self.dir.path().join("work"))
            .output()
            .expect("run cli")
    }

    /// Runs the CLI, asserting success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.cli(args);
        assert!(
            out.status.success(),
            "nightjar {args:?} failed: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            self.daemon_log()
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs the CLI with `--json` and parses the output.
    pub fn json(&self, args: &[&str]) -> Value {
        let mut a = vec!["--json"];
        a.extend_from_slice(args);
        serde_json::from_str(&self.ok(&a)).expect("json output")
    }

    /// Submits `args` (flags, `--`, command) and returns the new id.
    pub fn submit(&self, args: &[&str]) -> i64 {
        let mut a = vec!["submit"];
        a.extend_from_slice(args);
        let v = self.json(&a);
        v[0]["id"].as_i64().expect("id")
    }

    /// `nightjar wait ID`'s exit status; a test fails (instead of hanging)
    /// when the task has not ended within 60 s.
    pub fn wait(&self, id: i64) -> i32 {
        self.wait_within(id, Duration::from_secs(60))
    }

    /// `nightjar wait ID`'s exit status, for a task that waits on the
    /// daemon's slow loops (the 10 s disk watch, more than once).
    pub fn wait_within(&self, id: i64, limit: Duration) -> i32 {
        let mut child = Command::new(BIN)
            .arg("--config")
            .arg(&self.config)
            .args(["wait", &id.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("run nightjar wait");
        let t0 = Instant::now();
        loop {
            if let Some(status) = child.try_wait().expect("poll nightjar wait") {
                return status.code().unwrap_or(-1);
            }
            if t0.elapsed() > limit {
                let _ = child.kill();
                panic!(
                    "task {id} did not end within {limit:?}\n{}",
                    self.daemon_log()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `show --json`.
    pub fn show(&self, id: i64) -> Value {
        self.json(&["show", &id.to_string()])
    }

    /// Polls until `f` is true (20 s at most).
    pub fn until(&self, what: &str, f: impl FnMut() -> bool) {
        self.until_within(what, Duration::from_secs(20), f)
    }

    /// Polls until `f` is true, for what waits on a plugin compiled at the
    /// daemon's first use (a debug build on 2 busy cores takes tens of
    /// seconds): 180 s at most.
    pub fn until_slow(&self, what: &str, f: impl FnMut() -> bool) {
        self.until_within(what, Duration::from_secs(180), f)
    }

    fn until_within(&self, what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
        let t0 = Instant::now();
        while !f() {
            assert!(
                t0.elapsed() < limit,
                "timed out waiting for {what}\n{}",
                self.daemon_log()
            );
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// One request line straight on the socket (no CLI); the parsed reply line.
    pub fn request(&self, req: Value) -> Value {
        use std::io::{BufRead, BufReader, Write};
        let mut s = std::os::unix::net::UnixStream::connect(self.state.join("nightjar.sock"))
            .expect("connect to the daemon's socket");
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        s.write_all(&raw_request(req)).unwrap();
        writeln!(s).unwrap();
        let mut reply = String::new();
        BufReader::new(s).read_line(&mut reply).unwrap();
        serde_json::from_str(&reply).unwrap()
    }

    /// How many tasks are running.
    pub fn running(&self) -> usize {
        let rows = self.json(&["ls", "--state", "running"]);
        rows.as_array().map(|a| a.len()).unwrap_or(0)
    }
}

impl Drop for Nj {
    fn drop(&mut self) {
        self.kill9();
        // Leave nothing behind: supervisors and tasks of this world.
        let _ = Command::new("pkill")
            .args(["-9", "-f", self.state.to_str().unwrap_or("-")])
            .status();
    }
}

#[path = "harness_tools.rs"]
mod tools;
pub use tools::*;
