use nightjar_sdk::mail::MailError;
use nightjar_sdk::testing::{MailMock, event};
use nightjar_sdk::*;

use super::*;

fn config(extra: &str) -> Config {
    let text = format!("to = [\"team@lab.example.edu\"]\n{extra}");
    Email::configure(&text).unwrap_or_else(|e| panic!("{text}: {e:?}"))
}

fn key_of(text: &str) -> String {
    let e = Email::configure(text).expect_err(text);
    e.key
        .unwrap_or_else(|| panic!("{text}: no key in {}", e.message))
}

fn failed(id: i64, project: &str) -> Event {
    Event {
        title: format!("Task {id} (train) failed: gpu-oom"),
        text: format!(
            "Exit code 1 after 3h.\nHint: lower the batch size.\nSee more: nightjar show {id}\n"
        ),
        project: Some(project.into()),
        task: Some(id),
        severity: Severity::Error,
        fields: vec![Field {
            name: "class".into(),
            value: "gpu-oom".into(),
        }],
        ..event(id, "task-failed")
    }
}

#[test]
fn configuration_errors_name_the_key() {
    assert_eq!(key_of(""), "to");
    assert_eq!(key_of("to = []"), "to");
    assert_eq!(key_of("to = [\"not-an-address\"]"), "to");
    assert_eq!(
        key_of("to = [\"a@lab.example.edu\"]\nsubject = \"{name}\""),
        "subject"
    );
    assert_eq!(
        key_of("to = [\"a@lab.example.edu\"]\nsubject = \"{title\""),
        "subject"
    );
    assert_eq!(
        key_of("to = [\"a@lab.example.edu\"]\nprojects = { vision = [] }"),
        "projects.vision"
    );
    assert_eq!(key_of("to = [\"a@lab.example.edu\"]\ncc = []"), "cc");
}

#[test]
fn one_event_is_one_mail_with_its_title_text_facts_and_key() {
    let mock = MailMock::install();
    let c = config("subject = \"[{severity}] {title} ({project}, task {task}) {{x}}\"");
    Email::deliver(&c, &[failed(7, "vision")]).unwrap();
    let sent = mock.sent();
    assert_eq!(sent.len(), 1);
    let m = &sent[0];
    assert_eq!(m.to, vec!["team@lab.example.edu".to_string()]);
    assert_eq!(
        m.subject,
        "[error] Task 7 (train) failed: gpu-oom (vision, task 7) {x}"
    );
    assert_eq!(m.key, "7-test");
    assert!(m.text.contains("Hint: lower the batch size") && m.text.contains("nightjar show 7"));
    assert!(m.text.contains("class: gpu-oom"), "{}", m.text);
    let html = m.html.as_deref().unwrap();
    assert!(
        html.contains("<th align=\"left\">class</th><td>gpu-oom</td>"),
        "{html}"
    );
}

#[test]
fn host_text_cannot_become_html() {
    let mock = MailMock::install();
    let mut e = failed(3, "vision");
    e.title = "Task 3 (<script>alert(1)</script>) failed".into();
    e.text = "<img src=x onerror=alert(1)> & \"quoted\"".into();
    Email::deliver(&config(""), &[e]).unwrap();
    let html = mock.sent()[0].html.clone().unwrap();
    assert!(
        !html.contains("<script>") && !html.contains("<img"),
        "{html}"
    );
    assert!(html.contains("&lt;script&gt;") && html.contains("&amp; &quot;quoted&quot;"));
}

#[test]
fn several_events_are_one_summary_per_recipient_list() {
    let mock = MailMock::install();
    let c = config("projects = { nlp = [\"nlp@lab.example.edu\"] }\nhtml = false");
    let mut events: Vec<Event> = (1..=120).map(|i| failed(i, "vision")).collect();
    events.push(failed(121, "nlp"));
    events.push(Event {
        title: "Task 122 succeeded".into(),
        ..event(122, "task-succeeded")
    });
    Email::deliver(&c, &events).unwrap();
    let sent = mock.sent();
    assert_eq!(
        sent.len(),
        2,
        "vision (and no project) to `to`, nlp to its own"
    );
    assert_eq!(sent[0].to, vec!["team@lab.example.edu".to_string()]);
    assert_eq!(
        sent[0].subject,
        "[nightjar] nightjar: 121 events (task-failed ×120, task-succeeded ×1)"
    );
    assert_eq!(sent[0].key, "1-test", "the first event's key");
    assert!(sent[0].html.is_none());
    let text = &sent[0].text;
    assert!(text.contains("- Task 120 (train) failed") && text.contains("- Task 122 succeeded"));
    assert_eq!(
        text.matches("Hint:").count(),
        DETAILED,
        "the first 50 in full"
    );
    assert!(text.contains("71 more events"), "{text}");
    assert_eq!(sent[1].to, vec!["nlp@lab.example.edu".to_string()]);
    assert!(sent[1].subject.contains("Task 121"));
}

#[test]
fn a_failed_send_fails_the_delivery_with_its_kind() {
    let mock = MailMock::install();
    mock.fail(MailError::Transient("421 try later".into()));
    let e = Email::deliver(&config(""), &[failed(1, "x")]).unwrap_err();
    assert!(
        matches!(&e, DeliveryError::Transient(m) if m.starts_with("email:") && m.contains("421"))
    );
    mock.fail(MailError::Denied(
        "eve@x.org is not on this notifier's allow-list".into(),
    ));
    let e = Email::deliver(&config(""), &[failed(1, "x")]).unwrap_err();
    assert!(matches!(&e, DeliveryError::Permanent(m) if m.contains("allow-list")));
    mock.fail(MailError::Permanent("550 no such user".into()));
    let e = Email::deliver(&config(""), &[failed(1, "x")]).unwrap_err();
    assert!(matches!(e, DeliveryError::Permanent(_)));
}

#[test]
fn a_huge_text_is_cut_to_the_body_cap() {
    let mock = MailMock::install();
    let mut e = failed(1, "x");
    e.text = "日志".repeat(MAX_BODY);
    Email::deliver(&config(""), &[e]).unwrap();
    let m = &mock.sent()[0];
    assert!(m.text.len() <= MAX_BODY && m.html.as_ref().unwrap().len() <= MAX_BODY);
}
