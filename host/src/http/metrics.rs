//! `GET /metrics`: the daemon's Prometheus metrics (`[http] metrics =
//! true`), as OpenMetrics text. Readable with an API token like any
//! route; without one only from this machine's loopback address (not
//! through a trusted proxy, which would make every proxied client local)
//! or from an address `http.metrics_allow` lists, which is how a
//! Prometheus server elsewhere scrapes it.

use std::net::IpAddr;

use axum::Extension;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::Peer;
use super::api::error_response;
use super::peer::plain;
use crate::access::Caller;
use crate::api::{Api, ErrorKind};

/// The route's path.
pub const PATH: &str = "/metrics";

/// Whether a request from `peer` without credentials may read the metrics,
/// given `http.metrics_allow` and the trusted proxies.
pub fn open_to(allow: &[String], proxies: &[IpAddr], peer: IpAddr) -> bool {
    let peer = plain(peer);
    let proxied = proxies.iter().any(|p| plain(*p) == peer);
    (peer.is_loopback() && !proxied)
        || allow
            .iter()
            .filter_map(|a| a.parse::<IpAddr>().ok())
            .any(|a| plain(a) == peer)
}

/// `GET /metrics` on the metrics' own listener (`http.metrics_listen`):
/// no API there and no tokens, so loopback and `metrics_allow` alone.
pub async fn exporter(State(d): State<Api>, peer: Option<Extension<Peer>>) -> Response {
    answer(d, None, peer).await
}

/// Any other path on the metrics' own listener.
pub async fn elsewhere() -> Response {
    error_response(
        StatusCode::NOT_FOUND,
        ErrorKind::NotFound,
        "this listener (`http.metrics_listen`) serves /metrics only; the API and dashboard are on `http.listen`",
    )
}

/// `GET /metrics` on the API's server.
pub async fn metrics(
    State(d): State<Api>,
    caller: Option<Extension<Caller>>,
    peer: Option<Extension<Peer>>,
) -> Response {
    answer(d, Some(caller.is_some()), peer).await
}

/// The metrics, for a peer they are open to, or (where tokens are taken:
/// `authorised` is `Some`) a caller with credentials.
async fn answer(d: Api, authorised: Option<bool>, peer: Option<Extension<Peer>>) -> Response {
    if !d.config().http.metrics {
        return error_response(
            StatusCode::NOT_FOUND,
            ErrorKind::NotFound,
            "the metrics are off: set `metrics = true` under `[http]` in the daemon's config",
        );
    }
    let allowed = authorised == Some(true)
        || peer.is_some_and(|Extension(Peer(p))| {
            let http = &d.config().http;
            open_to(&http.metrics_allow, &http.proxies(), p.ip())
        });
    if !allowed {
        return match authorised {
            Some(_) => error_response(
                StatusCode::UNAUTHORIZED,
                ErrorKind::Forbidden,
                "the metrics are open without a token only from this machine (loopback) and from the addresses in `http.metrics_allow`: list the Prometheus server's address there, or send an API token as `Authorization: Bearer <token>`",
            ),
            None => error_response(
                StatusCode::FORBIDDEN,
                ErrorKind::Forbidden,
                "this listener (`http.metrics_listen`) serves the metrics to this machine (loopback) and to the addresses in `http.metrics_allow` only: list the Prometheus server's address there",
            ),
        };
    }
    match d.metrics().await {
        Ok(text) => {
            let mut r = (StatusCode::OK, text).into_response();
            r.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(crate::metrics::CONTENT_TYPE),
            );
            r
        }
        Err(e) => error_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorKind::Internal,
            &format!("{e:#}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_without_a_token_from_loopback_and_the_allowed_but_not_through_a_proxy() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let none: &[String] = &[];
        assert!(open_to(none, &[], ip("127.0.0.1")));
        assert!(open_to(none, &[], ip("::1")));
        assert!(
            open_to(none, &[], ip("::ffff:127.0.0.1")),
            "IPv4 mapped into IPv6"
        );
        assert!(!open_to(none, &[], ip("10.0.0.5")));
        let allow = ["10.0.0.5".to_string()];
        assert!(open_to(&allow, &[], ip("10.0.0.5")));
        assert!(open_to(&allow, &[], ip("::ffff:10.0.0.5")));
        assert!(!open_to(&allow, &[], ip("10.0.0.6")));
        // A proxy on loopback speaks for remote clients: not open to it.
        let proxies = [ip("127.0.0.2")];
        assert!(!open_to(&allow, &proxies, ip("127.0.0.2")));
        assert!(open_to(&allow, &proxies, ip("127.0.0.1")));
    }
}
