//! Outbound HTTP for notifiers, brokered by the host.
//!
//! A notifier has no network of its own: [`send`] hands a [`Request`] to the
//! host (the `http` import of world `notifier`), which sends it only to the
//! hosts on the plugin's allow-list in the daemon config, over https (plain
//! http only to loopback), follows no redirect to another host, and bounds
//! the wait and the answer (64 KiB of body). The plugin just calls it; a
//! refused request comes back as [`HttpError::Denied`] saying why.
//!
//! ```no_run
//! use nightjar_sdk::{DeliveryError, http};
//!
//! fn post(url: &str, body: String) -> Result<(), DeliveryError> {
//!     let response = http::post_json(url, [("x-team", "vision")], body)?;
//!     response.check()
//! }
//! ```
//!
//! Natively (in unit tests) there is no host: [`send`] asks the
//! [`testing::HttpMock`](crate::testing::HttpMock) installed on the calling
//! thread, and without one answers [`HttpError::Unreachable`].

use std::borrow::Cow;
use std::fmt;

use crate::DeliveryError;

/// How many bytes of a response's body an error message quotes.
pub const QUOTED_BODY_BYTES: usize = 200;

/// A request for the host to send.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Request {
    /// `GET`, `POST`, `PUT` or `DELETE`.
    pub method: String,
    /// Absolute `https://` (or `http://` to loopback) URL.
    pub url: String,
    /// Header names and values, in order (a name may repeat).
    pub headers: Vec<(String, String)>,
    /// The body (empty for none).
    pub body: Vec<u8>,
}

impl Request {
    /// A request of `method` to `url`, with no header and no body.
    pub fn new(method: impl Into<String>, url: impl Into<String>) -> Request {
        Request {
            method: method.into(),
            url: url.into(),
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// Adds a header.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Request {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets the body.
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Request {
        self.body = body.into();
        self
    }

    /// The value of the first header called `name` (ASCII case ignored).
    pub fn header_value(&self, name: &str) -> Option<&str> {
        find_header(&self.headers, name)
    }

    /// The body as text (invalid UTF-8 replaced), for tests and logs.
    pub fn text(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.body)
    }
}

/// The host's answer to a [`Request`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Response {
    /// The HTTP status code.
    pub status: u16,
    /// Header names and values as the server sent them.
    pub headers: Vec<(String, String)>,
    /// At most the host's cap (64 KiB); the rest is dropped.
    pub body: Vec<u8>,
}

impl Response {
    /// A response of `status` with `body` and no header (for tests).
    pub fn new(status: u16, body: impl Into<Vec<u8>>) -> Response {
        Response {
            status,
            headers: Vec::new(),
            body: body.into(),
        }
    }

    /// Whether the status is 2xx.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The value of the first header called `name` (ASCII case ignored).
    pub fn header(&self, name: &str) -> Option<&str> {
        find_header(&self.headers, name)
    }

    /// The body as text (invalid UTF-8 replaced).
    pub fn text(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.body)
    }

    /// The first [`QUOTED_BODY_BYTES`] bytes of the body as text (cut at a
    /// character boundary, invalid UTF-8 replaced), for error messages.
    pub fn quoted_body(&self) -> String {
        let text = self.text();
        let end = floor_char_boundary(&text, QUOTED_BODY_BYTES);
        text[..end].trim().to_string()
    }

    /// What the status says about a delivery, for a notifier whose server
    /// answers in HTTP terms: `Ok` for 2xx; [`DeliveryError::Transient`] for
    /// 408 (request timeout), 429 (too many requests) and 5xx; and
    /// [`DeliveryError::Permanent`] for everything else (other 4xx, and 1xx
    /// or 3xx, which mean a redirect the host did not follow). The message
    /// names the status and quotes the start of the body.
    pub fn check(&self) -> Result<(), DeliveryError> {
        if self.is_success() {
            return Ok(());
        }
        let message = self.describe();
        if matches!(self.status, 408 | 429 | 500..=599) {
            Err(DeliveryError::Transient(message))
        } else {
            Err(DeliveryError::Permanent(message))
        }
    }

    /// `HTTP 404: <the start of the body>`.
    pub fn describe(&self) -> String {
        let quoted = self.quoted_body();
        if quoted.is_empty() {
            format!("HTTP {}", self.status)
        } else {
            format!("HTTP {}: {quoted}", self.status)
        }
    }
}

/// Why no answer came.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HttpError {
    /// The host refused the request (not allow-listed, not https, a private
    /// address, a redirect to another host); the text says which.
    Denied(String),
    /// No answer within the host's timeout.
    Timeout,
    /// Could not connect or the connection broke.
    Unreachable(String),
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HttpError::Denied(why) => write!(f, "the host refused the request: {why}"),
            HttpError::Timeout => f.write_str("no answer within the host's timeout"),
            HttpError::Unreachable(why) => write!(f, "unreachable: {why}"),
        }
    }
}

impl std::error::Error for HttpError {}

/// A refusal will be refused again (fix the allow-list or the URL): permanent.
/// A timeout or a broken connection may pass: transient.
impl From<HttpError> for DeliveryError {
    fn from(e: HttpError) -> DeliveryError {
        match e {
            HttpError::Denied(_) => DeliveryError::Permanent(e.to_string()),
            HttpError::Timeout | HttpError::Unreachable(_) => {
                DeliveryError::Transient(e.to_string())
            }
        }
    }
}

/// Sends `request` through the host and waits for the answer (bounded by
/// the host's timeout). Natively, the calling thread's
/// [`HttpMock`](crate::testing::HttpMock) answers.
pub fn send(request: Request) -> Result<Response, HttpError> {
    #[cfg(target_arch = "wasm32")]
    {
        use crate::notifier_bindings::nightjar::plugin::http as abi;
        let answer = abi::send(&abi::Request {
            method: request.method,
            url: request.url,
            headers: request.headers,
            body: request.body,
        });
        match answer {
            Ok(r) => Ok(Response {
                status: r.status,
                headers: r.headers,
                body: r.body,
            }),
            Err(abi::HttpError::Denied(why)) => Err(HttpError::Denied(why)),
            Err(abi::HttpError::Timeout) => Err(HttpError::Timeout),
            Err(abi::HttpError::Unreachable(why)) => Err(HttpError::Unreachable(why)),
        }
    }
    #[cfg(not(target_arch = "wasm32"))]
    crate::testing::http::answer(request)
}

/// POSTs `body` (JSON text the caller serialised) to `url` with
/// `content-type: application/json` (unless `headers` sets one) and the
/// given headers, in order.
pub fn post_json<K, V>(
    url: &str,
    headers: impl IntoIterator<Item = (K, V)>,
    body: impl Into<Vec<u8>>,
) -> Result<Response, HttpError>
where
    K: Into<String>,
    V: Into<String>,
{
    let mut request = Request::new("POST", url).body(body);
    request.headers = headers
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
    if request.header_value("content-type").is_none() {
        request
            .headers
            .insert(0, ("content-type".into(), "application/json".into()));
    }
    send(request)
}

fn find_header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// The largest index at most `max` that is a character boundary of `text`.
pub(crate) fn floor_char_boundary(text: &str, max: usize) -> usize {
    if max >= text.len() {
        return text.len();
    }
    let mut i = max;
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests;
