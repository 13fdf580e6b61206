//! The `http` a notifier may call, brokered by the host: only hosts on the
//! notifier's allow-list, `https` except to loopback, no private address
//! unless the allow-list names that address itself (so a public name that
//! resolves to 10.x is refused: no DNS rebinding into the lab's network),
//! the resolved address pinned for the request, no redirect to another
//! host, no proxy, a timeout and a response-size cap.

use std::io::Read;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::time::Duration;

/// Bytes of a response body kept.
pub const MAX_BODY: usize = 64 << 10;

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
    allow: Vec<String>,
    timeout: Duration,
    secrets: Vec<String>,
    journal: Option<std::sync::Arc<std::sync::Mutex<Vec<String>>>>,
}

fn private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v) => {
            v.is_private()
                || v.is_loopback()
                || v.is_link_local()
                || v.is_unspecified()
                || v.is_broadcast()
                || v.octets()[0] == 100 && (v.octets()[1] & 0xc0) == 64 // 100.64/10
        }
        IpAddr::V6(v) => {
            v.is_loopback()
                || v.is_unspecified()
                || (v.segments()[0] & 0xfe00) == 0xfc00 // unique local
                || (v.segments()[0] & 0xffc0) == 0xfe80 // link local
                || v.to_ipv4_mapped().is_some_and(|m| private(IpAddr::V4(m)))
        }
    }
}

impl HttpBroker {
    /// A broker for hosts `allow` (`name` or `name:port`), each request
    /// bounded by `timeout`; `secrets` are cut out of every error text.
    pub fn new(allow: Vec<String>, timeout: Duration, secrets: Vec<String>) -> HttpBroker {
        HttpBroker {
            allow: allow.into_iter().map(|a| a.to_ascii_lowercase()).collect(),
            timeout,
            secrets,
            journal: None,
        }
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
            j.lock().unwrap_or_else(|p| p.into_inner()).push(line);
        }
    }

    fn redact(&self, text: &str) -> String {
        crate::notify::secrets::redact(text, &self.secrets)
    }

    /// Checks `url` against the rules; the address to pin it to.
    fn admit(&self, url: &reqwest::Url) -> Result<(String, SocketAddr), HttpError> {
        let deny = |m: String| Err(HttpError::Denied(m));
        let Some(host) = url
            .host_str()
            .map(|h| h.trim_matches(['[', ']']).to_ascii_lowercase())
        else {
            return deny("the URL has no host".into());
        };
        let port = url.port_or_known_default().unwrap_or(443);
        let listed = self
            .allow
            .iter()
            .any(|a| *a == host || *a == format!("{host}:{port}"));
        if !listed {
            return deny(format!(
                "{host}:{port} is not on this notifier's allow-list (`allow` in its [notifier.NAME] table)"
            ));
        }
        let literal: Option<IpAddr> = host.parse().ok();
        let loopback_name = host == "localhost" || literal.is_some_and(|ip| ip.is_loopback());
        match url.scheme() {
            "https" => {}
            "http" if loopback_name => {}
            s => {
                return deny(format!(
                    "{s}:// to {host}: only https (http only to loopback)"
                ));
            }
        }
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
        let same_host = host.clone();
        let client = reqwest::blocking::Client::builder()
            .timeout(self.timeout)
            .connect_timeout(self.timeout)
            .no_proxy()
            .resolve(&host, addr)
            .redirect(reqwest::redirect::Policy::custom(move |a| {
                if a.previous().len() >= 3 {
                    a.error("more than 3 redirects")
                } else if a.url().host_str().map(str::to_ascii_lowercase) == Some(same_host.clone())
                {
                    a.follow()
                } else {
                    a.error("a redirect to another host")
                }
            }))
            .build()
            .map_err(|e| HttpError::Unreachable(self.redact(&e.to_string())))?;
        let mut b = client.request(method, url).body(req.body.clone());
        for (k, v) in &req.headers {
            b = b.header(k.as_str(), v.as_str());
        }
        let resp = b.send().map_err(|e| {
            if e.is_timeout() {
                HttpError::Timeout
            } else if e.is_redirect() {
                HttpError::Denied(self.redact(&format!("{e}")))
            } else {
                HttpError::Unreachable(self.redact(&format!("{e}")))
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
        resp.take(MAX_BODY as u64)
            .read_to_end(&mut body)
            .map_err(|e| HttpError::Unreachable(self.redact(&e.to_string())))?;
        Ok(Response {
            status,
            headers,
            body,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn broker(allow: &[&str]) -> HttpBroker {
        HttpBroker::new(
            allow.iter().map(|s| s.to_string()).collect(),
            Duration::from_secs(2),
            vec!["s3cret".into()],
        )
    }

    fn denied(b: &HttpBroker, url: &str) -> String {
        match b.send(&Request {
            method: "POST".into(),
            url: url.into(),
            headers: vec![],
            body: vec![],
        }) {
            Err(HttpError::Denied(m)) => m,
            other => panic!("{url}: {other:?}"),
        }
    }

    #[test]
    fn only_allow_listed_hosts_https_and_public_addresses_are_reached() {
        let b = broker(&["127.0.0.1:9", "localhost", "example.com"]);
        assert!(
            denied(&b, "https://other.example/x").contains("not on this notifier's allow-list")
        );
        assert!(denied(&b, "http://example.com/x").contains("only https"));
        assert!(denied(&b, "ftp://example.com/x").contains("only https"));
        assert!(
            denied(&b, "https://127.0.0.1:10/").contains("allow-list"),
            "the port counts"
        );
        assert!(denied(&b, "not a url").contains("not a URL"));
        // Loopback named itself: allowed (and nothing listens on port 9).
        let r = b.send(&Request {
            method: "POST".into(),
            url: "http://127.0.0.1:9/hook?key=s3cret".into(),
            headers: vec![],
            body: vec![],
        });
        match r {
            Err(HttpError::Unreachable(m)) => assert!(!m.contains("s3cret"), "redacted: {m}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn private_ranges_are_private() {
        for ip in [
            "10.1.2.3",
            "192.168.0.1",
            "172.16.5.5",
            "127.0.0.1",
            "169.254.1.1",
            "100.64.0.1",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:10.0.0.1",
        ] {
            assert!(private(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["8.8.8.8", "1.1.1.1", "2606:4700::1111"] {
            assert!(!private(ip.parse().unwrap()), "{ip}");
        }
    }
}
