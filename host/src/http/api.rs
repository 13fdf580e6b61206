//! The API's routes: `POST /api/v2/{verb}` with the request's fields as a
//! JSON body, answered through `api::Api::call` (by `server::route`, the socket's codec) with the
//! caller from the auth middleware; the body is the socket's reply line.
//! The status follows the error kind: 404 not-found, 403 forbidden, 400
//! invalid and bad-request (an invalid request mixes bad input and a task
//! in the wrong state, so no 409: clients read `kind`), 503 unavailable,
//! 500 internal.

use axum::Extension;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::access::Caller;
use crate::api::Api;
use crate::api::{ApiError, ErrorKind, PROTOCOL, ReplyLine, Request};

/// The OpenAPI description of these routes (served as is).
pub const OPENAPI: &str = include_str!("../../openapi.yaml");

/// The HTTP status of an error kind.
pub fn status_of(kind: ErrorKind) -> StatusCode {
    match kind {
        ErrorKind::NotFound => StatusCode::NOT_FOUND,
        ErrorKind::Forbidden => StatusCode::FORBIDDEN,
        ErrorKind::Invalid | ErrorKind::BadRequest | ErrorKind::Protocol => StatusCode::BAD_REQUEST,
        ErrorKind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        ErrorKind::Internal | ErrorKind::Other => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// A JSON response.
pub fn json_response(status: StatusCode, body: Vec<u8>) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// An error reply line with `status`.
pub fn error_response(status: StatusCode, kind: ErrorKind, msg: &str) -> Response {
    json_response(
        status,
        crate::api::server::error_line(ApiError::new(kind, msg)),
    )
}

/// `POST /api/v2/{verb}`: one verb, the caller from the auth middleware.
pub async fn verb(
    name: &'static str,
    State(d): State<Api>,
    caller: Option<Extension<Caller>>,
    headers: axum::http::HeaderMap,
    body: Bytes,
) -> Response {
    let Some(Extension(caller)) = caller else {
        // The middleware lets no API request through without a caller.
        return error_response(StatusCode::UNAUTHORIZED, ErrorKind::Forbidden, "no caller");
    };
    if canonical(name) == <crate::api::TokenCreate as crate::api::Call>::VERB {
        // A token (or a session, which is one) minting tokens would let a
        // stolen one outlive its own revocation: tokens come from the
        // socket, where the kernel names the user.
        return error_response(
            StatusCode::FORBIDDEN,
            ErrorKind::Forbidden,
            "tokens are not made over HTTP (a token that mints tokens would outlive its own revocation): run `nightjar token create` on the machine",
        );
    }
    if let Err(why) = json_body(&headers, &body) {
        return error_response(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ErrorKind::BadRequest,
            &why,
        );
    }
    let req = match request(name, &body) {
        Ok(r) => r,
        Err(e) => return error_response(status_of(e.kind), e.kind, &e.message),
    };
    let line = crate::api::server::route(&d, &caller, req).await;
    json_response(status_from_line(&line), line)
}

/// The verb a route's name means: itself, or the verb it is the earlier
/// name of (a rule by verb then holds under either name).
fn canonical(name: &str) -> &str {
    crate::api::VERBS
        .iter()
        .find(|v| v.was == Some(name))
        .map_or(name, |v| v.name)
}

/// A verb's body is JSON, said so: `Content-Type: application/json` (a
/// body-less request may leave it out). What an HTML form or a `text/plain`
/// fetch can send from another page is refused before it is read.
fn json_body(headers: &axum::http::HeaderMap, body: &[u8]) -> Result<(), String> {
    let kind = headers
        .get(header::CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).to_ascii_lowercase());
    match kind {
        None if body.iter().all(u8::is_ascii_whitespace) => Ok(()),
        None => Err("a request body needs `Content-Type: application/json`".into()),
        Some(k) if k.split(';').next().map(str::trim) == Some("application/json") => Ok(()),
        Some(k) => Err(format!(
            "Content-Type `{}` is not accepted: send the fields as JSON with `Content-Type: application/json`",
            k.escape_debug()
        )),
    }
}

/// The request `name` with the fields of `body` (empty: none).
fn request(name: &str, body: &[u8]) -> Result<Request, ApiError> {
    let bad = |why: String| ApiError::new(ErrorKind::BadRequest, format!("bad request: {why}"));
    let mut fields = if body.iter().all(u8::is_ascii_whitespace) {
        serde_json::Map::new()
    } else {
        match serde_json::from_slice::<serde_json::Value>(body) {
            Ok(serde_json::Value::Object(m)) => m,
            Ok(_) => {
                return Err(bad(format!(
                    "the body of `{name}` must be a JSON object of its fields"
                )));
            }
            Err(e) => return Err(bad(e.to_string())),
        }
    };
    fields.insert("verb".into(), name.into());
    serde_json::from_value(serde_json::Value::Object(fields)).map_err(|e| bad(e.to_string()))
}

/// The status of a reply line: 200, or its error kind's.
fn status_from_line(line: &[u8]) -> StatusCode {
    #[derive(serde::Deserialize)]
    struct Kind {
        kind: Option<ErrorKind>,
    }
    match serde_json::from_slice::<Kind>(line) {
        Ok(Kind { kind: Some(k) }) => status_of(k),
        _ => StatusCode::OK,
    }
}

/// `GET /api/v2/health`: open to all; the daemon's version and protocol.
pub async fn health() -> Response {
    let body = ReplyLine::ok(serde_json::json!({
        "status": "ok",
        "version": env!("CARGO_PKG_VERSION"),
        "protocol": PROTOCOL,
    }));
    json_response(
        StatusCode::OK,
        serde_json::to_vec(&body).unwrap_or_default(),
    )
}

/// `GET /api/v2/openapi.yaml`: this API's description.
pub async fn openapi() -> Response {
    ([(header::CONTENT_TYPE, "application/yaml")], OPENAPI).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_is_the_requests_fields_and_the_route_names_the_verb() {
        let r = request("show", br#"{"id":4}"#).unwrap();
        assert!(matches!(r, Request::Show(s) if s.id == 4));
        assert!(matches!(request("ping", b"").unwrap(), Request::Ping(_)));
        // The route wins over a `verb` in the body.
        assert!(matches!(
            request("ping", br#"{"verb":"gc"}"#).unwrap(),
            Request::Ping(_)
        ));
        assert_eq!(
            request("show", b"{}").unwrap_err().kind,
            ErrorKind::BadRequest
        );
        assert_eq!(
            request("show", b"[1]").unwrap_err().kind,
            ErrorKind::BadRequest
        );
        assert_eq!(
            request("show", b"{").unwrap_err().kind,
            ErrorKind::BadRequest
        );
        assert_eq!(canonical("list"), "task-list");
        assert_eq!(canonical("task-list"), "task-list");
        assert_eq!(canonical("token-create"), "token-create");
        let line = crate::api::server::error_line(ApiError::new(ErrorKind::Forbidden, "no"));
        assert_eq!(status_from_line(&line), StatusCode::FORBIDDEN);
        assert_eq!(
            status_from_line(br#"{"v":2,"ok":{"kind":"x"}}"#),
            StatusCode::OK
        );
    }
}
