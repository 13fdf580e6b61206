//! The HTTP API (`[http]`, off by default): the socket's protocol over
//! HTTP, one route per verb answered through the same `api::Api::call`, with
//! the caller from a token (or a trusted proxy's header) instead of
//! `SO_PEERCRED`; an event stream; log streams; the OpenAPI file; and the
//! dashboard's pages (`crate::web`).
//!
//! Bounded like the socket: at most `http.max_connections` connections
//! (one more is answered 503 and closed), `http.idle_timeout` to send a
//! request's headers (idle keep-alive connections included) and again
//! to send its body (408: a body dribbled a byte at a time must not hold
//! a connection), bodies of at most 1 MiB (413), at most
//! `http.max_streams` streams at once.

mod api;
pub mod auth;
mod metrics;
#[cfg(test)]
mod openapi_tests;
mod peer;
mod sse;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use axum::body::Bytes;
use axum::extract::DefaultBodyLimit;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Extension, Router};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

use crate::access::Caller;
use crate::api::Api;
use crate::api::{MAX_REQUEST, VERBS};

/// The prefix of every API route.
pub const PREFIX: &str = "/api/v2";

/// The routes besides one `POST {PREFIX}/{verb}` per verb: method, path
/// (axum's syntax). The OpenAPI file is checked against these and `VERBS`.
pub const EXTRA_ROUTES: &[(&str, &str)] = &[
    ("GET", "/api/v2/health"),
    ("GET", "/api/v2/openapi.yaml"),
    ("GET", "/api/v2/events"),
    ("GET", "/api/v2/logs/{id}"),
];

/// Every API route: method and path.
pub fn api_routes() -> Vec<(&'static str, String)> {
    let mut all: Vec<(&str, String)> = EXTRA_ROUTES
        .iter()
        .map(|(m, p)| (*m, p.to_string()))
        .collect();
    all.extend(
        verb_paths()
            .into_iter()
            .map(|name| ("POST", format!("{PREFIX}/{name}"))),
    );
    all
}

/// Every name a verb is routed under: its own, and a renamed verb's
/// earlier one (deprecated in the OpenAPI file, answered the same).
fn verb_paths() -> Vec<&'static str> {
    VERBS
        .iter()
        .flat_map(|v| std::iter::once(v.name).chain(v.was))
        .collect()
}

/// Marks axum's answer for a path no route has (the OpenAPI test tells it
/// from a route's own 404).
pub const NO_ROUTE_HEADER: &str = "x-nightjar-no-route";

/// The whole router: the API, the dashboard's pages, and the auth
/// middleware in front of both.
pub fn router(d: Api) -> Router {
    let mut api = Router::new()
        .route("/api/v2/health", get(api::health))
        .route("/api/v2/openapi.yaml", get(api::openapi))
        .route("/api/v2/events", get(sse::events))
        .route("/api/v2/logs/{id}", get(sse::logs));
    for name in verb_paths() {
        api = api.route(
            &format!("{PREFIX}/{name}"),
            post(
                move |state: State<Api>,
                      caller: Option<Extension<Caller>>,
                      headers: axum::http::HeaderMap,
                      body: Bytes| {
                    api::verb(name, state, caller, headers, body)
                },
            ),
        );
    }
    api.route(metrics::PATH, get(metrics::metrics))
        .merge(crate::web::routes())
        .fallback(no_route)
        .layer(axum::middleware::from_fn_with_state(
            d.clone(),
            auth::middleware,
        ))
        .layer(DefaultBodyLimit::max(MAX_REQUEST))
        .layer(axum::Extension(sse::Streams::new(
            d.config().http.max_streams,
        )))
        .with_state(d)
}

async fn no_route() -> impl IntoResponse {
    let mut r = api::error_response(
        StatusCode::NOT_FOUND,
        crate::api::ErrorKind::NotFound,
        "no such route: the API's routes are listed at /api/v2/openapi.yaml",
    );
    r.headers_mut()
        .insert(NO_ROUTE_HEADER, HeaderValue::from_static("1"));
    r
}

/// The TCP peer of a request (inserted by the accept loop).
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub SocketAddr);

/// Binds `[http] listen` when set, and writes the address bound to
/// `<state_dir>/http.addr` (port 0 picks a free one).
pub async fn bind(d: &Api) -> Result<Option<TcpListener>> {
    let Some(addr) = d.config().http.addr()? else {
        return Ok(None);
    };
    let (listener, local, file) =
        bind_at(d, addr, "the HTTP API", "http.listen", "http.addr").await?;
    tracing::info!(
        "HTTP API on http://{local}{PREFIX}/ (address in {})",
        file.display()
    );
    Ok(Some(listener))
}

/// Binds `[http] metrics_listen` when set (the metrics' own listener), and
/// writes the address bound to `<state_dir>/metrics.addr`.
pub async fn bind_metrics(d: &Api) -> Result<Option<TcpListener>> {
    let Some(addr) = d.config().http.metrics_addr()? else {
        return Ok(None);
    };
    let (listener, local, _) = bind_at(
        d,
        addr,
        "the metrics",
        "http.metrics_listen",
        "metrics.addr",
    )
    .await?;
    tracing::info!("metrics on http://{local}{}", metrics::PATH);
    Ok(Some(listener))
}

/// Binds `addr` (what listens there and the config key, for the error)
/// and writes the address bound to `<state_dir>/{file}`.
async fn bind_at(
    d: &Api,
    addr: SocketAddr,
    what: &str,
    key: &str,
    file: &str,
) -> Result<(TcpListener, SocketAddr, std::path::PathBuf)> {
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("bind {what} to {addr} (`{key}`)"))?;
    let local = listener.local_addr()?;
    let file = d.config().state_dir.join(file);
    std::fs::write(&file, format!("{local}\n"))
        .with_context(|| format!("write {}", file.display()))?;
    Ok((listener, local, file))
}

/// Accepts HTTP connections until the daemon stops.
pub async fn serve(d: Api, listener: TcpListener) {
    let app = router(d.clone());
    serve_app(d, listener, app).await
}

/// Accepts connections to the metrics' own listener: `/metrics` only.
pub async fn serve_metrics(d: Api, listener: TcpListener) {
    let app = Router::new()
        .route(metrics::PATH, get(metrics::exporter))
        .fallback(metrics::elsewhere)
        .with_state(d.clone());
    serve_app(d, listener, app).await
}

/// Serves `app` on `listener` within `[http]`'s connection limits.
async fn serve_app(d: Api, listener: TcpListener, app: Router) {
    let cfg = d.config().http.clone();
    let slots = Arc::new(Semaphore::new(cfg.max_connections));
    let peers = peer::PeerCount::default();
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!("HTTP accept failed: {e}; retrying in 100 ms");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let client = match stream.local_addr() {
            Ok(local) => peer::Client::of(peer, local),
            Err(_) => peer::Client::Addr(peer.ip()),
        };
        let Some(of_peer) = peers.take(client, cfg.max_connections_per_peer) else {
            tokio::spawn(refuse_peer(stream, client, cfg.max_connections_per_peer));
            continue;
        };
        let Ok(permit) = Arc::clone(&slots).try_acquire_owned() else {
            tokio::spawn(refuse(stream, cfg.max_connections));
            continue;
        };
        let app = app.clone();
        let idle = cfg.idle_timeout;
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(move |req: hyper::Request<_>| {
                let mut app = app.clone();
                async move {
                    let mut req = match with_body(req, idle).await {
                        Ok(r) => r,
                        Err(refused) => return Ok(refused),
                    };
                    req.extensions_mut().insert(Peer(peer));
                    tower_service::Service::call(&mut app, req).await
                }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(idle)
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), svc);
            if let Err(e) = conn.await {
                tracing::debug!("HTTP connection from {peer}: {e}");
            }
            drop((permit, of_peer));
        });
    }
}

/// The request with its whole body read, which must arrive within `limit`
/// and hold at most `MAX_REQUEST` bytes; or the answer refusing it (the
/// connection is closed after it).
async fn with_body(
    req: hyper::Request<hyper::body::Incoming>,
    limit: Duration,
) -> Result<axum::extract::Request, axum::response::Response> {
    use futures_util::StreamExt;
    let (parts, body) = req.into_parts();
    let deadline = tokio::time::Instant::now() + limit;
    let mut data = axum::body::Body::new(body).into_data_stream();
    let mut buf = Vec::new();
    let refuse = |status, why: &str| {
        let mut r = api::error_response(status, crate::api::ErrorKind::BadRequest, why);
        r.headers_mut().insert(
            axum::http::header::CONNECTION,
            HeaderValue::from_static("close"),
        );
        r
    };
    loop {
        match tokio::time::timeout_at(deadline, data.next()).await {
            Err(_) => {
                return Err(refuse(
                    StatusCode::REQUEST_TIMEOUT,
                    "the request's body did not arrive within `http.idle_timeout`",
                ));
            }
            Ok(None) => break,
            Ok(Some(Err(e))) => {
                return Err(refuse(
                    StatusCode::BAD_REQUEST,
                    &format!("cannot read the body: {e}"),
                ));
            }
            Ok(Some(Ok(chunk))) => {
                if buf.len() + chunk.len() > MAX_REQUEST {
                    return Err(refuse(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        &format!("the request's body is over {MAX_REQUEST} bytes"),
                    ));
                }
                buf.extend_from_slice(&chunk);
            }
        }
    }
    Ok(axum::extract::Request::from_parts(
        parts,
        axum::body::Body::from(buf),
    ))
}

/// Answers 503 to a connection over the limit and closes it.
async fn refuse(stream: TcpStream, max: usize) {
    let msg = format!(
        "too many connections: the daemon serves at most {max} HTTP connections at once (`http.max_connections`); try again shortly"
    );
    refuse_with(stream, "503 Service Unavailable", &msg).await;
}

/// Answers `status` with an `unavailable` error line saying `msg`, unasked,
/// and closes the connection.
async fn refuse_with(mut stream: TcpStream, status: &str, msg: &str) {
    let body = String::from_utf8_lossy(&crate::api::server::error_line(crate::api::ApiError::new(
        crate::api::ErrorKind::Unavailable,
        msg,
    )))
    .into_owned();
    let reply = format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(Duration::from_secs(1), stream.write_all(reply.as_bytes())).await;
}

/// Answers 429 to a peer over its share and closes the connection.
async fn refuse_peer(stream: TcpStream, client: peer::Client, max: usize) {
    let msg = format!(
        "too many connections from {}: at most {max} at once (`http.max_connections_per_peer`); close some first",
        client.describe()
    );
    refuse_with(stream, "429 Too Many Requests", &msg).await;
}
