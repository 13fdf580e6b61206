//! Many users on one machine, for real: a daemon run as root, the CLI run as
//! local users made with `useradd` (njtest-alice, njtest-bob, and
//! njtest-carol of the group njtest-admins) through `setpriv`. Each test
//! prints `SKIP: ...` and returns when not root or the tools are missing.

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

fn sh(cmd: &str, args: &[&str]) -> Output {
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

/// The id of group `name`.
pub fn group_gid(name: &str) -> u32 {
    let out = sh("getent", &["group", name]);
    let line = String::from_utf8_lossy(&out.stdout).into_owned();
    line.split(':')
        .nth(2)
        .and_then(|g| g.trim().parse().ok())
        .expect("getent group")
}

/// The accounts, or `None` after printing why the test is skipped.
pub fn users(test: &str) -> Option<Users> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("SKIP: {test}: needs root (to run a system daemon and act as other users)");
        return None;
    }
    for tool in ["useradd", "usermod", "groupadd", "setpriv"] {
        if !sh("sh", &["-c", &format!("command -v {tool}")])
            .status
            .success()
        {
            println!("SKIP: {test}: `{tool}` is missing (Debian: passwd, util-linux)");
            return None;
        }
    }
    let mut done = SETUP.lock().unwrap_or_else(|e| e.into_inner());
    let made = done.get_or_insert_with(|| {
        let g = sh("groupadd", &["-f", "njtest-admins"]);
        assert!(g.status.success(), "groupadd: {g:?}");
        let alice = account("njtest-alice", None);
        let bob = account("njtest-bob", None);
        let carol = account("njtest-carol", Some("njtest-admins"));
        // The binaries, where every user may run them.
        let bin = PathBuf::from(format!("/tmp/njtest-bin-{}", std::process::id()));
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        let from = Path::new(crate::harness::BIN).parent().unwrap();
        for b in ["nightjar", "nightjard", "nightjar-supervise"] {
            if from.join(b).exists() {
                std::fs::copy(from.join(b), bin.join(b)).unwrap();
            }
        }
        Users {
            alice,
            bob,
            carol,
            bin,
        }
    });
    Some(made.clone())
}

/// A root daemon whose socket is in a folder every user may enter.
pub struct System {
    pub nj: Nj,
    pub socket: PathBuf,
    _sockdir: tempfile::TempDir,
}

/// Starts a root daemon with `extra` config (besides the socket and `[users]`).
pub fn system(extra: &str) -> System {
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

#[test]
fn a_task_runs_as_its_owner_with_their_groups_home_and_output_and_cannot_regain_root() {
    let Some(u) = users("run as owner") else {
        return;
    };
    let s = system("");
    let mode = std::fs::metadata(&s.socket).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o666, "a root daemon's socket without socket_group");
    let work = folder_of(&u.alice, "nj-run");
    let script = "grep -E '^(Uid|Gid):' /proc/$$/status > $NIGHTJAR_OUTPUT_PATH/report; \
         echo groups $(id -G) >> $NIGHTJAR_OUTPUT_PATH/report; \
         echo home=$HOME user=$USER logname=$LOGNAME >> $NIGHTJAR_OUTPUT_PATH/report; \
         if /usr/bin/python3 -c 'import os; os.setuid(0)' 2>/dev/null; then echo setuid=root; else echo setuid=refused; fi >> $NIGHTJAR_OUTPUT_PATH/report; \
         if kill -TERM $PPID 2>/dev/null; then echo kill=done; else echo kill=refused; fi >> $NIGHTJAR_OUTPUT_PATH/report";
    let id = s.submit(
        &u,
        &u.alice,
        &[
            "--workdir",
            work.to_str().unwrap(),
            "--output",
            "out",
            "--",
            "sh",
            "-c",
            script,
        ],
    );
    let shown = wait_end(&s, id);
    let out = work.join("out");
    let report = std::fs::read_to_string(out.join("report"))
        .unwrap_or_else(|e| panic!("no report ({e}): {shown}\n{}", s.nj.daemon_log()));
    let (a, g) = (u.alice.uid, u.alice.gid);
    assert!(
        report.contains(&format!("Uid:\t{a}\t{a}\t{a}\t{a}")),
        "{report}"
    );
    assert!(
        report.contains(&format!("Gid:\t{g}\t{g}\t{g}\t{g}")),
        "{report}"
    );
    let groups_line = report.lines().find(|l| l.starts_with("groups")).unwrap();
    let want = String::from_utf8_lossy(&sh("id", &["-G", "njtest-alice"]).stdout)
        .trim()
        .to_string();
    assert_eq!(groups_line, format!("groups {want}"), "{report}");
    assert!(!groups_line.split(' ').any(|x| x == "0"), "{report}");
    let home = u.alice.home.display();
    assert!(
        report.contains(&format!(
            "home={home} user=njtest-alice logname=njtest-alice"
        )),
        "{report}"
    );
    assert!(report.contains("setuid=refused"), "{report}");
    assert!(report.contains("kill=refused"), "{report}");
    assert_eq!(shown["task"]["state"], "succeeded", "{shown}");
    for p in [&out, &out.join("report")] {
        let m = std::fs::metadata(p).unwrap();
        assert_eq!((m.uid(), m.gid()), (a, g), "{} owned by root", p.display());
    }
}

#[test]
fn output_the_owner_may_not_write_and_a_workdir_they_cannot_enter_fail_as_theirs() {
    let Some(u) = users("output and workdir as owner") else {
        return;
    };
    let s = system("");
    // A folder of alice's with an output alice may not write (root's, 0755).
    let work = folder_of(&u.alice, "nj-ro");
    std::fs::create_dir_all(work.join("locked")).unwrap();
    let id = s.submit(
        &u,
        &u.alice,
        &[
            "--workdir",
            work.to_str().unwrap(),
            "--output",
            "locked/out",
            "--",
            "true",
        ],
    );
    let shown = wait_end(&s, id);
    assert_eq!(shown["task"]["state"], "failed", "{shown}");
    let text = shown.to_string();
    assert!(
        text.contains("cannot create output folder") && text.contains("njtest-alice"),
        "{text}"
    );
    assert!(!work.join("locked/out").exists(), "made as root");
    // ${SCRATCH} lives in the root-only state dir: refused at start, saying so.
    let id = s.submit(
        &u,
        &u.alice,
        &[
            "--workdir",
            work.to_str().unwrap(),
            "--",
            "ls",
            "${SCRATCH}",
        ],
    );
    let text = wait_end(&s, id).to_string();
    assert!(
        text.contains("runs as njtest-alice") && text.contains("${SCRATCH}"),
        "{text}"
    );
    // The workdir is entered as alice: one she lost access to after the
    // submit fails to start instead of being entered as root.
    let gone = folder_of(&u.alice, "nj-gone");
    let id = s.submit(
        &u,
        &u.alice,
        &["--hold", "--workdir", gone.to_str().unwrap(), "--", "true"],
    );
    std::os::unix::fs::chown(&gone, Some(0), Some(0)).unwrap();
    std::fs::set_permissions(&gone, std::fs::Permissions::from_mode(0o700)).unwrap();
    s.ok(&u, &u.alice, &["release", &id.to_string()]);
    let shown = wait_end(&s, id);
    assert_eq!(shown["task"]["state"], "failed", "{shown}");
    let text = shown.to_string();
    assert!(
        text.contains("cannot enter the workdir") && text.contains(gone.to_str().unwrap()),
        "{text}"
    );
}

#[test]
fn a_user_deleted_after_the_submit_never_runs_and_never_as_root() {
    let Some(u) = users("deleted owner") else {
        return;
    };
    let s = system("");
    let dave = account("njtest-dave", None);
    let work = tempfile::Builder::new()
        .prefix("njtest-dave")
        .tempdir()
        .unwrap();
    std::fs::set_permissions(work.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let marker = work.path().join("ran");
    let cmd = format!("touch {}", marker.display());
    let id = s.submit(
        &u,
        &dave,
        &[
            "--hold",
            "--workdir",
            work.path().to_str().unwrap(),
            "--",
            "sh",
            "-c",
            &cmd,
        ],
    );
    let del = sh("userdel", &["-r", "njtest-dave"]);
    assert!(del.status.success(), "userdel: {del:?}");
    // Root (an administrator) releases it.
    s.nj.ok(&["release", &id.to_string()]);
    let shown = wait_end(&s, id);
    assert_eq!(shown["task"]["state"], "failed", "{shown}");
    let text = shown.to_string();
    assert!(
        text.contains(&format!("uid {}", dave.uid))
            && text.contains("no longer in the user database"),
        "{text}"
    );
    assert!(!marker.exists(), "the task ran");
}
