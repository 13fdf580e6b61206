//! The dashboard's pages, served by the HTTP server (`crate::http`) under
//! `/`. Its handlers take `Option<Extension<Caller>>`: a request without
//! credentials reaches them with none, so a page can send it to the login.

use std::sync::Arc;

use crate::daemon::Daemon;

/// The dashboard's routes (merged into the HTTP router).
pub fn routes() -> axum::Router<Arc<Daemon>> {
    axum::Router::new()
}
