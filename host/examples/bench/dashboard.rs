//! `dashboard [TASKS]`: the dashboard's first page (`GET /`, 100 rows of a
//! queue of TASKS (10,000) waiting tasks) through the daemon's HTTP server
//! with a token, side by side with `nightjar ls` of the same queue on the
//! same daemon. The queue is filled through the socket in batches of 1,000
//! (one slot, held by a long task, so nothing else moves). Times are the
//! wall time of a whole request: connect, server time, transfer.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use nightjar::api;

use super::vs::{nightjar, nightjar_text};
use super::{Daemon, entries, median};

/// One `GET path`, with the session cookie when a token is given: status
/// line and body size.
pub(super) fn get(port: u16, path: &str, token: Option<&str>) -> Result<(String, usize)> {
    let buf = get_raw(port, path, token)?;
    let text = String::from_utf8_lossy(&buf);
    let status = text.lines().next().unwrap_or_default().to_string();
    Ok((status, buf.len()))
}

/// One `GET path`: the whole answer, status line and headers included.
pub(super) fn get_raw(port: u16, path: &str, token: Option<&str>) -> Result<Vec<u8>> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    let cookie = token.map_or_else(String::new, |t| format!("Cookie: nj_session={t}\r\n"));
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{cookie}Connection: close\r\n\r\n"
    )?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf)?;
    Ok(buf)
}

/// A free TCP port on 127.0.0.1.
pub(super) fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

pub fn dashboard(tasks: usize) -> Result<()> {
    println!("== dashboard: GET / (first page of {tasks} waiting tasks) vs `nightjar ls` ==");
    let port = free_port()?;
    let d = Daemon::start(&format!(
        "slots = 1\n[http]\nlisten = \"127.0.0.1:{port}\"\n"
    ))?;
    let mut c = d.client()?;
    let _: Vec<i64> = c.call(api::Submit {
        entries: entries("command = \"sleep 600\"\n")?,
        verify: false,
    })?;
    let one = entries("name = \"bench\"\nproject = \"dash\"\ncommand = [\"true\"]\n")?;
    let t0 = Instant::now();
    let mut left = tasks;
    while left > 0 {
        let k = left.min(1_000);
        let batch = (0..k).flat_map(|_| one.clone()).collect();
        let _: Vec<i64> = c.call(api::Submit {
            entries: batch,
            verify: false,
        })?;
        left -= k;
    }
    println!(
        "  queue filled: {tasks} tasks in {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    let token = nightjar_text(&d, &["token", "create"])?
        .split_whitespace()
        .last()
        .context("`nightjar token create` printed no token")?
        .to_string();
    let (status, bytes) = get(port, "/", Some(&token))?;
    if !status.contains(" 200") {
        bail!("GET / answered {status}");
    }
    let reps = 21;
    let mut page = Vec::with_capacity(reps);
    for _ in 0..reps {
        let s = Instant::now();
        get(port, "/", Some(&token))?;
        page.push(s.elapsed().as_secs_f64());
    }
    let mut ls = Vec::with_capacity(reps);
    for _ in 0..reps {
        let s = Instant::now();
        nightjar(&d, &["ls"])?;
        ls.push(s.elapsed().as_secs_f64());
    }
    let mut last = Vec::with_capacity(reps);
    let last_page = tasks.div_ceil(100).max(1);
    for _ in 0..reps {
        let s = Instant::now();
        get(port, &format!("/?page={last_page}"), Some(&token))?;
        last.push(s.elapsed().as_secs_f64());
    }
    let (page, ls, last) = (median(&page), median(&ls), median(&last));
    println!(
        "  GET / : {:.1} ms median of {reps} ({bytes} bytes; goal < 200 ms: {})",
        page * 1e3,
        if page < 0.2 { "met" } else { "NOT met" }
    );
    println!(
        "  GET /?page={last_page} (the last page): {:.1} ms",
        last * 1e3
    );
    println!(
        "  `nightjar ls` of the same {} tasks: {:.1} ms (GET / is {:.2}x of it)",
        tasks + 1,
        ls * 1e3,
        page / ls
    );
    Ok(())
}
