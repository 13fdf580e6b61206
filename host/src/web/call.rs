//! Pages ask the daemon through the same [`Api::call`] the socket and the
//! HTTP API use, so the access rules are enforced in one place; the reply
//! comes back typed, with no JSON in between.

use axum::Extension;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use crate::access::Caller;
use crate::api::Api;
use crate::api::handlers::Handler;
use crate::api::{ApiError, ErrorKind};

/// A page that shows one verb's reply: the session (else the login), the
/// call, and `render` of its reply in the layout (`fragment`: the table only).
pub async fn reply_page<C: Handler>(
    d: &Api,
    caller: Option<Extension<Caller>>,
    headers: &HeaderMap,
    fragment: bool,
    req: C,
    (title, path): (&str, &'static str),
    render: impl FnOnce(&C::Reply) -> String,
) -> Response {
    let Some(s) = super::auth::Session::of(caller.map(|Extension(c)| c), headers) else {
        return super::auth::to_login();
    };
    match call(d, &s.caller, req).await {
        Ok(reply) => {
            super::layout::Page::new(title, path, render(&reply)).render(Some(&s.caller), fragment)
        }
        Err(e) => error_page(&e),
    }
}

/// The typed reply to `req` from `caller`, or the daemon's error.
pub async fn call<C: Handler>(d: &Api, caller: &Caller, req: C) -> Result<C::Reply, ApiError> {
    d.call(caller, req).await
}

/// The HTTP status for an error of `kind`.
pub fn status(kind: ErrorKind) -> StatusCode {
    match kind {
        ErrorKind::NotFound => StatusCode::NOT_FOUND,
        ErrorKind::Forbidden => StatusCode::FORBIDDEN,
        ErrorKind::Invalid | ErrorKind::BadRequest | ErrorKind::Protocol => StatusCode::BAD_REQUEST,
        ErrorKind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        ErrorKind::Internal | ErrorKind::Other => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// The error page for `e`.
pub fn error_page(e: &ApiError) -> axum::response::Response {
    super::layout::error(status(e.kind), &e.message)
}
