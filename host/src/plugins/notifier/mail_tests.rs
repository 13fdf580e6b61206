use super::*;

fn settings() -> Arc<Result<MailSettings, String>> {
    let cfg: MailConfig = toml::from_str(
        "server = \"127.0.0.1\"\nport = 9\ntls = \"none\"\nfrom = \"nightjar <nj@lab.example.edu>\"",
    )
    .unwrap();
    Arc::new(MailSettings::resolve(&cfg))
}

fn broker(allow: &[&str]) -> MailBroker {
    let allow: Vec<String> = allow.iter().map(|a| a.to_string()).collect();
    MailBroker::new(Some(settings()), &allow, vec!["s3cret-key".into()])
}

fn message(to: &[&str]) -> MailMessage {
    MailMessage {
        to: to.iter().map(|t| t.to_string()).collect(),
        subject: "task 4 failed".into(),
        text: "it failed".into(),
        key: "17-mail".into(),
        ..Default::default()
    }
}

fn built(b: &MailBroker, m: &MailMessage) -> Result<String, MailError> {
    let s = settings();
    let s = s.as_ref().as_ref().unwrap();
    b.build(s, m)
        .map(|m| String::from_utf8_lossy(&m.formatted()).into_owned())
}

#[test]
fn recipient_rules_are_an_address_or_a_whole_domain() {
    assert_eq!(
        parse_recipient("Alice@Lab.example.edu").unwrap(),
        Recipient::Address("alice@lab.example.edu".into())
    );
    assert_eq!(
        parse_recipient("@lab.example.edu").unwrap(),
        Recipient::Domain("lab.example.edu".into())
    );
    for bad in ["@", "@*.edu", "a@", "@localhost", "two@@x.org"] {
        assert!(parse_recipient(bad).is_err(), "{bad}");
    }
}

#[test]
fn only_allow_listed_recipients_are_written_to() {
    let b = broker(&[
        "hooks.example.com",
        "alice@lab.example.edu",
        "@group.example.org",
    ]);
    assert!(built(&b, &message(&["ALICE@lab.example.edu"])).is_ok());
    assert!(built(&b, &message(&["bob@group.example.org"])).is_ok());
    for to in [
        "bob@lab.example.edu",
        "x@sub.group.example.org",
        "x@hooks.example.com",
    ] {
        let e = built(&b, &message(&[to])).unwrap_err();
        assert!(
            matches!(&e, MailError::Denied(t) if t.contains("allow-list")),
            "{to}: {e:?}"
        );
    }
    // One bad recipient refuses the whole message.
    let e = built(&b, &message(&["alice@lab.example.edu", "eve@evil.example"])).unwrap_err();
    assert!(matches!(e, MailError::Denied(_)));
}

#[test]
fn a_message_past_the_caps_is_refused_before_any_connection() {
    let b = broker(&["@lab.example.edu"]);
    let many: Vec<String> = (0..=MAX_RECIPIENTS)
        .map(|i| format!("u{i}@lab.example.edu"))
        .collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    assert!(
        matches!(built(&b, &message(&many)), Err(MailError::Denied(t)) if t.contains("recipients"))
    );
    let mut big = message(&["a@lab.example.edu"]);
    big.attachments.push(MailAttachment {
        name: "huge.bin".into(),
        content_type: "application/octet-stream".into(),
        body: vec![0; MAX_MESSAGE],
    });
    assert!(matches!(built(&b, &big), Err(MailError::Denied(t)) if t.contains("bytes")));
    let mut bad = message(&["a@lab.example.edu"]);
    bad.attachments.push(MailAttachment {
        name: "r.html".into(),
        content_type: "not a type".into(),
        body: b"x".to_vec(),
    });
    assert!(matches!(built(&b, &bad), Err(MailError::Denied(t)) if t.contains("MIME")));
    assert!(matches!(
        built(&b, &message(&[])),
        Err(MailError::Denied(_))
    ));
}

#[test]
fn the_message_id_comes_from_the_key_and_headers_cannot_be_injected() {
    let b = broker(&["@lab.example.edu"]);
    let mut m = message(&["a@lab.example.edu"]);
    m.subject = "done\r\nBcc: eve@evil.example".into();
    m.html = Some("<p>it failed</p>".into());
    let text = built(&b, &m).unwrap();
    let again = built(&b, &m).unwrap();
    let id = |t: &str| {
        t.lines()
            .find(|l| l.starts_with("Message-ID:"))
            .map(str::to_string)
    };
    assert!(id(&text).unwrap().contains("nightjar.17-mail@"), "{text}");
    assert_eq!(id(&text), id(&again), "the same key, the same id");
    // A key that would make an invalid id, or none, is hashed: still one
    // id per key (or per content), and a valid one.
    let ids: Vec<String> = ["", "17.mail", "17..mail", "17 mail", "任务"]
        .iter()
        .map(|k| {
            let mut m = m.clone();
            m.key = k.to_string();
            id(&built(&b, &m).unwrap()).unwrap()
        })
        .collect();
    for i in &ids {
        let left = i
            .trim_start_matches("Message-ID: <")
            .split('@')
            .next()
            .unwrap();
        assert!(
            !left.contains("..") && !left.ends_with('.') && left.len() > "nightjar.".len(),
            "{i}"
        );
    }
    let unique: std::collections::BTreeSet<&String> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "{ids:?}");
    assert!(
        !text.lines().any(|l| l.starts_with("Bcc:")),
        "a newline in the subject made a header: {text}"
    );
    assert!(
        text.contains("From: nightjar <nj@lab.example.edu>"),
        "{text}"
    );
    assert!(
        text.contains("text/html") && text.contains("text/plain"),
        "{text}"
    );
}

#[test]
fn without_a_mail_table_sending_is_denied_and_says_what_to_add() {
    let b = MailBroker::new(None, &["@lab.example.edu".to_string()], Vec::new());
    let e = b.send(&message(&["a@lab.example.edu"])).unwrap_err();
    assert!(matches!(e, MailError::Denied(t) if t.contains("[mail]")));
}

#[test]
fn an_unreachable_server_is_transient_and_named() {
    // Port 9 (discard) on loopback: nothing listens here.
    let b = broker(&["@lab.example.edu"]);
    let e = b.send(&message(&["a@lab.example.edu"])).unwrap_err();
    assert!(
        matches!(&e, MailError::Transient(t) if t.contains("127.0.0.1:9")),
        "{e:?}"
    );
}

#[test]
fn an_unset_password_variable_is_transient_and_named() {
    let cfg: MailConfig = toml::from_str(
        "server = \"smtp.x.org\"\nfrom = \"a@x.org\"\nuser = \"u\"\npassword = \"env:NIGHTJAR_TEST_NO_SUCH_VAR\"",
    )
    .unwrap();
    let s = Arc::new(MailSettings::resolve(&cfg));
    let b = MailBroker::new(Some(s), &["@x.org".to_string()], Vec::new());
    let e = b.send(&message(&["a@x.org"])).unwrap_err();
    assert!(
        matches!(&e, MailError::Transient(t) if t.contains("[mail] password") && t.contains("NIGHTJAR_TEST_NO_SUCH_VAR")),
        "{e:?}"
    );
}

#[test]
fn a_plugin_looping_on_send_in_notify_test_keeps_a_bounded_journal() {
    let journal = Arc::new(Mutex::new(Vec::new()));
    let b = broker(&["@lab.example.edu"]).with_journal(Arc::clone(&journal));
    let mut m = message(&["eve@evil.example"]);
    m.to[0].push_str(&"x".repeat(10_000));
    for _ in 0..500 {
        assert!(matches!(b.send(&m), Err(MailError::Denied(_))));
    }
    let j = journal.lock().unwrap();
    assert!(
        j.len() <= super::super::MAX_JOURNAL + 1,
        "{} lines",
        j.len()
    );
    assert!(
        j.iter().all(|l| l.chars().count() <= 1100),
        "a line of {}",
        j[0].len()
    );
    assert!(j.last().unwrap().contains("left out"), "{:?}", j.last());
}
