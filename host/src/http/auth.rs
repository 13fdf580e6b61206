//! Who an HTTP request comes from, in this order: `Authorization: Bearer
//! <token>`; the cookie `nj_session=<token>` (the dashboard's login sets
//! it), on the dashboard's pages and on the API's `GET` streams only (a
//! browser sends a cookie with any page's cross-site request, so no state
//! changes on it: `POST /api/v2/*` takes a bearer token, which no other
//! page can make the browser send); the `http.trusted_proxy_header` when
//! the TCP peer is one of `http.trusted_proxies`. The caller found goes into the request as
//! `Extension<Caller>`. An API request without one is answered 401; a
//! dashboard page gets through without one (it redirects to its login).

use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;

use super::Peer;
use super::api::error_response;
use crate::access::Caller;
use crate::api::Api;
use crate::api::ErrorKind;
use crate::api::handlers::tokens::Refused;

/// The dashboard's session cookie: it holds a token.
pub const COOKIE: &str = "nj_session";

/// What a 401 tells the client to do.
const HOW: &str = "send an API token as `Authorization: Bearer <token>`; make one with `nightjar token create` (it is shown once)";

/// Paths open without credentials.
fn open_path(path: &str) -> bool {
    matches!(path, "/api/v2/health" | "/api/v2/openapi.yaml") || !path.starts_with("/api/")
}

/// The auth middleware (`axum::middleware::from_fn_with_state`).
pub async fn middleware(State(d): State<Api>, mut req: Request, next: Next) -> Response {
    let path = req.uri().path().to_string();
    let found = {
        let d = d.clone();
        let mut creds = Credentials::of(&req, &d);
        let safe = matches!(*req.method(), Method::GET | Method::HEAD);
        if path.starts_with("/api/")
            && !safe
            && creds.bearer.is_none()
            && creds.cookie.take().is_some()
        {
            return unauthorized(&format!(
                "the dashboard's session cookie is not accepted for {} {path} (a cookie rides along with other pages' requests too): {HOW}",
                req.method()
            ));
        }
        tokio::task::spawn_blocking(move || creds.resolve(&d))
            .await
            .unwrap_or_else(|e| {
                Err(Refused::Unchecked(format!(
                    "the token check did not finish: {e}"
                )))
            })
    };
    match found {
        Ok(Some((caller, token))) => {
            req.extensions_mut().insert(caller);
            req.extensions_mut().insert(TokenOf(token));
            next.run(req).await
        }
        Ok(None) if open_path(&path) => next.run(req).await,
        Ok(None) => unauthorized(&format!("no credentials: {HOW}")),
        // The store could not check them: the daemon's failure, not the caller's.
        Err(Refused::Unchecked(why)) if path.starts_with("/api/") => {
            error_response(StatusCode::INTERNAL_SERVER_ERROR, ErrorKind::Internal, &why)
        }
        Err(Refused::Unchecked(why)) => {
            crate::web::layout::error(StatusCode::INTERNAL_SERVER_ERROR, &why)
        }
        // Bad credentials on a page: the page shows its login instead.
        Err(Refused::Invalid(_)) if !path.starts_with("/api/") => next.run(req).await,
        Err(Refused::Invalid(why)) => unauthorized(&format!("{why}: {HOW}")),
    }
}

fn unauthorized(msg: &str) -> Response {
    let mut r = error_response(StatusCode::UNAUTHORIZED, ErrorKind::Forbidden, msg);
    r.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        header::HeaderValue::from_static("Bearer realm=\"nightjar\""),
    );
    r
}

/// The SHA-256 of the token a request's caller came from (none: the
/// trusted proxy named them): streams that outlive the request ask again
/// whether it is still valid, so a revoked token ends them.
#[derive(Debug, Clone)]
pub struct TokenOf(pub Option<String>);

impl TokenOf {
    /// Whether the caller's credentials still hold (a store error counts
    /// as yes: a busy database must not cut every stream).
    pub fn still_valid(&self, d: &Api) -> bool {
        match &self.0 {
            None => true,
            Some(hash) => d.token_live(hash),
        }
    }
}

/// The credentials a request carries, read off it (before any lookup).
#[derive(Debug, Default)]
struct Credentials {
    bearer: Option<String>,
    cookie: Option<String>,
    proxy_user: Option<String>,
}

impl Credentials {
    fn of(req: &Request, d: &Api) -> Credentials {
        let h = req.headers();
        let bearer = h
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .map(|v| match v.strip_prefix("Bearer ") {
                Some(t) => t.trim().to_string(),
                // Another scheme is no token of ours: refused below.
                None => String::new(),
            });
        let cookie = h
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|kv| kv.trim().split_once('='))
            .find(|(k, _)| *k == COOKIE)
            .map(|(_, v)| v.trim().to_string());
        let cfg = &d.config().http;
        let trusted = req
            .extensions()
            .get::<Peer>()
            .is_some_and(|p| cfg.proxies().contains(&p.0.ip()));
        let proxy_user = (trusted && !cfg.trusted_proxy_header.is_empty())
            .then(|| h.get(cfg.trusted_proxy_header.as_str()))
            .flatten()
            .map(|v| String::from_utf8_lossy(v.as_bytes()).trim().to_string());
        Credentials {
            bearer,
            cookie,
            proxy_user,
        }
    }

    /// The caller and the hash of their token, none (no credentials), or
    /// why the credentials are refused.
    fn resolve(self, d: &Api) -> Result<Option<(Caller, Option<String>)>, Refused> {
        let invalid = |e: crate::api::ApiError| Refused::Invalid(e.message);
        if let Some(t) = self.bearer.or(self.cookie) {
            let uid = d.token_owner(&t)?;
            let hash = crate::api::handlers::tokens::hash(&t);
            return d
                .access()
                .caller(uid)
                .map(|c| Some((c, Some(hash))))
                .map_err(invalid);
        }
        if let Some(name) = self.proxy_user {
            let account = crate::users::by_name(&name).ok_or_else(|| {
                Refused::Invalid(format!(
                    "the proxy names the user `{}`, whom this machine does not know",
                    name.escape_debug()
                ))
            })?;
            return d
                .access()
                .caller(account.uid)
                .map(|c| Some((c, None)))
                .map_err(invalid);
        }
        Ok(None)
    }
}
