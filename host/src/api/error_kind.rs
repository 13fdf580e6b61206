//! The kind of a handler's error, read from what the error is made of, so
//! a client can tell its own mistake from the daemon's failure:
//!
//! - an error a handler typed itself ([`ApiError`]) keeps its kind;
//! - the store's not-found and invalid are the caller's (exit 4 and 1,
//!   HTTP 404 and 400);
//! - a store, SQLite or I/O failure is the daemon's (`internal`: exit 7,
//!   HTTP 500), and the daemon's log gets it in full;
//! - anything else is a request that cannot be done (`invalid`). Checks of
//!   a user's own paths turn their I/O errors into text for that reason:
//!   a workdir the owner cannot enter is their mistake, not a failure here.
//!
//! A kind the handler typed wins: a handler that wraps a store or I/O
//! error in its own `ApiError` (as context) has said what it is.

use super::{ApiError, ErrorKind};
use crate::store::StoreError;

/// What a client is told of a failed handler: its kind and the whole chain
/// of causes; a failure inside the daemon is also logged, and its message
/// says that the request itself was not at fault.
pub(super) fn classify(e: anyhow::Error) -> ApiError {
    let kind = kind_of(&e);
    let text = format!("{e:#}");
    if kind == ErrorKind::Internal {
        tracing::error!(error = %text, "a request failed inside the daemon");
        return ApiError::new(
            kind,
            format!(
                "{text} (a failure inside the daemon, not in the request: nothing was changed by it; try again, and if it lasts, the daemon's log says more)"
            ),
        );
    }
    ApiError::new(kind, text)
}

/// The kind of `e`: a kind typed by the handler (anyhow finds it as the
/// error or as any context around it), else the outermost cause the store,
/// SQLite or the OS gave (found along the sources too).
fn kind_of(e: &anyhow::Error) -> ErrorKind {
    if let Some(api) = e.downcast_ref::<ApiError>() {
        return api.kind;
    }
    if let Some(s) = e.downcast_ref::<StoreError>() {
        return of_store(s);
    }
    for cause in e.chain() {
        if let Some(s) = cause.downcast_ref::<StoreError>() {
            return of_store(s);
        }
        if cause.is::<rusqlite::Error>() || cause.is::<std::io::Error>() {
            return ErrorKind::Internal;
        }
    }
    ErrorKind::Invalid
}

/// The store's own errors: not-found and invalid are the caller's, the
/// rest the daemon's.
fn of_store(s: &StoreError) -> ErrorKind {
    match s {
        StoreError::NotFound(_) => ErrorKind::NotFound,
        StoreError::Invalid(_) => ErrorKind::Invalid,
        StoreError::Sql(_)
        | StoreError::Json(_)
        | StoreError::TooNew { .. }
        | StoreError::Damaged { .. } => ErrorKind::Internal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io(kind: std::io::ErrorKind) -> std::io::Error {
        std::io::Error::new(kind, "the disk said no")
    }

    #[test]
    fn a_plain_message_is_the_callers_request_that_cannot_be_done() {
        let e = classify(anyhow::anyhow!("task 3 has ended; it cannot be held"));
        assert_eq!(e.kind, ErrorKind::Invalid);
        assert_eq!(e.message, "task 3 has ended; it cannot be held");
    }

    #[test]
    fn the_stores_not_found_and_invalid_stay_the_callers() {
        let nf = anyhow::Error::from(StoreError::NotFound("no task with id 9".into()));
        assert_eq!(classify(nf).kind, ErrorKind::NotFound);
        let inv = anyhow::Error::from(StoreError::Invalid("wrong state".into()))
            .context("cancelling task 9");
        assert_eq!(classify(inv).kind, ErrorKind::Invalid);
    }

    #[test]
    fn store_sqlite_and_io_failures_are_the_daemons_and_say_so() {
        let busy = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
            Some("database is locked".into()),
        );
        let cases: Vec<anyhow::Error> = vec![
            StoreError::Sql(busy).into(),
            StoreError::Damaged {
                path: "/var/lib/nightjar/nightjar.db".into(),
                detail: "malformed".into(),
            }
            .into(),
            anyhow::Error::from(io(std::io::ErrorKind::StorageFull))
                .context("writing the manifest"),
            anyhow::Error::from(rusqlite::Error::InvalidQuery).context("listing"),
        ];
        for e in cases {
            let shown = format!("{e:#}");
            let a = classify(e);
            assert_eq!(a.kind, ErrorKind::Internal, "{shown}");
            assert!(
                a.message.starts_with(&shown) && a.message.contains("not in the request"),
                "{}",
                a.message
            );
        }
    }

    #[test]
    fn a_kind_the_handler_typed_wins_and_a_users_path_error_as_text_is_theirs() {
        // A handler that typed an I/O failure as the caller's keeps it so.
        let typed = anyhow::Error::from(io(std::io::ErrorKind::NotFound))
            .context(ApiError::new(ErrorKind::NotFound, "run 4 has no log"));
        assert_eq!(classify(typed).kind, ErrorKind::NotFound);
        let around_store =
            anyhow::Error::from(StoreError::Sql(rusqlite::Error::InvalidQuery)).context(
                ApiError::new(ErrorKind::Invalid, "that filter cannot be listed"),
            );
        assert_eq!(classify(around_store).kind, ErrorKind::Invalid);
        // A check that turned a user's path error into text is the caller's.
        let text = anyhow::anyhow!(
            "task `a`: workdir {}",
            io(std::io::ErrorKind::PermissionDenied)
        );
        assert_eq!(classify(text).kind, ErrorKind::Invalid);
    }
}
