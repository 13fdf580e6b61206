//! Pages ask the daemon through the same `dispatch` the socket and the
//! HTTP API use, so the access rules are enforced in one place.

use std::sync::Arc;

use axum::http::StatusCode;

use crate::api::access::Caller;
use crate::api::{ApiError, Call, ErrorKind, ReplyLine};
use crate::daemon::Daemon;

/// The typed reply to `req` from `caller`, or the daemon's error.
pub async fn call<C: Call>(d: &Arc<Daemon>, caller: &Caller, req: C) -> Result<C::Reply, ApiError> {
    let line = crate::api::server::dispatch(d, caller, req.into()).await;
    let reply: ReplyLine<C::Reply> = serde_json::from_slice(&line)
        .map_err(|e| ApiError::new(ErrorKind::Internal, format!("cannot read the reply: {e}")))?;
    match reply.ok {
        Some(v) => Ok(v),
        None => Err(ApiError::new(
            reply.kind.unwrap_or(ErrorKind::Internal),
            reply.error.unwrap_or_else(|| "no reply".into()),
        )),
    }
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
