//! A small HTTP/1.1 client over a raw `TcpStream` for the HTTP API's tests:
//! requests with `Connection: close`, a source address of our choice (the
//! trusted-proxy test), and event streams read as they come.

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness::Nj;

/// The address the daemon's HTTP server bound (`<state>/http.addr`).
pub fn addr(nj: &Nj) -> SocketAddr {
    let file = nj.state.join("http.addr");
    let t0 = Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(&file)
            && let Ok(a) = text.trim().parse()
        {
            return a;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "no {}",
            file.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A connection to `to` from the source address `from` (any port).
pub fn connect_from(from: IpAddr, to: SocketAddr) -> TcpStream {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let s = tokio::net::TcpSocket::new_v4().unwrap();
        s.bind(SocketAddr::new(from, 0)).unwrap();
        let s = s.connect(to).await.unwrap().into_std().unwrap();
        s.set_nonblocking(false).unwrap();
        s
    })
}

/// One response: status, headers (lower-case names) and body.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub head: String,
    pub body: Vec<u8>,
}

impl Resp {
    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Writes a request on `s` (`headers` as `Name: value` lines).
pub fn send(s: &mut TcpStream, method: &str, path: &str, headers: &[String], body: &[u8]) {
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: nightjar\r\nConnection: close\r\n");
    for h in headers {
        req.push_str(h);
        req.push_str("\r\n");
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    s.write_all(req.as_bytes()).unwrap();
    s.write_all(body).unwrap();
}

/// Reads a whole `Connection: close` response (bodies with a length).
pub fn read_resp(s: &mut TcpStream) -> Resp {
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    parse_resp(&raw)
}

/// [`read_resp`] for a server that may not be ready yet (a poll): `None`
/// when the connection fails or ends before a whole header.
pub fn try_read_resp(s: &mut TcpStream) -> Option<Resp> {
    s.set_read_timeout(Some(Duration::from_secs(60))).ok()?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).ok()?;
    let text = String::from_utf8_lossy(&raw);
    text.find("\r\n\r\n").filter(|&end| end >= 12)?;
    Some(parse_resp(&raw))
}

fn parse_resp(raw: &[u8]) -> Resp {
    let text = String::from_utf8_lossy(raw);
    let end = text
        .find("\r\n\r\n")
        .unwrap_or_else(|| panic!("no header end in {text}"));
    let head = text[..end].to_ascii_lowercase();
    let status = head[9..12].parse().unwrap();
    Resp {
        status,
        head,
        body: raw[end + 4..].to_vec(),
    }
}

/// A request from 127.0.0.1 with an optional bearer token.
pub fn call(a: SocketAddr, method: &str, path: &str, token: Option<&str>, body: &str) -> Resp {
    let mut headers: Vec<String> = token
        .map(|t| format!("Authorization: Bearer {t}"))
        .into_iter()
        .collect();
    if !body.is_empty() {
        headers.push("Content-Type: application/json".into());
    }
    call_with(a, method, path, &headers, body)
}

/// A request with the given header lines.
pub fn call_with(a: SocketAddr, method: &str, path: &str, headers: &[String], body: &str) -> Resp {
    let mut s = TcpStream::connect(a).unwrap();
    send(&mut s, method, path, headers, body.as_bytes());
    read_resp(&mut s)
}

/// The status of a plain GET from 127.0.0.1, or `None` when the connection
/// fails or is reset (a server at its connection limit answers 429 without
/// reading the request, and the unread request makes the close a reset).
pub fn try_get_status(a: SocketAddr, path: &str) -> Option<u16> {
    let mut s = TcpStream::connect(a).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let req = format!("GET {path} HTTP/1.1\r\nHost: nightjar\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).ok()?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).ok()?;
    String::from_utf8_lossy(raw.get(9..12)?).parse().ok()
}

/// Opens an event stream; returns the connection after the response head.
pub fn open_stream(a: SocketAddr, path: &str, token: &str) -> TcpStream {
    let mut s = TcpStream::connect(a).unwrap();
    send(
        &mut s,
        "GET",
        path,
        &[format!("Authorization: Bearer {token}")],
        b"",
    );
    s
}

/// Reads from a stream until `text` has arrived (or the stream ends, or
/// `limit` passes); returns everything read.
pub fn read_until(s: &mut TcpStream, seen: &mut String, text: &str, limit: Duration) -> bool {
    let t0 = Instant::now();
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut buf = [0u8; 4096];
    while !seen.contains(text) {
        if t0.elapsed() > limit {
            return false;
        }
        match s.read(&mut buf) {
            Ok(0) => return seen.contains(text),
            Ok(n) => seen.push_str(&String::from_utf8_lossy(&buf[..n])),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => panic!("stream read: {e}"),
        }
    }
    true
}
