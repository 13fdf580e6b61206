//! The slim client's edges, as a hostile reviewer found them: whatever
//! answers on the socket, the client's memory stays bounded and its exit
//! status names the failure; the config file it reads is bounded and its
//! relative paths mean the same to client and daemon; `nightjard` is run
//! only from where it should be, never in a loop, with argv bytes intact.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::harness::{BIN, DAEMON_BIN, Nj};

/// Answers the next `replies.len()` connections on `socket`, each with its
/// reply after reading the request line.
fn fake_daemon(socket: &Path, replies: Vec<fn(&mut UnixStream)>) -> std::thread::JoinHandle<()> {
    std::fs::create_dir_all(socket.parent().unwrap()).unwrap();
    let listener = UnixListener::bind(socket).unwrap();
    std::thread::spawn(move || {
        for reply in replies {
            let (mut s, _) = listener.accept().unwrap();
            let mut line = String::new();
            BufReader::new(s.try_clone().unwrap())
                .read_line(&mut line)
                .unwrap();
            reply(&mut s);
        }
    })
}

/// Runs `cmd` to its end (killed after 60 s): exit status, stderr, and peak
/// resident memory in KiB.
#[expect(
    clippy::zombie_processes,
    reason = "reaped by wait4, which also reports its peak memory"
)]
fn bounded(cmd: &mut Command) -> (i32, String, i64) {
    let mut child = cmd
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut s).ok();
        s
    });
    let pid = child.id() as i32;
    let t0 = Instant::now();
    // SAFETY: rusage is plain data; all zeroes is a valid value.
    let (mut status, mut usage) = (0, unsafe { std::mem::zeroed::<libc::rusage>() });
    // SAFETY: pid is our child; status and usage are valid out-pointers.
    while unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) } == 0 {
        if t0.elapsed() > Duration::from_secs(60) {
            crate::harness::unsafe_kill(pid, libc::SIGKILL);
            panic!("{cmd:?} still running after 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -libc::WTERMSIG(status)
    };
    (code, err.join().unwrap(), usage.ru_maxrss)
}

fn client(nj: &Nj, args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.arg("--config").arg(&nj.config).args(args);
    c
}

#[test]
fn a_reply_that_never_ends_is_refused_at_the_cap_with_bounded_memory() {
    let nj = Nj::new("");
    let fake = fake_daemon(
        &nj.state.join("nightjar.sock"),
        vec![|s| {
            let chunk = vec![b' '; 1 << 20];
            let _ = s.write_all(br#"{"v":2,"ok":["#);
            while s.write_all(&chunk).is_ok() {}
        }],
    );
    let (code, err, rss_kib) = bounded(&mut client(&nj, &["ls"]));
    fake.join().unwrap();
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("longer than 256 MiB"), "{err}");
    // The cap plus the binary: a client that kept reading held gigabytes.
    // The kernel reports a child's peak as at least this test process's
    // own peak (the child was spawned sharing its memory until its exec),
    // which other tests running here can push past the cap: the bound is
    // the larger of the two.
    // SAFETY: rusage is plain data; getrusage fills it.
    let mut me = unsafe { std::mem::zeroed::<libc::rusage>() };
    // SAFETY: a valid out-pointer for this process's usage.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut me) };
    let bound = (600 << 10).max(me.ru_maxrss + (64 << 10));
    assert!(
        rss_kib < bound,
        "peak RSS {rss_kib} KiB (this test process's peak: {} KiB)",
        me.ru_maxrss
    );
}

#[test]
fn a_reply_of_another_version_or_cut_short_is_a_protocol_mismatch_not_a_missing_daemon() {
    let nj = Nj::new("");
    let fake = fake_daemon(
        &nj.state.join("nightjar.sock"),
        vec![
            |s| s.write_all(b"{\"v\":3,\"ok\":{\"rows\":[]}}\n").unwrap(),
            // nightjar 0.1, which cannot read a versioned request.
            |s| {
                s.write_all(b"{\"ok\":null,\"error\":\"bad request: missing field `verb` at line 1 column 37\"}\n")
                    .unwrap()
            },
            |s| s.write_all(b"{\"v\":2,\"ok\":[{\"id\":\n").unwrap(),
            |s| s.write_all(b"{\"v\":2,\"ok\":\"\xff\"}\n").unwrap(),
        ],
    );
    let (code, err, _) = bounded(&mut client(&nj, &["ls"]));
    assert_eq!(code, 5, "{err}");
    assert!(
        err.contains("protocol 3") && err.contains("protocol 2"),
        "{err}"
    );
    let (code, err, _) = bounded(&mut client(&nj, &["show", "1"]));
    assert_eq!(code, 5, "{err}");
    assert!(
        err.contains("protocol 1 (nightjar 0.1)") && err.contains("missing field `verb`"),
        "{err}"
    );
    let (code, err, _) = bounded(&mut client(&nj, &["show", "1"]));
    assert_eq!(code, 5, "{err}");
    assert!(err.contains("does not decode"), "{err}");
    let (code, err, _) = bounded(&mut client(&nj, &["ls"]));
    assert_eq!(code, 5, "{err}");
    assert!(err.contains("not UTF-8"), "{err}");
    fake.join().unwrap();
}

#[test]
fn a_config_that_never_ends_is_refused_and_a_relative_state_dir_is_found_from_anywhere() {
    let (code, err, _) = bounded(Command::new(BIN).args(["--config", "/dev/zero", "ls"]));
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("larger than 1 MiB"), "{err}");
    // A relative state dir starts at the config file's folder, so a daemon
    // started in one folder and a client run in another agree on it.
    let nj = Nj::new("");
    let lab = nj.path("lab");
    std::fs::write(
        lab.join("nightjar.toml"),
        "state_dir = \"state\"\n[plugins]\nchain = []\n",
    )
    .unwrap();
    let mut daemon = Command::new(BIN)
        .args(["--config", "nightjar.toml", "daemon"])
        .current_dir(&lab)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let config = PathBuf::from("../lab/nightjar.toml");
    let ls = || {
        Command::new(BIN)
            .arg("--config")
            .arg(&config)
            .arg("ls")
            .current_dir(nj.path("work"))
            .output()
            .unwrap()
    };
    let t0 = Instant::now();
    let mut out = ls();
    while !out.status.success() && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(50));
        out = ls();
    }
    crate::harness::unsafe_kill(daemon.id() as i32, libc::SIGTERM);
    let _ = daemon.wait();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(lab.join("state/nightjar.db").exists());
}

/// A folder holding a link to the client named `nightjar`.
fn client_copy(nj: &Nj, name: &str) -> PathBuf {
    let dir = nj.path(name);
    let bin = dir.join("nightjar");
    if std::fs::hard_link(BIN, &bin).is_err() {
        std::fs::copy(BIN, &bin).unwrap();
    }
    bin
}

/// A `nightjard` stand-in in `dir` that writes its arguments, one a line, to `$ARGS_OUT`.
fn recorder(dir: &Path) {
    let p = dir.join("nightjard");
    std::fs::write(&p, "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$ARGS_OUT\"\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn nightjard_is_run_only_when_executable_from_an_absolute_path_never_itself_and_argv_is_kept() {
    let nj = Nj::new("");
    let bin = client_copy(&nj, "bin");
    let out = nj.dir.path().join("args");
    let run = |path: &OsStr, cwd: &Path, arg: &OsStr| {
        let _ = std::fs::remove_file(&out);
        bounded(
            Command::new(&bin)
                .args([OsStr::new("daemon"), OsStr::new("--config"), arg])
                .env("PATH", path)
                .env("ARGS_OUT", &out)
                .current_dir(cwd),
        )
    };
    let odd = OsStr::from_bytes(b"/tmp/\xff\xfe.toml");
    // A `nightjard` that is the client itself (a link): an error, not an
    // exec loop for ever.
    std::os::unix::fs::symlink("nightjar", bin.with_file_name("nightjard")).unwrap();
    let (code, err, _) = run(OsStr::new("/usr/bin:/bin"), nj.dir.path(), odd);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("ran this client again"), "{err}");
    // Not executable beside the client: the one on PATH runs, with the
    // argument's bytes as given.
    std::fs::remove_file(bin.with_file_name("nightjard")).unwrap();
    std::fs::write(bin.with_file_name("nightjard"), "not a program").unwrap();
    let on_path = nj.path("on-path");
    recorder(&on_path);
    let (code, err, _) = run(on_path.as_os_str(), nj.dir.path(), odd);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        std::fs::read(&out).unwrap(),
        [&b"daemon\n--config\n"[..], odd.as_bytes(), b"\n"].concat()
    );
    // An empty or relative PATH entry does not run the working dir's `nightjard`.
    let cwd = nj.path("cwd");
    recorder(&cwd);
    for path in ["", ":", ".", "/nonexistent:"] {
        let (code, err, _) = run(OsStr::new(path), &cwd, odd);
        assert_eq!(code, 1, "PATH={path:?}: {err}");
        assert!(err.contains("not executable"), "PATH={path:?}: {err}");
        assert!(!out.exists(), "PATH={path:?} ran ./nightjard");
    }
}

#[test]
fn the_daemon_binary_names_a_client_verb_whose_arguments_are_not_utf8() {
    let (code, err, _) = bounded(Command::new(DAEMON_BIN).args([
        OsStr::new("show"),
        OsStr::new("1"),
        OsStr::new("--config"),
        OsStr::from_bytes(b"/tmp/\xff"),
    ]));
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("`nightjar show 1 --config /tmp/\u{fffd}`"),
        "{err}"
    );
}

#[test]
fn plugins_check_reads_the_plugin_config_apart_from_the_daemon_config() {
    // `--config` is the daemon's config (its limits apply), as for every
    // verb; the plugin's own config is `--plugin-config`. Both named
    // `--config`, the plugin config was read as the daemon's and refused.
    let nj = Nj::new("[plugins]\nmax_file_size = \"1KiB\"\n");
    let hostile = env!("NIGHTJAR_TEST_PLUGIN_HOSTILE");
    let cfg = nj.path("work").join("plugin.toml");
    let check = |mode: &str, daemon_config: bool| {
        std::fs::write(&cfg, format!("mode = \"{mode}\"\n")).unwrap();
        let mut c = Command::new(BIN);
        if daemon_config {
            c.arg("--config").arg(&nj.config);
        }
        c.args(["plugins", "check", hostile, "--plugin-config"])
            .arg(&cfg)
            .output()
            .unwrap()
    };
    let out = check("ok", false);
    assert!(out.status.success(), "{out:?}");
    let out = check("reject-config", false);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("this plugin refuses every config"), "{err}");
    // The daemon's config still decides the limits: a 1 KiB file cap.
    let out = check("ok", true);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("over plugins.max_file_size (1024 bytes)"),
        "{err}"
    );
}
