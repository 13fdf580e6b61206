//! The broker against scripted SMTP servers on loopback that misbehave: one
//! that echoes the login back in its refusal, one that offers no STARTTLS,
//! one that drips its greeting a byte at a time, and a well-behaved one that
//! records the bytes of DATA.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;

use super::*;

const USER: &str = "nightjar";
const PASSWORD: &str = "smtp-pass-5678";

type Lines = Arc<Mutex<Vec<String>>>;

/// A server on 127.0.0.1 that serves one connection with `script`; what
/// the client sent (line by line) is in the returned list.
fn fake(
    script: impl FnOnce(&mut BufReader<TcpStream>, &mut TcpStream, &Lines) + Send + 'static,
) -> (u16, Lines) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let lines: Lines = Arc::default();
    let seen = Arc::clone(&lines);
    std::thread::spawn(move || {
        let Ok((mut out, _)) = listener.accept() else {
            return;
        };
        let mut input = BufReader::new(out.try_clone().unwrap());
        script(&mut input, &mut out, &seen);
    });
    (port, lines)
}

/// The next line the client sent (kept in `seen`), or "" at its end.
fn line(input: &mut BufReader<TcpStream>, seen: &Lines) -> String {
    let mut l = String::new();
    let _ = input.read_line(&mut l);
    seen.lock().unwrap().push(l.clone());
    l
}

fn say(out: &mut TcpStream, text: &str) {
    let _ = out.write_all(text.as_bytes());
}

/// `[mail]` to 127.0.0.1:`port` as USER, the password in a 0600 file.
fn settings(dir: &std::path::Path, port: u16, tls: &str, timeout: &str) -> MailSettings {
    let pw = dir.join("password");
    std::fs::write(&pw, format!("{PASSWORD}\n")).unwrap();
    std::fs::set_permissions(&pw, std::fs::Permissions::from_mode(0o600)).unwrap();
    let cfg: MailConfig = toml::from_str(&format!(
        "server = \"127.0.0.1\"\nport = {port}\ntls = \"{tls}\"\nfrom = \"nj@lab.example.edu\"\n\
         user = \"{USER}\"\npassword = \"file:{}\"\ntimeout = \"{timeout}\"",
        pw.display()
    ))
    .unwrap();
    MailSettings::resolve(&cfg).unwrap()
}

fn broker(s: MailSettings) -> MailBroker {
    MailBroker::new(
        Some(Arc::new(Ok(s))),
        &["@lab.example.edu".to_string()],
        Vec::new(),
    )
}

fn message() -> MailMessage {
    MailMessage {
        to: vec!["a@lab.example.edu".into()],
        subject: "task 4 failed".into(),
        text: "it failed".into(),
        key: "17-mail".into(),
        ..Default::default()
    }
}

/// Greets, answers EHLO offering `ehlo` (the last line's words).
fn hello(input: &mut BufReader<TcpStream>, out: &mut TcpStream, seen: &Lines, ehlo: &str) {
    say(out, "220 fake ESMTP\r\n");
    line(input, seen);
    say(out, &format!("250-fake\r\n250 {ehlo}\r\n"));
}

#[test]
fn a_server_echoing_the_login_in_its_refusal_never_shows_it() {
    for mechanism in ["PLAIN", "LOGIN"] {
        let dir = tempfile::tempdir().unwrap();
        let (port, _) = fake(move |input, out, seen| {
            hello(input, out, seen, &format!("AUTH {mechanism}"));
            let mut sent = line(input, seen);
            if mechanism == "LOGIN" {
                say(out, "334 VXNlcm5hbWU6\r\n");
                line(input, seen);
                say(out, "334 UGFzc3dvcmQ6\r\n");
                sent = line(input, seen);
            }
            say(
                out,
                &format!("535 5.7.8 refused, you sent {}\r\n", sent.trim()),
            );
            line(input, seen);
        });
        let e = broker(settings(dir.path(), port, "none", "5s"))
            .send(&message())
            .unwrap_err();
        let text = format!("{e:?}");
        let plain = B64.encode(format!("\0{USER}\0{PASSWORD}"));
        let login = B64.encode(PASSWORD);
        assert!(text.contains("535"), "{mechanism}: {text}");
        for leaked in [PASSWORD, plain.as_str(), login.as_str()] {
            assert!(
                !text.contains(leaked),
                "{mechanism}: the login leaked as {leaked}: {text}"
            );
        }
    }
}

#[test]
fn starttls_not_offered_or_refused_is_an_error_before_the_login_or_the_message() {
    // Not offered; offered and then refused (a downgrade on the path).
    for (ehlo, starttls) in [
        ("AUTH PLAIN LOGIN", "250 ok"),
        (
            "STARTTLS\r\n250 AUTH PLAIN LOGIN",
            "454 4.7.0 TLS not available",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (port, seen) = fake(move |input, out, seen| {
            hello(input, out, seen, ehlo);
            // Whatever comes next is recorded, answered yes (STARTTLS as said).
            for _ in 0..10 {
                let l = line(input, seen);
                if l.is_empty() {
                    break;
                }
                let reply = if l.starts_with("STARTTLS") {
                    starttls
                } else {
                    "250 ok"
                };
                say(out, &format!("{reply}\r\n"));
            }
        });
        let e = broker(settings(dir.path(), port, "starttls", "5s"))
            .send(&message())
            .unwrap_err();
        assert!(matches!(e, MailError::Transient(_)), "{ehlo}: {e:?}");
        std::thread::sleep(Duration::from_millis(200));
        let seen = seen.lock().unwrap().join("");
        assert!(
            !seen.contains("AUTH") && !seen.contains("MAIL") && !seen.contains("DATA"),
            "{ehlo}: sent in the clear: {seen}"
        );
    }
}

/// Sends on a thread; the answer, or a panic when it takes past `limit`.
fn send_within(b: MailBroker, limit: Duration) -> (Result<(), MailError>, Duration) {
    let (tx, rx) = mpsc::channel();
    let started = Instant::now();
    std::thread::spawn(move || tx.send(b.send(&message())));
    let r = rx
        .recv_timeout(limit)
        .unwrap_or_else(|_| panic!("the send was still going after {limit:?}"));
    (r, started.elapsed())
}

/// A server that drips its greeting a byte every 100 ms for a minute.
fn dripping() -> u16 {
    fake(|_, out, _| {
        for _ in 0..600 {
            if out.write_all(b"2").is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    })
    .0
}

#[test]
fn a_server_dripping_bytes_is_cut_at_the_timeout_or_the_deliverys_deadline() {
    let dir = tempfile::tempdir().unwrap();
    // No delivery deadline: [mail] timeout bounds the whole conversation.
    // The bounds tell a cut from the minute of dripping (or the minute's
    // timeout) with room for a loaded machine: 2-3 s of margin was not.
    let b = broker(settings(dir.path(), dripping(), "none", "1s"));
    let (r, took) = send_within(b, Duration::from_secs(40));
    assert!(
        matches!(&r, Err(MailError::Transient(t)) if t.contains("within 1.0s")),
        "{r:?}"
    );
    assert!(took < Duration::from_secs(20), "{took:?}");
    // The delivery's deadline, when nearer, ends it sooner.
    let b = broker(settings(dir.path(), dripping(), "none", "60s"))
        .until(Instant::now() + Duration::from_millis(800));
    let (r, took) = send_within(b, Duration::from_secs(40));
    assert!(matches!(r, Err(MailError::Transient(_))), "{r:?}");
    assert!(took < Duration::from_secs(20), "{took:?}");
    // Past it, nothing is tried.
    let b = broker(settings(dir.path(), 9, "none", "20s")).until(Instant::now());
    let (r, _) = send_within(b, Duration::from_secs(5));
    assert!(
        matches!(&r, Err(MailError::Transient(t)) if t.contains("deadline")),
        "{r:?}"
    );
}

#[test]
fn what_the_server_receives_in_data_has_no_bare_cr_or_lf() {
    let dir = tempfile::tempdir().unwrap();
    let data: Arc<Mutex<Vec<u8>>> = Arc::default();
    let got = Arc::clone(&data);
    let (port, _) = fake(move |input, out, seen| {
        hello(input, out, seen, "AUTH PLAIN");
        for reply in ["235 ok", "250 ok", "250 ok", "354 go"] {
            line(input, seen);
            say(out, &format!("{reply}\r\n"));
        }
        let mut body = Vec::new();
        let mut byte = [0u8];
        while !body.ends_with(b"\r\n.\r\n") && input.read(&mut byte).unwrap_or(0) == 1 {
            body.push(byte[0]);
        }
        *got.lock().unwrap() = body;
        say(out, "250 queued\r\n");
        line(input, seen);
        say(out, "221 bye\r\n");
    });
    // A server that ends DATA at <LF>.<CRLF> or <CR>.<CR> (SMTP smuggling)
    // would run the smuggled commands in the daemon's authenticated session.
    let smuggle =
        "x\n.\r\nMAIL FROM:<ceo@lab.example.edu>\r\nRCPT TO:<eve@evil.example>\r\nDATA\r\n";
    let mut m = message();
    m.text = format!("a\r.\rb {smuggle}");
    m.html = Some(format!("<p>{smuggle}</p>\r"));
    m.attachments.push(MailAttachment {
        name: "log.txt".into(),
        content_type: "text/plain".into(),
        body: smuggle.as_bytes().to_vec(),
    });
    broker(settings(dir.path(), port, "none", "5s"))
        .send(&m)
        .unwrap();
    let body = data.lock().unwrap().clone();
    assert!(body.len() > 100, "{}", String::from_utf8_lossy(&body));
    for (i, b) in body.iter().enumerate() {
        let bare = match b {
            b'\r' => body.get(i + 1) != Some(&b'\n'),
            b'\n' => i == 0 || body[i - 1] != b'\r',
            _ => false,
        };
        assert!(
            !bare,
            "a bare CR or LF at {i}: {:?}",
            String::from_utf8_lossy(&body)
        );
    }
}

#[test]
fn one_delivery_sends_a_bounded_number_of_messages() {
    let dir = tempfile::tempdir().unwrap();
    // Nothing listens on port 9: each try fails, and still counts.
    let b = broker(settings(dir.path(), 9, "none", "5s")).at_most(3);
    for _ in 0..3 {
        let e = b.send(&message()).unwrap_err();
        assert!(matches!(e, MailError::Transient(_)), "{e:?}");
    }
    let e = b.send(&message()).unwrap_err();
    assert!(
        matches!(&e, MailError::Denied(t) if t.contains("at most 3")),
        "{e:?}"
    );
}

#[test]
fn a_huge_greeting_is_refused_without_reading_it_all() {
    let dir = tempfile::tempdir().unwrap();
    // 10 MB on one line, then in lines of a continued reply.
    for line_end in [false, true] {
        let (port, _) = fake(move |_, out, _| {
            let chunk = match line_end {
                true => format!("220-{}\r\n", "x".repeat(96)).repeat(100),
                false => "x".repeat(10_000),
            };
            for _ in 0..1000 {
                if out.write_all(chunk.as_bytes()).is_err() {
                    return;
                }
            }
        });
        let b = broker(settings(dir.path(), port, "none", "5s"));
        // Refused for its length, not by the 5 s deadline: the error says
        // which (no wall-clock threshold, which a loaded machine can miss).
        let (r, _) = send_within(b, Duration::from_secs(10));
        assert!(
            matches!(&r, Err(MailError::Transient(t)) if t.contains("too l") && !t.contains("timed out")),
            "{r:?}"
        );
    }
}

#[test]
fn a_message_accepted_is_delivered_even_when_the_server_never_answers_quit() {
    let dir = tempfile::tempdir().unwrap();
    let (port, _) = fake(|input, out, seen| {
        hello(input, out, seen, "AUTH PLAIN");
        for reply in ["235 ok", "250 ok", "250 ok", "354 go"] {
            line(input, seen);
            say(out, &format!("{reply}\r\n"));
        }
        let mut body = Vec::new();
        let mut byte = [0u8];
        while !body.ends_with(b"\r\n.\r\n") && input.read(&mut byte).unwrap_or(0) == 1 {
            body.push(byte[0]);
        }
        say(out, "250 queued as 17\r\n");
        // QUIT is read, and never answered.
        line(input, seen);
        std::thread::sleep(Duration::from_secs(30));
    });
    let b = broker(settings(dir.path(), port, "none", "2s"));
    let (r, took) = send_within(b, Duration::from_secs(40));
    assert_eq!(r, Ok(()), "accepted, then told as failed: sent again");
    // QUIT is waited for a second, not the server's 30 s (a bound with
    // room for a loaded machine).
    assert!(took < Duration::from_secs(20), "{took:?}");
}
