//! Mail through the first-party `email` notifier and the host's `[mail]`
//! SMTP settings, to a real SMTP server on 127.0.0.1 (aiosmtpd, started by
//! tests/e2e/smtp_receiver.py, installed by `.ci/run`): AUTH with a
//! password from a 0600 file, STARTTLS against the lab's own CA, a
//! recipient off the allow-list refused, a 4xx retried and a 5xx dead.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use crate::harness::Nj;

const USER: &str = "nightjar";
const PASSWORD: &str = "smtp-pass-5678";

/// The SMTP server, running.
struct Smtp {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Smtp {
    /// Starts it; with `tls` (cert, key) it offers STARTTLS and requires it.
    fn start(log: PathBuf, tls: Option<(&Path, &Path)>) -> Smtp {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/e2e/smtp_receiver.py");
        let mut cmd = Command::new("python3");
        cmd.arg(script).arg(&log).arg(USER).arg(PASSWORD);
        if let Some((cert, key)) = tls {
            cmd.arg(cert).arg(key);
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs the SMTP server");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the server's port");
        let port = line.trim().parse().unwrap_or_else(|_| {
            panic!("no port from smtp_receiver.py (is aiosmtpd installed? `pip install aiosmtpd`): {line:?}")
        });
        Smtp { child, port, log }
    }

    /// Every message it accepted, in order.
    fn got(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// Makes it answer DATA with `reply` (None: 250 again).
    fn answer(&self, reply: Option<&str>) {
        let flag = PathBuf::from(format!("{}.fail", self.log.display()));
        match reply {
            Some(r) => std::fs::write(flag, r).unwrap(),
            None => {
                let _ = std::fs::remove_file(flag);
            }
        }
    }
}

impl Drop for Smtp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A password file only its owner may read.
fn password_file(dir: &Path) -> PathBuf {
    let p = dir.join("smtp-password");
    std::fs::write(&p, format!("{PASSWORD}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    p
}

/// A daemon whose notifier `mail` writes to `to` through `mail` (the
/// `[mail]` table's body), subscribed to `events`.
fn world(mail: &str, to: &str, events: &str) -> Nj {
    Nj::new(&format!(
        "[notify]\nretry = [\"300ms\", \"300ms\", \"300ms\"]\n\
         [mail]\n{mail}\n\
         [notifier.mail]\nplugin = \"email\"\nallow = [\"@lab.example.edu\"]\n\
         to = [{to}]\nevents = [{events}]\nsubject = \"[{{severity}}] {{title}}\"\n"
    ))
}

fn plain(port: u16, password: &Path) -> String {
    format!(
        "server = \"127.0.0.1\"\nport = {port}\ntls = \"none\"\nfrom = \"nightjar <nightjar@gpu1.lab.example.edu>\"\n\
         user = \"{USER}\"\npassword = \"file:{}\"",
        password.display()
    )
}

#[test]
fn a_failed_task_arrives_as_mail_with_what_to_do_and_a_stable_message_id() {
    let dir = tempfile::tempdir().unwrap();
    let smtp = Smtp::start(dir.path().join("got.jsonl"), None);
    let pw = password_file(dir.path());
    let mut nj = world(
        &plain(smtp.port, &pw),
        "\"gpu-users@lab.example.edu\"",
        "\"task-failed\"",
    );
    nj.start();
    let id = nj.submit(&[
        "--name",
        "train-vit",
        "--",
        "sh",
        "-c",
        "echo 'RuntimeError: CUDA out of memory' >&2; exit 1",
    ]);
    nj.wait(id);
    nj.until_slow("the mail", || !smtp.got().is_empty());
    let m = &smtp.got()[0];
    assert_eq!(
        m["auth"], USER,
        "logged in with the password from the file: {m}"
    );
    assert_eq!(m["to"][0], "gpu-users@lab.example.edu");
    assert_eq!(m["from"], "nightjar <nightjar@gpu1.lab.example.edu>");
    let subject = m["subject"].as_str().unwrap_or_default();
    assert!(
        subject.starts_with("[error] ") && subject.contains("train-vit"),
        "{subject}"
    );
    let text = m["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("CUDA out of memory") && text.contains(&format!("nightjar show {id}")),
        "{text}"
    );
    assert!(
        m["html"].as_str().unwrap_or_default().contains("<pre"),
        "{m}"
    );
    let message_id = m["message_id"].as_str().unwrap_or_default();
    assert!(
        message_id.contains("-mail@"),
        "from the delivery key: {message_id}"
    );
    assert!(
        !nj.daemon_log().contains(PASSWORD),
        "the password is never logged"
    );
    nj.until("the cursor moves", || {
        nj.json(&["notify", "ls"])["notifiers"][0]["delivered"] == 1
    });
}

#[test]
fn a_progress_bar_or_a_smuggled_end_of_data_in_stderr_arrives_as_lines_of_one_mail() {
    let dir = tempfile::tempdir().unwrap();
    let smtp = Smtp::start(dir.path().join("got.jsonl"), None);
    let pw = password_file(dir.path());
    let mut nj = world(
        &plain(smtp.port, &pw),
        "\"gpu-users@lab.example.edu\"",
        "\"task-failed\"",
    );
    nj.start();
    // What a task writes to stderr reaches the mail: carriage returns of a
    // progress bar, and an end of DATA as some servers read it (<CR>.<CR>)
    // followed by commands that would run in the daemon's own session.
    let id = nj.submit(&[
        "--",
        "sh",
        "-c",
        "printf 'step 1/3\\rstep 2/3\\r.\\r\\nMAIL FROM:<ceo@lab.example.edu>\\nRCPT TO:<eve@evil.example>\\nDATA\\n' >&2; exit 1",
    ]);
    nj.wait(id);
    nj.until_slow("the mail", || !smtp.got().is_empty());
    let m = &smtp.got()[0];
    assert_eq!(m["bare_line_ends"], 0, "a bare CR went to the server: {m}");
    let text = m["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("step 1/3") && text.contains("step 2/3"),
        "{text}"
    );
    assert_eq!(m["to"], serde_json::json!(["gpu-users@lab.example.edu"]));
}

#[test]
fn a_busy_server_is_retried_and_a_refusing_one_makes_a_dead_letter() {
    let dir = tempfile::tempdir().unwrap();
    let smtp = Smtp::start(dir.path().join("got.jsonl"), None);
    let pw = password_file(dir.path());
    smtp.answer(Some("451 4.3.0 try again later"));
    let mut nj = world(
        &plain(smtp.port, &pw),
        "\"a@lab.example.edu\"",
        "\"task-failed\"",
    );
    nj.start();
    let first = nj.submit(&["--", "false"]);
    nj.wait(first);
    nj.until_slow("a retry", || {
        let ls = nj.json(&["notify", "ls"]);
        ls["notifiers"][0]["attempts"].as_i64().unwrap_or(0) >= 1
    });
    smtp.answer(None);
    nj.until_slow("the mail after the retry", || smtp.got().len() == 1);

    smtp.answer(Some("550 5.1.1 no such user"));
    let second = nj.submit(&["--", "false"]);
    nj.wait(second);
    nj.until_slow("a dead letter", || {
        nj.json(&["notify", "ls"])["dead"]
            .as_array()
            .is_some_and(|d| !d.is_empty())
    });
    let dead = &nj.json(&["notify", "ls"])["dead"][0];
    assert_eq!(dead["task"], second);
    assert!(
        dead["reason"].as_str().unwrap_or_default().contains("550"),
        "{dead}"
    );
    assert_eq!(smtp.got().len(), 1, "nothing accepted twice or wrongly");
}

#[test]
fn a_recipient_off_the_allow_list_is_refused_and_nothing_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let smtp = Smtp::start(dir.path().join("got.jsonl"), None);
    let pw = password_file(dir.path());
    let mut nj = world(
        &plain(smtp.port, &pw),
        "\"eve@evil.example\"",
        "\"task-failed\"",
    );
    nj.start();
    let out = nj.cli(&["notify", "test", "mail"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains("eve@evil.example") && text.contains("allow-list"),
        "{text}"
    );
    assert!(smtp.got().is_empty());
}

/// A lab CA and a server certificate for 127.0.0.1 it signed (webpki
/// refuses a self-signed CA certificate as a server's): (ca, cert, key).
fn lab_ca(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let p = |n: &str| dir.join(n);
    std::fs::write(
        p("leaf.ext"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n",
    )
    .unwrap();
    let steps: [&[&str]; 3] = [
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=lab-ca",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
        ],
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=127.0.0.1",
            "-keyout",
            "key.pem",
            "-out",
            "leaf.csr",
        ],
        &[
            "x509",
            "-req",
            "-in",
            "leaf.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "leaf.ext",
            "-out",
            "cert.pem",
        ],
    ];
    for args in steps {
        let ok = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .stderr(Stdio::null())
            .status()
            .expect("openssl runs");
        assert!(ok.success(), "openssl {args:?}");
    }
    (p("ca.pem"), p("cert.pem"), p("key.pem"))
}

#[test]
fn starttls_against_the_labs_own_ca_and_notify_test_prints_the_answer() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, cert, key) = lab_ca(dir.path());
    let smtp = Smtp::start(dir.path().join("got.jsonl"), Some((&cert, &key)));
    let pw = password_file(dir.path());
    let mail = format!(
        "server = \"127.0.0.1\"\nport = {}\ntls = \"starttls\"\nfrom = \"nightjar@gpu1.lab.example.edu\"\n\
         user = \"{USER}\"\npassword = \"file:{}\"\nca = \"{}\"",
        smtp.port,
        pw.display(),
        ca.display()
    );
    let mut nj = world(&mail, "\"ops@lab.example.edu\"", "\"task-failed\"");
    nj.start();
    let out = nj.ok(&["notify", "test", "mail"]);
    assert!(
        out.contains("mail to ops@lab.example.edu -> accepted") && out.contains("delivered"),
        "{out}"
    );
    let m = &smtp.got()[0];
    assert_eq!(m["tls"], true, "sent after STARTTLS: {m}");
    assert_eq!(m["auth"], USER);

    // Without the lab's CA the server's certificate is not trusted.
    let mut untrusted = world(
        &mail.replace(&format!("ca = \"{}\"", ca.display()), ""),
        "\"ops@lab.example.edu\"",
        "\"task-failed\"",
    );
    untrusted.start();
    let out = untrusted.cli(&["notify", "test", "mail"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{text}");
    assert_eq!(
        smtp.got().len(),
        1,
        "nothing sent over an untrusted connection"
    );
}
