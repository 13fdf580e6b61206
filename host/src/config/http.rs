//! `[http]`: the HTTP API and dashboard, off unless `listen` is set.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

use super::humantime_serde_compat;

/// Settings of the HTTP server.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HttpConfig {
    /// `host:port` to listen on (port 0: any free one, written to
    /// `<state_dir>/http.addr`); empty: no HTTP server.
    pub listen: String,
    /// Allow a `listen` address other than loopback (then put TLS in front).
    pub allow_remote: bool,
    /// A header naming the local user, set by a reverse proxy that
    /// authenticated them (`X-Remote-User`); empty: not trusted.
    pub trusted_proxy_header: String,
    /// The peers whose `trusted_proxy_header` is believed (IP addresses).
    pub trusted_proxies: Vec<String>,
    /// Most HTTP connections open at once; more are answered 503 and closed.
    pub max_connections: usize,
    /// Most of those from one client; more are answered 429. A client is
    /// its address, or for a local one (a loopback address or one of this
    /// host's) the local user owning its socket, so local users do not
    /// share one count.
    pub max_connections_per_peer: usize,
    /// Most event and log streams open at once; more are answered 503.
    pub max_streams: usize,
    /// Most event and log streams one user has open at once; more are
    /// answered 429 (one token holder cannot take every slot).
    pub max_streams_per_user: usize,
    /// How long a connection may take to send its next request's headers.
    #[serde(with = "humantime_serde_compat")]
    pub idle_timeout: Duration,
    /// Serve Prometheus metrics at `/metrics`.
    pub metrics: bool,
    /// Addresses that may read `/metrics` without a token (besides loopback):
    /// the Prometheus servers that scrape it.
    pub metrics_allow: Vec<String>,
    /// `host:port` of a listener of its own that serves `/metrics` only
    /// (no API, no tokens: loopback and `metrics_allow` alone may read it);
    /// empty: none. Port 0 takes any free one, written to
    /// `<state_dir>/metrics.addr`.
    pub metrics_listen: String,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            listen: String::new(),
            allow_remote: false,
            trusted_proxy_header: String::new(),
            trusted_proxies: Vec::new(),
            max_connections: 256,
            max_connections_per_peer: 64,
            max_streams: 64,
            max_streams_per_user: 16,
            idle_timeout: Duration::from_secs(60),
            metrics: false,
            metrics_allow: Vec::new(),
            metrics_listen: String::new(),
        }
    }
}

impl HttpConfig {
    /// The address to listen on, or `None` when the server is off.
    pub fn addr(&self) -> Result<Option<SocketAddr>> {
        if self.listen.trim().is_empty() {
            return Ok(None);
        }
        match self.listen.trim().parse::<SocketAddr>() {
            Ok(a) => Ok(Some(a)),
            Err(_) => bail!(
                "key `http.listen`: `{}` is not an address and port (for example `127.0.0.1:8421`)",
                self.listen.escape_debug()
            ),
        }
    }

    /// The metrics' own listener's address, or `None` when it has none.
    pub fn metrics_addr(&self) -> Result<Option<SocketAddr>> {
        if self.metrics_listen.trim().is_empty() {
            return Ok(None);
        }
        match self.metrics_listen.trim().parse::<SocketAddr>() {
            Ok(a) => Ok(Some(a)),
            Err(_) => bail!(
                "key `http.metrics_listen`: `{}` is not an address and port (for example `0.0.0.0:9464`)",
                self.metrics_listen.escape_debug()
            ),
        }
    }

    /// The trusted proxies' addresses (checked at load).
    pub fn proxies(&self) -> Vec<IpAddr> {
        self.trusted_proxies
            .iter()
            .filter_map(|p| p.parse().ok())
            .collect()
    }

    /// Checks the keys; errors name the key.
    pub fn validate(&self) -> Result<()> {
        if let Some(a) = self.addr()?
            && !a.ip().is_loopback()
            && !self.allow_remote
        {
            bail!(
                "key `http.listen`: `{a}` is not a loopback address; the HTTP API sends tokens in the clear, so set `allow_remote = true` only with TLS in front (a reverse proxy), or listen on 127.0.0.1"
            );
        }
        if let Some(p) = self
            .trusted_proxies
            .iter()
            .find(|p| p.parse::<IpAddr>().is_err())
        {
            bail!(
                "key `http.trusted_proxies`: `{}` is not an IP address",
                p.escape_debug()
            );
        }
        if self.trusted_proxy_header.is_empty() != self.trusted_proxies.is_empty() {
            bail!(
                "keys `http.trusted_proxy_header` and `http.trusted_proxies` go together: the header is believed only from the proxies listed"
            );
        }
        if !self.trusted_proxy_header.is_empty()
            && axum::http::HeaderName::from_bytes(self.trusted_proxy_header.as_bytes()).is_err()
        {
            bail!(
                "key `http.trusted_proxy_header`: `{}` is not a header name",
                self.trusted_proxy_header.escape_debug()
            );
        }
        if self.max_connections == 0
            || self.max_connections_per_peer == 0
            || self.max_streams == 0
            || self.max_streams_per_user == 0
        {
            bail!(
                "keys `http.max_connections`, `http.max_connections_per_peer`, `http.max_streams` and `http.max_streams_per_user` must be at least 1"
            );
        }
        if let Some(a) = self
            .metrics_allow
            .iter()
            .find(|a| a.parse::<IpAddr>().is_err())
        {
            bail!(
                "key `http.metrics_allow`: `{}` is not an IP address (list the Prometheus server's address, for example \"10.0.0.5\")",
                a.escape_debug()
            );
        }
        if !self.metrics && (!self.metrics_allow.is_empty() || !self.metrics_listen.is_empty()) {
            bail!(
                "keys `http.metrics_allow` and `http.metrics_listen` need `http.metrics`: set `metrics = true` to serve /metrics"
            );
        }
        if let Some(a) = self.metrics_addr()?
            && !a.ip().is_loopback()
            && self.metrics_allow.is_empty()
        {
            bail!(
                "key `http.metrics_listen`: `{a}` is not a loopback address, but only loopback may read it: list the Prometheus server's address in `http.metrics_allow`"
            );
        }
        if self.idle_timeout < Duration::from_secs(1) {
            bail!("key `http.idle_timeout` must be at least 1s");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_by_default_loopback_only_unless_allowed_and_proxies_go_with_their_header() {
        let mut c = HttpConfig::default();
        assert_eq!(c.addr().unwrap(), None);
        c.listen = "127.0.0.1:0".into();
        c.validate().unwrap();
        c.listen = "0.0.0.0:8421".into();
        assert!(
            c.validate()
                .unwrap_err()
                .to_string()
                .contains("allow_remote")
        );
        c.allow_remote = true;
        c.validate().unwrap();
        c.listen = "localhost:80".into();
        assert!(
            c.validate()
                .unwrap_err()
                .to_string()
                .contains("http.listen")
        );
        c.listen = "[::1]:8421".into();
        c.trusted_proxy_header = "X-Remote-User".into();
        assert!(
            c.validate()
                .unwrap_err()
                .to_string()
                .contains("go together")
        );
        c.trusted_proxies = vec!["127.0.0.1".into()];
        c.validate().unwrap();
        c.trusted_proxies = vec!["proxy.lab".into()];
        assert!(c.validate().unwrap_err().to_string().contains("not an IP"));
    }

    #[test]
    fn metrics_allow_takes_addresses_only_and_only_with_metrics_on() {
        let mut c = HttpConfig {
            listen: "127.0.0.1:0".into(),
            metrics_allow: vec!["10.0.0.5".into()],
            ..HttpConfig::default()
        };
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("need `http.metrics`"), "{e}");
        c.metrics = true;
        c.validate().unwrap();
        c.metrics_listen = "0.0.0.0:9464".into();
        c.validate().unwrap();
        c.metrics_allow.clear();
        let e = c.validate().unwrap_err().to_string();
        assert!(
            e.contains("metrics_allow"),
            "a remote listener only loopback may read: {e}"
        );
        c.metrics_listen = "127.0.0.1:0".into();
        c.validate().unwrap();
        c.metrics_listen = "metrics.lab:9464".into();
        assert!(
            c.validate()
                .unwrap_err()
                .to_string()
                .contains("http.metrics_listen")
        );
        c.metrics_listen.clear();
        c.metrics_allow = vec!["10.0.0.5".into()];
        c.metrics_allow.push("prometheus.lab".into());
        let e = c.validate().unwrap_err().to_string();
        assert!(
            e.contains("http.metrics_allow") && e.contains("prometheus.lab"),
            "{e}"
        );
    }
}
