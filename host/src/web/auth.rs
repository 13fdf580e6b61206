//! Sessions in the browser: `/login` turns a token (`nightjar token create`)
//! into the `nj_session` cookie; every form carries a CSRF token derived
//! from the session, and a POST must come from this origin.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use sha2::{Digest, Sha256};

use super::layout::{Page, escape};
use crate::access::Caller;
use crate::api::Api;
use crate::api::handlers::tokens::Refused;

/// The session cookie's name (the HTTP server's auth middleware reads it).
pub const COOKIE: &str = "nj_session";

/// The caller of a page and the token their session runs on.
#[derive(Debug, Clone)]
pub struct Session {
    /// Who, as the auth middleware established.
    pub caller: Caller,
    /// The cookie's (or bearer header's) token: the CSRF token derives from it.
    pub token: String,
}

impl Session {
    /// The session of a request the middleware authenticated, or none.
    pub fn of(caller: Option<Caller>, headers: &HeaderMap) -> Option<Session> {
        let caller = caller?;
        // A caller named by a trusted proxy has no token: its forms rest on
        // the origin check alone (their CSRF token is not secret).
        let token = cookie(headers, COOKIE)
            .or_else(|| bearer(headers))
            .unwrap_or_else(|| format!("proxy:{}", caller.uid));
        Some(Session { caller, token })
    }

    /// The CSRF token of this session.
    pub fn csrf(&self) -> String {
        csrf_for(&self.token)
    }

    /// The hidden form field carrying the CSRF token.
    pub fn csrf_field(&self) -> String {
        format!(
            "<input type=\"hidden\" name=\"csrf\" value=\"{}\">",
            self.csrf()
        )
    }
}

/// Hex SHA-256 of `"csrf:" + token`: a page can hold it; it reveals nothing of the token.
pub fn csrf_for(token: &str) -> String {
    let mut h = Sha256::new();
    h.update(b"csrf:");
    h.update(token.as_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Compares two strings in time independent of where they differ.
pub fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// The value of cookie `name`, if the request has it.
pub fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

fn bearer(headers: &HeaderMap) -> Option<String> {
    let v = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    v.strip_prefix("Bearer ").map(|t| t.trim().to_string())
}

/// Whether a state-changing request comes from this dashboard's own pages:
/// `Sec-Fetch-Site` (when sent) is same-origin, and `Origin` (when sent)
/// names the host the request was sent to.
pub fn same_origin(headers: &HeaderMap) -> bool {
    let get = |h: header::HeaderName| headers.get(h).and_then(|v| v.to_str().ok());
    if let Some(site) = get(header::HeaderName::from_static("sec-fetch-site"))
        && site != "same-origin"
        && site != "none"
    {
        return false;
    }
    match get(header::ORIGIN) {
        None => true,
        Some(origin) => {
            let host = get(header::HOST).unwrap_or("");
            !host.is_empty()
                && (origin == format!("http://{host}") || origin == format!("https://{host}"))
        }
    }
}

/// The fields of an `application/x-www-form-urlencoded` body.
pub fn form(body: &str) -> Vec<(String, String)> {
    body.split('&')
        .filter(|kv| !kv.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (decode(k), decode(v))
        })
        .collect()
}

/// The first value of field `name`.
pub fn field<'a>(fields: &'a [(String, String)], name: &str) -> Option<&'a str> {
    fields
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => match (hex(b[i + 1]), hex(b[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push(h << 4 | l);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `GET /login`: the form.
pub async fn login_form() -> Response {
    login_page(StatusCode::OK, None)
}

fn login_page(status: StatusCode, error: Option<&str>) -> Response {
    let err = error
        .map(|e| format!("<p class=\"error\" id=\"login-error\">{}</p>", escape(e)))
        .unwrap_or_default();
    let body = format!(
        "{err}<form class=\"login\" method=\"post\" action=\"/login\">\
         <label for=\"token\">Token</label>\
         <input id=\"token\" name=\"token\" type=\"password\" autocomplete=\"off\" required autofocus>\
         <button type=\"submit\">Log in</button></form>\
         <p class=\"meta\">Make a token on the machine with <code>nightjar token create</code>; \
         it logs you in as the user who made it.</p>"
    );
    let mut r = Page::new("Log in", "", body).render(None, false);
    *r.status_mut() = status;
    r
}

/// `POST /login`: a valid token becomes the session cookie; a wrong one
/// shows the form again with the error.
pub async fn login(State(d): State<Api>, headers: HeaderMap, body: String) -> Response {
    if !same_origin(&headers) {
        return super::layout::error(StatusCode::FORBIDDEN, "cross-site login refused");
    }
    let fields = form(&body);
    let token = field(&fields, "token").unwrap_or("").trim().to_string();
    // `lookup` accepts only `nj_` and hex digits: nothing that could break the cookie.
    let checked = {
        let (d, token) = (d.clone(), token.clone());
        tokio::task::spawn_blocking(move || verify(&d, &token))
            .await
            .unwrap_or_else(|e| {
                Err(Refused::Unchecked(format!(
                    "the token check did not finish: {e}"
                )))
            })
    };
    match checked {
        Ok(_) => {}
        // The store could not say: the daemon's failure, not a wrong token.
        Err(Refused::Unchecked(why)) => {
            return super::layout::error(StatusCode::INTERNAL_SERVER_ERROR, &why);
        }
        Err(Refused::Invalid(_)) => {
            return login_page(
                StatusCode::UNAUTHORIZED,
                Some("that token is not valid (revoked, mistyped, or from another daemon)"),
            );
        }
    }
    (
        [(
            header::SET_COOKIE,
            format!("{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/"),
        )],
        Redirect::to("/"),
    )
        .into_response()
}

/// `GET /logout`: a button that posts the logout (a GET changes nothing,
/// so no other site can log a user out with a link or an image).
pub async fn logout_form() -> Response {
    let body = "<form class=\"login\" method=\"post\" action=\"/logout\">\
                <button type=\"submit\" id=\"logout\">Log out</button></form>"
        .to_string();
    Page::new("Log out", "/logout", body).render(None, false)
}

/// `POST /logout`: from this origin only, the cookie is dropped.
pub async fn logout(headers: HeaderMap) -> Response {
    if !same_origin(&headers) {
        return forbidden("cross-site logout refused");
    }
    (
        [(
            header::SET_COOKIE,
            format!("{COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0"),
        )],
        Redirect::to("/login"),
    )
        .into_response()
}

/// The caller a token stands for (the HTTP server's token lookup), or why
/// it is refused.
pub fn verify(d: &Api, token: &str) -> Result<Caller, Refused> {
    let uid = d.token_owner(token)?;
    d.access()
        .caller(uid)
        .map_err(|e| Refused::Invalid(e.message))
}

/// Where a page without a session sends the browser.
pub fn to_login() -> Response {
    Redirect::to("/login").into_response()
}

/// A refusal page (for forms that fail the origin or CSRF check).
pub fn forbidden(why: &str) -> Response {
    super::layout::error(StatusCode::FORBIDDEN, why)
}

#[cfg(test)]
#[path = "auth_tests.rs"]
mod tests;
