//! `POST /task/{id}/{cancel|hold|release|retry}`: the dashboard's buttons.
//! The request must come from this origin and carry the session's CSRF
//! token; what the caller may change is decided by the verb's handler (`api::Api::call`), as on the
//! socket (the form is never trusted).

use axum::Extension;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};

use super::auth::{Session, field, forbidden, form, same_origin, same_secret};
use super::call::{call, error_page};
use crate::access::Caller;
use crate::api::Api;
use crate::api::{Cancel, Hold, Release, Retry};

/// `POST /task/{id}/{action}`.
pub async fn act(
    State(d): State<Api>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    Path((id, action)): Path<(String, String)>,
    body: String,
) -> Response {
    let Some(s) = Session::of(caller.map(|Extension(c)| c), &headers) else {
        return forbidden("log in first");
    };
    if !same_origin(&headers) {
        return forbidden("cross-site request refused");
    }
    let fields = form(&body);
    if !field(&fields, "csrf").is_some_and(|t| same_secret(t, &s.csrf())) {
        return forbidden("the form's CSRF token is missing or wrong: reload the page");
    }
    let Ok(id) = id.parse::<i64>() else {
        return super::layout::error(StatusCode::NOT_FOUND, "no such task: ids are numbers");
    };
    let done = match action.as_str() {
        "cancel" => call(&d, &s.caller, Cancel { id }).await.map(|_| ()),
        "hold" => call(&d, &s.caller, Hold { id }).await.map(|_| ()),
        "release" => call(&d, &s.caller, Release { id }).await.map(|_| ()),
        "retry" => call(
            &d,
            &s.caller,
            Retry {
                id,
                no_cache: false,
            },
        )
        .await
        .map(|_| ()),
        _ => {
            return super::layout::error(
                StatusCode::NOT_FOUND,
                "no such action: cancel, hold, release or retry",
            );
        }
    };
    match done {
        Err(e) => error_page(&e),
        // The page's script posts in the background and waits for the change event.
        Ok(()) if headers.contains_key("x-requested-with") => {
            StatusCode::NO_CONTENT.into_response()
        }
        Ok(()) => Redirect::to(&format!("/task/{id}")).into_response(),
    }
}
