//! Local users for the many-users tests: accounts made with `useradd`
//! (njtest-alice, njtest-bob, njtest-carol of the group njtest-admins), a
//! root daemon whose socket every user may reach, and the CLI run as a
//! user through `setpriv`.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;

use crate::harness::Nj;

/// A local test account.
#[derive(Debug, Clone)]
pub struct Acct {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    pub home: PathBuf,
}

/// The test accounts and a folder of the binaries every user may run.
#[derive(Clone)]
pub struct Users {
    pub alice: Acct,
    pub bob: Acct,
    pub carol: Acct,
    pub bin: PathBuf,
}

static SETUP: Mutex<Option<Users>> = Mutex::new(None);

pub fn sh(cmd: &str, args: &[&str]) -> Output {
    Command::new(cmd).args(args).output().expect(cmd)
}

/// Makes `name` (idempotent) with a home of its own, mode 0700.
pub fn account(name: &str, extra_group: Option<&str>) -> Acct {
    if !sh("id", &["-u", name]).status.success() {
        let mut args = vec!["-m", "-s", "/bin/sh", "-U"];
        if let Some(g) = extra_group {
            args.extend(["-G", g]);
        }
        args.push(name);
        let out = sh("useradd", &args);
        assert!(
            out.status.success() || sh("id", &["-u", name]).status.success(),
            "useradd {name}: {out:?}"
        );
    }
    if let Some(g) = extra_group {
        sh("usermod", &["-aG", g, name]);
    }
    let num = |flag: &str| -> u32 {
        let out = sh("id", &[flag, name]);
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .expect("id")
    };
    let (uid, gid) = (num("-u"), num("-g"));
    let home = PathBuf::from(format!("/home/{name}"));
    std::fs::create_dir_all(&home).unwrap();
    std::os::unix::fs::chown(&home, Some(uid), Some(gid)).unwrap();
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o700)).unwrap();
    Acct {
        name: name.into(),
        uid,
        gid,
        home,
    }
}

/// A folder with the binaries that every user may run: the build's own
/// when every folder on its way is open to others, else copies in /tmp
/// (copies of earlier runs are removed first).
fn shared_bin() -> PathBuf {
    let from = Path::new(crate::harness::BIN).parent().unwrap();
    let open = from
        .ancestors()
        .all(|d| std::fs::metadata(d).is_ok_and(|m| m.mode() & 0o001 != 0));
    if open {
        return from.to_path_buf();
    }
    // Copies of earlier runs go; those of a test process still running
    // (the e2e and slurm targets run at once) stay.
    if let Ok(old) = std::fs::read_dir("/tmp") {
        for e in old.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(pid) = name.strip_prefix("njtest-bin-") else {
                continue;
            };
            if !Path::new("/proc").join(pid).exists() {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
    let bin = PathBuf::from(format!("/tmp/njtest-bin-{}", std::process::id()));
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    for b in ["nightjar", "nightjard", "nightjar-supervise"] {
        if from.join(b).exists() {
            std::fs::copy(from.join(b), bin.join(b)).unwrap();
        }
    }
    bin
}

/// An exclusive lock, across processes, on making the accounts: the e2e
/// and slurm targets run at once, and `useradd` fails while another holds
/// /etc/passwd's lock. Released when the file is dropped.
fn accounts_lock() -> std::fs::File {
    use std::os::fd::AsRawFd;
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open("/tmp/njtest-accounts.lock")
        .expect("open /tmp/njtest-accounts.lock");
    // SAFETY: flock on a descriptor this function owns.
    let locked = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) };
    assert_eq!(locked, 0, "lock /tmp/njtest-accounts.lock");
    f
}

/// The id of group `name`.
pub fn group_gid(name: &str) -> u32 {
    let out = sh("getent", &["group", name]);
    let line = String::from_utf8_lossy(&out.stdout).into_owned();
    line.split(':')
        .nth(2)
        .and_then(|g| g.trim().parse().ok())
        .expect("getent group")
}

/// The accounts; fails the test `test` where they cannot be made (not
/// root, or a tool missing).
pub fn users(test: &str) -> Users {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        crate::harness::needs(
            "root",
            format!("{test}: to run a system daemon and act as other users"),
        );
    }
    for tool in ["useradd", "usermod", "groupadd", "setpriv"] {
        if !sh("sh", &["-c", &format!("command -v {tool}")])
            .status
            .success()
        {
            crate::harness::needs(
                &format!("`{tool}`"),
                format!("{test}: Debian's passwd and util-linux have it"),
            );
        }
    }
    let mut done = SETUP.lock().unwrap_or_else(|e| e.into_inner());
    let made = done.get_or_insert_with(|| {
        let _accounts = accounts_lock();
        let g = sh("groupadd", &["-f", "njtest-admins"]);
        assert!(g.status.success(), "groupadd: {g:?}");
        let alice = account("njtest-alice", None);
        let bob = account("njtest-bob", None);
        let carol = account("njtest-carol", Some("njtest-admins"));
        let bin = shared_bin();
        Users {
            alice,
            bob,
            carol,
            bin,
        }
    });
    made.clone()
}

/// A root daemon whose socket is in a folder every user may enter.
pub struct System {
    pub nj: Nj,
    pub socket: PathBuf,
    _sockdir: tempfile::TempDir,
}

/// Starts a root daemon with `extra` config (besides the socket and `[users]`).
pub fn system(extra: &str) -> System {
    system_in(extra, None)
}

/// As [`system`], the daemon started in the folder `cwd`.
pub fn system_in(extra: &str, cwd: Option<&Path>) -> System {
    system_with(extra, cwd, &[])
}

/// As [`system_in`], with `env` added to the daemon's environment.
pub fn system_with(extra: &str, cwd: Option<&Path>, env: &[(&str, &str)]) -> System {
    let sockdir = tempfile::Builder::new()
        .prefix("njtest-sock")
        .tempdir()
        .unwrap();
    std::fs::set_permissions(sockdir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let socket = sockdir.path().join("nightjar.sock");
    let users = if extra.contains("[users]") {
        ""
    } else {
        "[users]\nadmin_group = \"njtest-admins\"\n"
    };
    let mut nj = Nj::new(&format!(
        "socket = \"{}\"\n{extra}\n{users}",
        socket.display()
    ));
    nj.cwd = cwd.map(Path::to_path_buf);
    nj.env
        .extend(env.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    nj.start();
    System {
        nj,
        socket,
        _sockdir: sockdir,
    }
}

impl System {
    /// The CLI run as `who` (their uid, gid and groups; their home as the
    /// working dir; the socket named by NIGHTJAR_SOCKET).
    pub fn cli(&self, u: &Users, who: &Acct, args: &[&str]) -> Output {
        as_user(u, who, Some(&self.socket), args)
    }

    /// As `cli`, asserting success; stdout.
    pub fn ok(&self, u: &Users, who: &Acct, args: &[&str]) -> String {
        let out = self.cli(u, who, args);
        assert!(
            out.status.success(),
            "{} nightjar {args:?}: {out:?}\n{}",
            who.name,
            self.nj.daemon_log()
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Submits as `who`; the new task's id.
    pub fn submit(&self, u: &Users, who: &Acct, args: &[&str]) -> i64 {
        let mut a = vec!["--json", "submit"];
        a.extend_from_slice(args);
        let v: Value = serde_json::from_str(&self.ok(u, who, &a)).expect("submit json");
        v[0]["id"]
            .as_i64()
            .unwrap_or_else(|| panic!("no id in {v}"))
    }
}

/// `nightjar ARGS` as `who`, against `socket` (`None`: the client's own search).
pub fn as_user(u: &Users, who: &Acct, socket: Option<&Path>, args: &[&str]) -> Output {
    setpriv(who, &u.bin.join("nightjar"), socket)
        .args(args)
        .output()
        .expect("run setpriv")
}

/// A command running `program` as `who` in their home, with a bare environment.
pub fn setpriv(who: &Acct, program: &Path, socket: Option<&Path>) -> Command {
    let mut c = Command::new("setpriv");
    c.arg(format!("--reuid={}", who.uid))
        .arg(format!("--regid={}", who.gid))
        .arg("--init-groups")
        .arg("--")
        .arg(program)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", &who.home)
        .current_dir(&who.home);
    if let Some(s) = socket {
        c.env("NIGHTJAR_SOCKET", s);
    }
    c
}

/// A folder of `who`'s, in their home, made fresh.
pub fn folder_of(who: &Acct, name: &str) -> PathBuf {
    let p = who.home.join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    std::os::unix::fs::chown(&p, Some(who.uid), Some(who.gid)).unwrap();
    p
}

pub fn wait_end(s: &System, id: i64) -> Value {
    s.nj.wait_within(id, Duration::from_secs(60));
    s.nj.show(id)
}
