//! A notifier's allow-list: entries `name`, `name:port`, an address, or
//! `[v6]:port`; which URLs it admits (the first request and every redirect
//! alike: listed host and port, `https` except to loopback).

use std::net::{IpAddr, Ipv6Addr};

/// One entry: a lowercase host (an IPv6 address without brackets) and, when
/// named, its port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allowed {
    host: String,
    port: Option<u16>,
}

const FORMS: &str = "write a host name or address, optionally with `:port` \
     (`hooks.example.com`, `10.0.0.5:8443`, `[::1]:8080`): no scheme, path or wildcard";

/// Parses entry `e` of an allow-list.
pub fn parse(e: &str) -> Result<Allowed, String> {
    let e = e.trim().to_ascii_lowercase();
    let bad = |why: &str| Err(format!("`{e}` {why}; {FORMS}"));
    if e.is_empty() {
        return bad("is empty");
    }
    if let Some(c) = e
        .chars()
        .find(|c| "/*?#@ \t\\".contains(*c) || c.is_control())
    {
        return bad(&format!("has `{c}`"));
    }
    let port = |p: &str| match p.parse::<u16>() {
        Ok(p) if p > 0 => Ok(Some(p)),
        _ => Err(format!("`{e}`: `{p}` is not a port (1-65535); {FORMS}")),
    };
    let (host, port) = if let Some(rest) = e.strip_prefix('[') {
        let Some((h, after)) = rest.split_once(']') else {
            return bad("opens `[` without `]`");
        };
        if h.parse::<Ipv6Addr>().is_err() {
            return bad("has no IPv6 address between `[` and `]`");
        }
        let p = match after.strip_prefix(':') {
            Some(p) => port(p)?,
            None if after.is_empty() => None,
            None => return bad("has something after `]` that is not `:port`"),
        };
        (h.to_string(), p)
    } else if e.parse::<Ipv6Addr>().is_ok() {
        (e.clone(), None)
    } else if let Some((h, p)) = e.rsplit_once(':') {
        if h.contains(':') {
            return bad("is an IPv6 address with a port but no brackets");
        }
        (h.to_string(), port(p)?)
    } else {
        (e.clone(), None)
    };
    if host.is_empty() {
        return bad("has no host");
    }
    Ok(Allowed { host, port })
}

/// Whether `host` (lowercase, no brackets) names loopback itself.
pub fn loopback_name(host: &str) -> bool {
    host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The host of `url`, lowercase and without brackets, and its port.
pub fn host_port(url: &reqwest::Url) -> Option<(String, u16)> {
    let host = url
        .host_str()?
        .trim_matches(['[', ']'])
        .to_ascii_lowercase();
    Some((host, url.port_or_known_default().unwrap_or(443)))
}

/// Whether `url` may be requested under `allow`: its host and port listed,
/// `https` (or `http` to a loopback name). `Err` says why not.
pub fn admits(allow: &[Allowed], url: &reqwest::Url) -> Result<(String, u16), String> {
    let Some((host, port)) = host_port(url) else {
        return Err("the URL has no host".into());
    };
    if !allow
        .iter()
        .any(|a| a.host == host && a.port.is_none_or(|p| p == port))
    {
        return Err(format!(
            "{host}:{port} is not on this notifier's allow-list (`allow` in its [notifier.NAME] table)"
        ));
    }
    match url.scheme() {
        "https" => {}
        "http" if loopback_name(&host) => {}
        s => {
            return Err(format!(
                "{s}:// to {host}: only https (http only to loopback)"
            ));
        }
    }
    Ok((host, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(u: &str) -> reqwest::Url {
        reqwest::Url::parse(u).unwrap()
    }

    #[test]
    fn entries_parse_in_every_form_and_bad_ones_say_what_to_write() {
        let a = |h: &str, p: Option<u16>| Allowed {
            host: h.into(),
            port: p,
        };
        assert_eq!(
            parse("Hooks.Example.com").unwrap(),
            a("hooks.example.com", None)
        );
        assert_eq!(parse("10.0.0.5:8443").unwrap(), a("10.0.0.5", Some(8443)));
        assert_eq!(parse("[::1]:8080").unwrap(), a("::1", Some(8080)));
        assert_eq!(parse("[::1]").unwrap(), a("::1", None));
        assert_eq!(parse("fd00::1").unwrap(), a("fd00::1", None));
        for bad in [
            "https://example.com",
            "*.example.com",
            "example.com/hook",
            "example.com:0",
            "example.com:http",
            "[::1:8080",
            "fd00::1:99999",
            "",
            "user@example.com",
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains("optionally with `:port`"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_url_is_admitted_only_on_a_listed_host_and_port_over_https_or_loopback_http() {
        let allow: Vec<Allowed> = ["example.com:443", "[::1]:8080", "localhost"]
            .iter()
            .map(|e| parse(e).unwrap())
            .collect();
        assert!(admits(&allow, &url("https://EXAMPLE.com/x")).is_ok());
        assert!(
            admits(&allow, &url("https://example.com:8443/x")).is_err(),
            "port"
        );
        assert!(
            admits(&allow, &url("http://example.com:443/x")).is_err(),
            "http"
        );
        assert!(
            admits(&allow, &url("http://[::1]:8080/x")).is_ok(),
            "v6 literal"
        );
        assert!(admits(&allow, &url("http://localhost:1234/")).is_ok());
        assert!(
            admits(&allow, &url("https://localhost./")).is_err(),
            "trailing dot"
        );
        assert!(admits(&allow, &url("https://example.com.evil/")).is_err());
    }
}
