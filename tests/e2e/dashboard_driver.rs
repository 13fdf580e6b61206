//! The browser side of the dashboard test: finding Chromium and
//! chromedriver, a thin page driver over fantoccini (waits, screenshots
//! checked not blank), and raw form POSTs.

use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use fantoccini::{Client, Locator};
use serde_json::{Value, json};

use crate::harness::{BIN, Nj};

/// chromium and chromedriver, or why the test cannot run.
pub fn tools() -> Result<(PathBuf, PathBuf), String> {
    let find = |names: &[&str]| {
        names.iter().find_map(|n| {
            std::env::var_os("PATH").and_then(|p| {
                std::env::split_paths(&p)
                    .map(|d| d.join(n))
                    .find(|f| f.is_file())
            })
        })
    };
    let browser = find(&["chromium", "chromium-browser", "google-chrome"])
        .ok_or("no chromium on PATH (Debian: apt-get install chromium)")?;
    let driver = find(&["chromedriver"])
        .ok_or("no chromedriver on PATH (Debian: apt-get install chromium-driver)")?;
    Ok((browser, driver))
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// chromedriver, killed when dropped.
pub struct Driver(pub Child);

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The token `nightjar token create` printed (its last word).
pub fn token_of(out: &str) -> String {
    out.split_whitespace()
        .last()
        .unwrap_or_else(|| panic!("no token in {out:?}"))
        .to_string()
}

/// A token made by `nobody` (uid 65534) through the CLI, as that user.
pub fn nobody_token(nj: &Nj) -> String {
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN])
        .arg("--config")
        .arg(&nj.config)
        .args(["token", "create"])
        .current_dir("/")
        .output()
        .expect("run setpriv");
    assert!(
        out.status.success(),
        "token create as nobody: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    token_of(&String::from_utf8_lossy(&out.stdout))
}

/// The browser side of the test.
pub struct B {
    pub c: Client,
    pub base: String,
    pub shots: PathBuf,
}

impl B {
    pub async fn go(&self, path: &str) {
        self.c
            .goto(&format!("{}{path}", self.base))
            .await
            .unwrap_or_else(|e| panic!("goto {path}: {e}"));
    }

    pub async fn js(&self, script: &str) -> Value {
        self.c
            .execute(script, vec![])
            .await
            .unwrap_or_else(|e| panic!("{script}: {e}"))
    }

    /// The text of the first element matching `css`, if there is one.
    pub async fn text(&self, css: &str) -> Option<String> {
        let v = self
            .c
            .execute(
                "var e = document.querySelector(arguments[0]); return e ? e.textContent : null;",
                vec![json!(css)],
            )
            .await
            .ok()?;
        v.as_str().map(str::to_string)
    }

    /// Waits (30 s at most) until the element `css` holds `needle`.
    pub async fn until_text(&self, css: &str, needle: &str) -> String {
        let t0 = Instant::now();
        loop {
            if let Some(t) = self.text(css).await
                && t.contains(needle)
            {
                return t;
            }
            if t0.elapsed() > Duration::from_secs(30) {
                let src = self.c.source().await.unwrap_or_default();
                panic!("{css} never held {needle:?}; the page:\n{src}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// A screenshot of the whole page at width `w`, saved and checked not blank.
    pub async fn shot(&self, name: &str, w: u32, h: u32) {
        self.c.set_window_size(w, h).await.expect("resize");
        let full = self
            .js("return document.documentElement.scrollHeight")
            .await
            .as_u64()
            .unwrap_or(h as u64) as u32;
        self.c
            .set_window_size(w, full.clamp(h, 6000) + 140)
            .await
            .expect("resize");
        let png = self.c.screenshot().await.expect("screenshot");
        let path = self.shots.join(format!("{name}.png"));
        std::fs::write(&path, &png).expect("write screenshot");
        let ink = crate::harness::ink(&png);
        assert!(ink > 0.005, "{} is blank ({ink})", path.display());
        self.c.set_window_size(w, h).await.expect("resize");
    }

    /// Logs in through the form with `token`.
    pub async fn login(&self, token: &str) {
        self.c.delete_all_cookies().await.expect("cookies");
        self.go("/login").await;
        let input = self
            .c
            .find(Locator::Css("#token"))
            .await
            .expect("token field");
        input.send_keys(token).await.expect("type");
        input.send_keys("\u{E007}").await.expect("enter");
        self.until_text("main h1", "Queue").await;
    }
}

/// The status of a form POST cancelling `id` with the session `token`.
pub fn post_cancel(base: &str, id: i64, token: &str, body: &str) -> u16 {
    use std::io::{Read, Write};
    let host = base.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(host).expect("connect");
    write!(
        s,
        "POST /task/{id}/cancel HTTP/1.1\r\nHost: {host}\r\nCookie: nj_session={token}\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("send");
    let mut reply = String::new();
    let _ = s.read_to_string(&mut reply);
    reply
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status in {reply:?}"))
}
