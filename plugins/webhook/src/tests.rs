use nightjar_sdk::http::HttpError;
use nightjar_sdk::testing::{HttpMock, event};
use nightjar_sdk::*;
use serde_json::Value;

use super::*;

const URL: &str = "https://hooks.example.org/nightjar?token=t0p";

fn config(text: &str) -> Config {
    Webhook::configure(text).unwrap_or_else(|e| panic!("{text}: {e:?}"))
}

fn plain() -> Config {
    config(&format!("url = {URL:?}"))
}

fn key_of(text: &str) -> String {
    let e = Webhook::configure(text).expect_err(text);
    e.key
        .unwrap_or_else(|| panic!("{text}: no key in {}", e.message))
}

fn json(body: &[u8]) -> Value {
    serde_json::from_slice(body).expect("the body is JSON")
}

fn schema() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/schema/nightjar.event.v1.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("read the schema")).expect("JSON")
}

fn varied_events() -> Vec<Event> {
    let mut failed = event(1, "task-failed");
    failed.title = "任务 7 (train-vit) 失败:显存不足".into();
    failed.text = "第 2 次尝试。\n建议:减小 batch size。\n\"quoted\" \\ back".into();
    failed.fields = vec![
        Field {
            name: "class".into(),
            value: "oom".into(),
        },
        Field {
            name: "exit-code".into(),
            value: "137".into(),
        },
        Field {
            name: "class".into(),
            value: "repeated".into(),
        },
    ];
    let daemon = Event {
        task: None,
        run: None,
        project: None,
        severity: Severity::Warning,
        at: -1500,
        ..event(2, "daemon-stopped")
    };
    vec![failed, daemon, event(i64::MAX, "test")]
}

#[test]
fn configuration_errors_name_the_key() {
    assert_eq!(key_of(""), "url");
    assert_eq!(key_of("url = \"hooks.example.org\""), "url");
    assert_eq!(key_of("url = \"https://\""), "url");
    assert_eq!(key_of("url = \"ftp://x.example\""), "url");
    let u = format!("url = {URL:?}\n");
    assert_eq!(key_of(&format!("{u}urll = 1")), "urll");
    assert_eq!(
        key_of(&format!("{u}headers = {{ \"Webhook-Signature\" = \"x\" }}")),
        "headers.Webhook-Signature"
    );
    assert_eq!(
        key_of(&format!("{u}headers = {{ Authorization = \"Bearer x\" }}")),
        "headers.Authorization"
    );
    assert_eq!(
        key_of(&format!("{u}headers = {{ \"X Team\" = \"x\" }}")),
        "headers.\"X Team\""
    );
    assert_eq!(
        key_of(&format!("{u}headers = {{ X-Team = \"a\\r\\nX-Evil: 1\" }}")),
        "headers.X-Team"
    );
    assert_eq!(
        key_of(&format!("{u}secrets = {{ signing = \"whsec_!!\" }}")),
        "secrets.signing"
    );
    assert_eq!(
        key_of(&format!("{u}secrets = {{ signing = \"\" }}")),
        "secrets.signing"
    );
    assert_eq!(
        key_of(&format!("{u}secrets = {{ singing = \"x\" }}")),
        "secrets.singing"
    );
    let e = Webhook::configure(&format!("{u}secrets = {{ signing = \"whsec_!!\" }}")).unwrap_err();
    assert!(
        !e.message.contains("!!"),
        "no secret in the message: {}",
        e.message
    );
    config(
        "url = \"http://127.0.0.1:8080/hook\"\nheaders = { X-Team = \"vision\" }\nsecrets = { signing = \"s\", authorization = \"Bearer b\" }",
    );
}

#[test]
fn one_event_is_one_post_with_the_documented_body_and_headers() {
    let mock = HttpMock::install();
    let c = config(&format!(
        "url = {URL:?}\nheaders = {{ X-Team = \"vision\" }}"
    ));
    let mut e = event(42, "task-failed");
    e.fields.push(Field {
        name: "class".into(),
        value: "oom".into(),
    });
    Webhook::deliver(&c, &[e]).unwrap();
    let sent = mock.requests();
    assert_eq!(sent.len(), 1);
    let r = &sent[0];
    assert_eq!((r.method.as_str(), r.url.as_str()), ("POST", URL));
    assert_eq!(
        json(&r.body),
        serde_json::json!({
            "schema": "nightjar.event.v1", "id": 42, "key": "42-test",
            "kind": "task-failed", "at": 1_700_000_042_000_i64, "severity": "error",
            "task": 42, "run": 42, "project": "vision",
            "title": "task-failed #42", "text": "", "fields": {"class": "oom"}
        })
    );
    assert!(
        r.text()
            .starts_with("{\"schema\":\"nightjar.event.v1\",\"id\":42,"),
        "documented key order: {}",
        r.text()
    );
    assert_eq!(r.header_value("content-type"), Some("application/json"));
    assert_eq!(r.header_value("webhook-id"), Some("42-test"));
    assert_eq!(r.header_value("idempotency-key"), Some("42-test"));
    assert_eq!(r.header_value("webhook-timestamp"), Some("1700000042"));
    assert_eq!(r.header_value("x-team"), Some("vision"));
    assert_eq!(r.header_value("webhook-signature"), None);
    assert_eq!(r.header_value("authorization"), None);
}

#[test]
fn the_signature_is_standard_webhooks() {
    // The Standard Webhooks libraries' own test vector.
    let key = config(&format!(
        "url = {URL:?}\nsecrets = {{ signing = \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\" }}"
    ))
    .signing_key()
    .unwrap()
    .unwrap();
    assert_eq!(
        signature(
            &key,
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            "1614265330",
            b"{\"test\": 2432232314}"
        )
        .unwrap(),
        "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
    );
    // A secret without the prefix is used as its bytes, and the header
    // signs exactly the body sent.
    let mock = HttpMock::install();
    let c = config(&format!(
        "url = {URL:?}\nsecrets = {{ signing = \"plain secret\", authorization = \"Bearer b\" }}"
    ));
    Webhook::deliver(&c, &[event(3, "test")]).unwrap();
    let r = &mock.requests()[0];
    let expected = signature(b"plain secret", "3-test", "1700000003", &r.body).unwrap();
    assert_eq!(r.header_value("webhook-signature"), Some(expected.as_str()));
    assert_eq!(r.header_value("authorization"), Some("Bearer b"));
}

#[test]
fn payloads_validate_against_the_schema_file_and_name_every_property() {
    let schema = schema();
    assert!(
        jsonschema::meta::is_valid(&schema),
        "a valid 2020-12 schema"
    );
    let validator = jsonschema::draft202012::new(&schema).expect("the schema compiles");
    let required: Vec<&str> = schema["required"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for e in varied_events() {
        let payload = json(&body(&e));
        let errors: Vec<String> = validator
            .iter_errors(&payload)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{payload}: {errors:?}");
        let keys: Vec<&str> = payload
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut sorted_required = required.clone();
        sorted_required.sort_unstable();
        let mut sorted_keys = keys.clone();
        sorted_keys.sort_unstable();
        assert_eq!(
            sorted_keys, sorted_required,
            "the payload and the schema agree"
        );
    }
    let payload = json(&body(&varied_events()[0]));
    assert_eq!(
        payload["fields"]["class"], "oom",
        "the first of a repeated name"
    );
    assert_eq!(payload["text"].as_str().unwrap(), varied_events()[0].text);
    let daemon = json(&body(&varied_events()[1]));
    assert_eq!(
        (daemon["task"].is_null(), daemon["project"].is_null()),
        (true, true)
    );
    // And the schema refuses what is not an event.
    for bad in [
        serde_json::json!({"schema": "nightjar.event.v2"}),
        {
            let mut p = json(&body(&event(1, "test")));
            p["severity"] = "fatal".into();
            p
        },
        {
            let mut p = json(&body(&event(1, "test")));
            p["fields"]["n"] = 3.into();
            p
        },
    ] {
        assert!(!validator.is_valid(&bad), "{bad}");
    }
}

#[test]
fn a_batch_posts_in_order_and_stops_at_the_first_failure() {
    let mock = HttpMock::install();
    mock.reply(200, "").reply(503, "upstream busy");
    let c = plain();
    let events: Vec<Event> = (1..=3).map(|i| event(i, "task-succeeded")).collect();
    let e = Webhook::deliver(&c, &events).unwrap_err();
    assert_eq!(
        e,
        DeliveryError::transient("hooks.example.org: event 2: HTTP 503: upstream busy")
    );
    let ids: Vec<Option<String>> = mock
        .requests()
        .iter()
        .map(|r| r.header_value("webhook-id").map(String::from))
        .collect();
    assert_eq!(ids, [Some("1-test".into()), Some("2-test".into())]);
    mock.take_requests();
    Webhook::deliver(&c, &events).unwrap();
    assert_eq!(mock.requests().len(), 3);
}

#[test]
fn outcomes_sort_into_transient_and_permanent() {
    let c = plain();
    let one = [event(1, "test")];
    let mock = HttpMock::install();
    for (status, transient) in [
        (408, true),
        (429, true),
        (500, true),
        (599, true),
        (400, false),
        (401, false),
        (404, false),
        (410, false),
    ] {
        mock.reply(status, "x".repeat(500));
        let e = Webhook::deliver(&c, &one).unwrap_err();
        assert_eq!(e.is_transient(), transient, "{status}");
        let quoted = e.message().rsplit(": ").next().unwrap();
        assert_eq!(
            quoted.len(),
            200,
            "{status}: the first 200 bytes of the body"
        );
        assert!(e.message().contains(&format!("HTTP {status}")));
        assert!(!e.message().contains("t0p"), "no token from the URL: {e}");
    }
    for (fail, transient) in [
        (HttpError::Timeout, true),
        (HttpError::Unreachable("connection reset".into()), true),
        (
            HttpError::Denied("hooks.example.org is not on the allow-list".into()),
            false,
        ),
    ] {
        mock.fail(fail.clone());
        let e = Webhook::deliver(&c, &one).unwrap_err();
        assert_eq!(e.is_transient(), transient, "{fail:?}");
    }
    mock.reply(204, "");
    Webhook::deliver(&c, &one).unwrap();
}
