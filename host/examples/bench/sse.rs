//! `scripts/bench sse [SECS]`: what idle event streams cost. One daemon
//! with the HTTP API; its CPU over SECS (30) idle with no stream, then
//! over SECS with 10 `GET /api/v2/events` streams open (each read by a
//! thread); the ratio of the two. Goal: streams at idle under 0.1% of a core.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use nightjar::api;

use super::{Daemon, cpu_secs};

/// Streams opened.
const STREAMS: usize = 10;

pub fn sse(secs: u64) -> Result<()> {
    let d = Daemon::start("[http]\nlisten = \"127.0.0.1:0\"\n")?;
    let token = d
        .client()?
        .call(api::TokenCreate {
            name: Some("bench".into()),
        })?
        .token;
    let addr_file = d.state.join("http.addr");
    let t0 = Instant::now();
    let addr = loop {
        if let Ok(a) = std::fs::read_to_string(&addr_file) {
            break a.trim().to_string();
        }
        anyhow::ensure!(
            t0.elapsed() < Duration::from_secs(20),
            "no {}",
            addr_file.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    let pid = d.child.id();
    let window = |what: &str| -> Result<f64> {
        std::thread::sleep(Duration::from_secs(1));
        let (c0, t0) = (cpu_secs(pid)?, Instant::now());
        std::thread::sleep(Duration::from_secs(secs));
        let pct = (cpu_secs(pid)? - c0) / t0.elapsed().as_secs_f64() * 100.0;
        println!("  {what}: {pct:.4}% of one core");
        Ok(pct)
    };
    println!(
        "sse: one daemon idle for {secs} s without streams, then {secs} s with {STREAMS} event streams"
    );
    let without = window("no stream")?;
    let mut readers = Vec::new();
    for _ in 0..STREAMS {
        let mut s = TcpStream::connect(&addr).context("connect to the HTTP API")?;
        write!(
            s,
            "GET /api/v2/events HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer {token}\r\n\r\n"
        )?;
        readers.push(std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            let mut got = 0usize;
            while let Ok(n) = s.read(&mut buf) {
                if n == 0 {
                    break;
                }
                got += n;
            }
            got
        }));
    }
    let with = window(&format!("{STREAMS} streams"))?;
    println!(
        "  streams add {:.4}% of one core (goal < 0.1%); with/without {:.2}x",
        (with - without).max(0.0),
        if without > 0.0 {
            with / without
        } else {
            f64::NAN
        }
    );
    drop(d);
    for r in readers {
        let _ = r.join();
    }
    Ok(())
}
