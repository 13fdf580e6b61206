use axum::http::{HeaderMap, HeaderValue, header};

use super::*;

fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.append(
            header::HeaderName::from_static(k),
            HeaderValue::from_str(v).unwrap(),
        );
    }
    h
}

#[test]
fn the_csrf_token_is_the_sessions_hash_and_compares_exactly() {
    let a = csrf_for("tok-a");
    assert_eq!(a.len(), 64);
    assert_ne!(a, csrf_for("tok-b"));
    assert!(same_secret(&a, &csrf_for("tok-a")));
    assert!(!same_secret(&a, &csrf_for("tok-b")));
    assert!(!same_secret(&a, ""));
}

#[test]
fn forms_decode_plus_and_percent_and_survive_garbage() {
    let f = form("csrf=ab%20c&token=x+y&bad=%zz%4&empty&u=%C3%A9");
    assert_eq!(field(&f, "csrf"), Some("ab c"));
    assert_eq!(field(&f, "token"), Some("x y"));
    assert_eq!(field(&f, "bad"), Some("%zz%4"));
    assert_eq!(field(&f, "empty"), Some(""));
    assert_eq!(field(&f, "u"), Some("é"));
    assert_eq!(field(&f, "none"), None);
}

#[test]
fn cookies_are_found_among_others() {
    let h = headers(&[("cookie", "a=1; nj_session=s3cret ; b=2")]);
    assert_eq!(cookie(&h, COOKIE).as_deref(), Some("s3cret"));
    assert_eq!(cookie(&headers(&[("cookie", "nj_session=")]), COOKIE), None);
}

#[test]
fn only_this_origin_may_post() {
    assert!(same_origin(&headers(&[("host", "127.0.0.1:8080")])));
    assert!(same_origin(&headers(&[
        ("host", "127.0.0.1:8080"),
        ("origin", "http://127.0.0.1:8080"),
        ("sec-fetch-site", "same-origin"),
    ])));
    assert!(!same_origin(&headers(&[
        ("host", "127.0.0.1:8080"),
        ("origin", "http://evil.example"),
    ])));
    assert!(!same_origin(&headers(&[
        ("host", "127.0.0.1:8080"),
        ("sec-fetch-site", "cross-site"),
    ])));
    assert!(!same_origin(&headers(&[("origin", "null")])));
}

#[tokio::test]
async fn logging_out_takes_a_post_from_this_origin() {
    let drops = |r: &Response| {
        r.headers()
            .get(header::SET_COOKIE)
            .is_some_and(|v| v.to_str().unwrap().contains("Max-Age=0"))
    };
    // A link or an image elsewhere cannot log anyone out.
    let shown = logout_form().await;
    assert_eq!(shown.status(), StatusCode::OK);
    assert!(!drops(&shown));
    let forged = logout(headers(&[("host", "nj:8080"), ("origin", "http://evil")])).await;
    assert_eq!(forged.status(), StatusCode::FORBIDDEN);
    assert!(!drops(&forged));
    let own = logout(headers(&[
        ("host", "nj:8080"),
        ("origin", "http://nj:8080"),
    ]))
    .await;
    assert!(own.status().is_redirection() && drops(&own));
}
