//! The `http` a notifier may call, brokered by the host: only hosts on the
//! notifier's allow-list, `https` except to loopback, no private address
//! unless the allow-list names that address itself (so a public name that
//! resolves to 10.x is refused: no DNS rebinding into the lab's network),
//! the resolved address pinned for the request, no redirect to another
//! host, no proxy, a timeout and a response-size cap.

use std::io::Read;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::allow;
use crate::sync::LockUnpoisoned;

/// Bytes of a response body kept.
pub const MAX_BODY: usize = 64 << 10;

/// Clients kept for reuse (one per notifier host, address and allow-list).
pub const MAX_CLIENTS: usize = 32;

/// A request, as the plugin asked.
#[derive(Debug, Clone)]
pub struct Request {
    /// `GET`, `POST`, `PUT` or `DELETE`.
    pub method: String,
    /// The URL.
    pub url: String,
    /// Headers.
    pub headers: Vec<(String, String)>,
    /// Body.
    pub body: Vec<u8>,
}

/// The answer.
#[derive(Debug, Clone)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Headers (values that are not text are left out).
    pub headers: Vec<(String, String)>,
    /// At most [`MAX_BODY`] bytes of the body.
    pub body: Vec<u8>,
}

/// Why there is no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HttpError {
    /// Refused by the broker; the text says why.
    Denied(String),
    /// No answer in time.
    Timeout,
    /// Could not connect, or the connection broke.
    Unreachable(String),
}

/// One notifier's HTTP.
#[derive(Debug, Clone)]
pub struct HttpBroker {
    allow: Vec<allow::Allowed>,
    timeout: Duration,
    until: Option<Instant>,
    secrets: Vec<String>,
    journal: Option<std::sync::Arc<std::sync::Mutex<Vec<String>>>>,
}

fn private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v) => {
            let o = v.octets();
            v.is_private()
                || v.is_loopback()
                || v.is_link_local()
                || v.is_unspecified()
                || v.is_broadcast()
                || v.is_multicast()
                || o[0] == 0 // 0/8: "this network"
                || o[0] == 100 && (o[1] & 0xc0) == 64 // 100.64/10
                || o[0] == 198 && (o[1] & 0xfe) == 18 // 198.18/15
                || o[0] >= 240 // reserved
        }
        IpAddr::V6(v) => {
            let s = v.segments();
            // An IPv4 address inside: mapped or compatible (::a.b.c.d),
            // NAT64 (64:ff9b::/96) or 6to4 (2002::/16).
            let inner = match s {
                [0x64, 0xff9b, 0, 0, 0, 0, ..] => Some(Ipv4Addr::new(
                    (s[6] >> 8) as u8,
                    s[6] as u8,
                    (s[7] >> 8) as u8,
                    s[7] as u8,
                )),
                [0x2002, ..] => Some(Ipv4Addr::new(
                    (s[1] >> 8) as u8,
                    s[1] as u8,
                    (s[2] >> 8) as u8,
                    s[2] as u8,
                )),
                _ => v.to_ipv4(),
            };
            v.is_loopback()
                || v.is_unspecified()
                || v.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00 // unique local
                || (s[0] & 0xffc0) == 0xfe80 // link local
                || (s[0] & 0xffc0) == 0xfec0 // site local (deprecated)
                || inner.is_some_and(|m| private(IpAddr::V4(m)))
        }
    }
}

/// `e` and its causes, as one line.
pub(super) fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        // Some errors (lettre's) write their cause in their own text.
        let c_text = c.to_string();
        if !text.ends_with(&c_text) {
            text = format!("{text}: {c_text}");
        }
        cause = c.source();
    }
    text
}

impl HttpBroker {
    /// A broker for hosts `allow` (`name` or `name:port`), each request
    /// bounded by `timeout`; `secrets` are cut out of every error text.
    pub fn new(allow: Vec<String>, timeout: Duration, secrets: Vec<String>) -> HttpBroker {
        HttpBroker {
            // A bad entry (refused with the config) admits nothing.
            allow: allow.iter().filter_map(|a| allow::parse(a).ok()).collect(),
            timeout,
            until: None,
            secrets,
            journal: None,
        }
    }

    /// Ends every request by `at` (the delivery's deadline) at the latest,
    /// so that no call outlives the delivery by more than one read.
    pub fn until(mut self, at: Instant) -> Self {
        self.until = Some(at);
        self
    }

    /// Keeps a line per exchange (`POST url -> 200: body…`, redacted) in
    /// `journal`: what `notify test` prints.
    pub fn with_journal(mut self, journal: std::sync::Arc<std::sync::Mutex<Vec<String>>>) -> Self {
        self.journal = Some(journal);
        self
    }

    fn note(&self, req: &Request, what: &str) {
        if let Some(j) = &self.journal {
            let line = self.redact(&format!("{} {} -> {what}", req.method, req.url));
            super::note(j, &line);
        }
    }

    /// The secrets this broker cuts out of texts.
    pub fn secrets(&self) -> &[String] {
        &self.secrets
    }

    fn redact(&self, text: &str) -> String {
        crate::secrets::redact(text, &self.secrets)
    }

    /// Checks `url` against the rules; the address to pin it to.
    fn admit(&self, url: &reqwest::Url) -> Result<(String, SocketAddr), HttpError> {
        let deny = |m: String| Err(HttpError::Denied(m));
        let (host, port) = allow::admits(&self.allow, url).map_err(HttpError::Denied)?;
        let literal: Option<IpAddr> = host.parse().ok();
        let addrs: Vec<SocketAddr> = (host.as_str(), port)
            .to_socket_addrs()
            .map_err(|e| HttpError::Unreachable(format!("cannot resolve {host}: {e}")))?
            .collect();
        // A private address only where the allow-list names it itself.
        let named_private = literal.is_some() || host == "localhost";
        let Some(addr) = addrs.iter().find(|a| named_private || !private(a.ip())) else {
            return deny(format!(
                "{host} resolves to a private address ({}); allow-list the address itself to reach it",
                addrs
                    .first()
                    .map(|a| a.ip().to_string())
                    .unwrap_or_default()
            ));
        };
        Ok((host, *addr))
    }

    /// The client for `host` pinned to `addr` under this allow-list: built
    /// once and kept (a blocking client starts a runtime thread of its own,
    /// and keeps its connections open for the next delivery), at most
    /// [`MAX_CLIENTS`] of them.
    fn client(&self, host: &str, addr: SocketAddr) -> Result<reqwest::blocking::Client, HttpError> {
        type Key = (String, SocketAddr, Vec<allow::Allowed>, Duration);
        static CLIENTS: Mutex<Vec<(Key, reqwest::blocking::Client)>> = Mutex::new(Vec::new());
        let key: Key = (host.to_string(), addr, self.allow.clone(), self.timeout);
        let mut clients = CLIENTS.lock_unpoisoned();
        if let Some((_, c)) = clients.iter().find(|(k, _)| *k == key) {
            return Ok(c.clone());
        }
        let (same_host, rules) = (host.to_string(), self.allow.clone());
        let client = reqwest::blocking::Client::builder()
            .connect_timeout(self.timeout)
            .no_proxy()
            .resolve(host, addr)
            .redirect(reqwest::redirect::Policy::custom(move |a| {
                // The same host (pinned to the address checked), and a
                // port and scheme the allow-list admits.
                let fits = allow::admits(&rules, a.url())
                    .and_then(|(h, _)| (h == same_host).then_some(()).ok_or(h));
                if a.previous().len() >= 3 {
                    a.error("more than 3 redirects")
                } else if let Err(why) = fits {
                    a.error(format!("a redirect refused: {why}"))
                } else {
                    a.follow()
                }
            }))
            .build()
            .map_err(|e| HttpError::Unreachable(self.redact(&e.to_string())))?;
        if clients.len() >= MAX_CLIENTS {
            clients.remove(0);
        }
        clients.push((key, client.clone()));
        Ok(client)
    }

    /// Sends `req` under the rules (and notes the exchange in the journal).
    pub fn send(&self, req: &Request) -> Result<Response, HttpError> {
        let r = self.exchange(req);
        match &r {
            Ok(resp) => {
                let body = String::from_utf8_lossy(&resp.body);
                let body: String = body.chars().take(300).collect();
                self.note(req, &format!("{}: {}", resp.status, body.trim()));
            }
            Err(e) => self.note(req, &format!("{e:?}")),
        }
        r
    }

    fn exchange(&self, req: &Request) -> Result<Response, HttpError> {
        static PROVIDER: std::sync::Once = std::sync::Once::new();
        PROVIDER.call_once(|| {
            // Fails only when another provider is installed already: fine.
            let _ = rustls::crypto::ring::default_provider().install_default();
        });
        let url = reqwest::Url::parse(&req.url)
            .map_err(|e| HttpError::Denied(format!("not a URL ({e})")))?;
        let (host, addr) = self.admit(&url)?;
        let method = match req.method.to_ascii_uppercase().as_str() {
            "GET" => reqwest::Method::GET,
            "POST" => reqwest::Method::POST,
            "PUT" => reqwest::Method::PUT,
            "DELETE" => reqwest::Method::DELETE,
            m => {
                return Err(HttpError::Denied(format!(
                    "method {m}: GET, POST, PUT or DELETE"
                )));
            }
        };
        // The whole exchange, body included, within `budget` (reqwest's
        // timeout bounds each read, not their sum: a server dripping a byte
        // at a time would hold the call for hours).
        let started = Instant::now();
        let budget = match self.until {
            Some(at) => self.timeout.min(at.saturating_duration_since(started)),
            None => self.timeout,
        };
        if budget.is_zero() {
            return Err(HttpError::Timeout);
        }
        if let Some((k, _)) = req.headers.iter().find(|(k, _)| !header_allowed(k)) {
            return Err(HttpError::Denied(format!(
                "header `{}` is not one a notifier may set ({HEADERS_ALLOWED}); the host sets Host, Content-Length and the connection's own",
                k.escape_debug()
            )));
        }
        let client = self.client(&host, addr)?;
        let mut b = client
            .request(method, url)
            .timeout(budget)
            .body(req.body.clone());
        for (k, v) in &req.headers {
            b = b.header(k.as_str(), v.as_str());
        }
        let resp = b.send().map_err(|e| {
            if e.is_timeout() {
                HttpError::Timeout
            } else if e.is_redirect() {
                HttpError::Denied(self.redact(&chain(&e)))
            } else {
                HttpError::Unreachable(self.redact(&chain(&e)))
            }
        })?;
        let status = resp.status().as_u16();
        let headers = resp
            .headers()
            .iter()
            .filter_map(|(k, v)| Some((k.to_string(), v.to_str().ok()?.to_string())))
            .take(64)
            .collect();
        let mut body = Vec::new();
        let mut rest = resp.take(MAX_BODY as u64);
        let mut buf = [0u8; 8192];
        loop {
            if started.elapsed() >= budget {
                return Err(HttpError::Timeout);
            }
            match rest.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => body.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) if started.elapsed() >= budget => return Err(HttpError::Timeout),
                Err(e) => return Err(HttpError::Unreachable(self.redact(&e.to_string()))),
            }
        }
        Ok(Response {
            status,
            headers,
            body,
        })
    }
}

/// The header names a notifier may send, as its refusal says.
const HEADERS_ALLOWED: &str = "Accept, Accept-Language, Authorization, Content-Type, User-Agent, Idempotency-Key, and names starting X-, Webhook- or Ce- other than X-Forwarded-*, X-Real-IP, X-Original-*, X-Host and X-HTTP-Method-Override";

/// Whether a notifier may send header `name` (case-insensitive): a fixed
/// allow-list, never one that changes where or how the request goes
/// (`Host`, framing, hop-by-hop, proxy headers).
pub fn header_allowed(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    const EXACT: [&str; 6] = [
        "accept",
        "accept-language",
        "authorization",
        "content-type",
        "user-agent",
        "idempotency-key",
    ];
    const ROUTING: [&str; 5] = [
        "x-forwarded-",
        "x-real-ip",
        "x-original-",
        "x-host",
        "x-http-method-override",
    ];
    if EXACT.contains(&n.as_str()) {
        return true;
    }
    let custom = ["x-", "webhook-", "ce-"].iter().any(|p| n.starts_with(p));
    custom && !ROUTING.iter().any(|p| n.starts_with(p))
}

#[cfg(test)]
#[path = "http_tests.rs"]
mod tests;
