use super::*;
use crate::testing::HttpMock;

#[test]
fn statuses_sort_into_delivered_transient_and_permanent() {
    assert_eq!(Response::new(200, "").check(), Ok(()));
    assert_eq!(Response::new(204, "").check(), Ok(()));
    for status in [408, 429, 500, 502, 503, 599] {
        let e = Response::new(status, "later").check().unwrap_err();
        assert!(e.is_transient(), "{status}");
        assert_eq!(e.message(), format!("HTTP {status}: later"));
    }
    for status in [301, 400, 401, 403, 404, 410, 422] {
        let e = Response::new(status, "").check().unwrap_err();
        assert!(!e.is_transient(), "{status}");
        assert_eq!(e.message(), format!("HTTP {status}"));
    }
}

#[test]
fn an_error_quotes_at_most_200_bytes_of_the_body_at_a_character_boundary() {
    let body = "错".repeat(100); // 300 bytes
    let e = Response::new(400, body).check().unwrap_err();
    let quoted = e.message().strip_prefix("HTTP 400: ").unwrap();
    assert_eq!(quoted, "错".repeat(66)); // 198 bytes: 200 falls inside the 67th
    let bad = Response::new(500, vec![0xff; 300]).quoted_body();
    assert!(bad.len() <= QUOTED_BODY_BYTES);
}

#[test]
fn refusals_are_permanent_and_timeouts_transient() {
    assert!(!DeliveryError::from(HttpError::Denied("not allow-listed".into())).is_transient());
    assert!(DeliveryError::from(HttpError::Timeout).is_transient());
    assert!(DeliveryError::from(HttpError::Unreachable("reset".into())).is_transient());
}

#[test]
fn post_json_sets_the_content_type_unless_told_and_keeps_header_order() {
    let mock = HttpMock::install();
    post_json("https://a.example/x", [("b", "1"), ("a", "2")], "{}").unwrap();
    post_json(
        "https://a.example/x",
        vec![(
            "Content-Type".to_string(),
            "application/cloudevents+json".to_string(),
        )],
        b"{}".to_vec(),
    )
    .unwrap();
    let sent = mock.requests();
    assert_eq!(sent[0].method, "POST");
    assert_eq!(
        sent[0].headers,
        [
            ("content-type".to_string(), "application/json".to_string()),
            ("b".to_string(), "1".to_string()),
            ("a".to_string(), "2".to_string()),
        ]
    );
    assert_eq!(sent[1].headers.len(), 1);
    assert_eq!(
        sent[1].header_value("content-type"),
        Some("application/cloudevents+json")
    );
    assert_eq!(sent[1].text(), "{}");
}

#[test]
fn without_a_mock_there_is_no_network() {
    let e = send(Request::new("GET", "https://a.example/")).unwrap_err();
    assert!(matches!(e, HttpError::Unreachable(_)), "{e:?}");
}

#[test]
fn the_mock_answers_in_order_then_falls_back_and_uninstalls_when_dropped() {
    let mock = HttpMock::install();
    mock.reply(201, "made")
        .fail(HttpError::Timeout)
        .otherwise(Err(HttpError::Denied("nope".into())));
    let get = || send(Request::new("GET", "https://a.example/"));
    assert_eq!(get().unwrap().status, 201);
    assert_eq!(get(), Err(HttpError::Timeout));
    assert_eq!(get(), Err(HttpError::Denied("nope".into())));
    assert_eq!(mock.take_requests().len(), 3);
    assert!(mock.requests().is_empty());
    drop(mock);
    assert!(matches!(get(), Err(HttpError::Unreachable(_))));
}

#[test]
fn a_replaced_mock_does_not_uninstall_its_successor() {
    let first = HttpMock::install();
    let second = HttpMock::install();
    drop(first);
    send(Request::new("GET", "https://a.example/")).unwrap();
    assert_eq!(second.requests().len(), 1);
}

#[test]
fn response_headers_ignore_case() {
    let mut r = Response::new(200, "");
    r.headers.push(("Retry-After".into(), "30".into()));
    assert_eq!(r.header("retry-after"), Some("30"));
    assert_eq!(r.header("x"), None);
}
