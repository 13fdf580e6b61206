//! The web dashboard the daemon serves under `/` (with `[http]`): server-
//! rendered pages, readable on a phone, updated live through the HTTP
//! API's event stream. One file per page; the layout and the embedded
//! assets (CSS, a small script) are shared. Every page asks the daemon
//! through `api::Api::call` or the store's read-only views; every user string is
//! escaped; the buttons post forms checked for origin and CSRF token.

use axum::Router;
use axum::routing::{get, post};

use crate::api::Api;

mod actions;
pub mod auth;
mod call;
mod gpus;
pub mod layout;
mod plugins;
pub mod queue;
mod report;
pub mod runs;
mod task;
mod task_more;

/// The dashboard's routes, merged into the HTTP server's router.
pub fn routes() -> Router<Api> {
    Router::new()
        .route("/", get(queue::page))
        .route("/login", get(auth::login_form).post(auth::login))
        .route("/logout", get(auth::logout_form).post(auth::logout))
        .route("/task/{id}", get(task::page))
        .route("/task/{id}/{action}", post(actions::act))
        .route("/gpus", get(gpus::page))
        .route("/runs", get(runs::page))
        .route("/plugins", get(plugins::page))
        .route("/report", get(report::page))
        .route("/assets/style.css", get(layout::style))
        .route("/assets/app.js", get(layout::script))
}
