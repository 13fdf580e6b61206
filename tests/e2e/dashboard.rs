//! The dashboard in a real browser: headless Chromium driven through
//! WebDriver (chromedriver, started here on a free port) against a real
//! daemon with two simulated GPUs, the four first-party policies (a tariff
//! that makes normal work wait), and its HTTP server. Everything is checked
//! through the DOM; each page is saved as a screenshot under
//! `target/dashboard-screenshots/` and checked not to be blank.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

use crate::harness::{BIN, Nj};

/// chromium and chromedriver, or why the test cannot run.
fn tools() -> Result<(PathBuf, PathBuf), String> {
    if std::env::var_os("NIGHTJAR_SKIP_BROWSER").is_some() {
        return Err("NIGHTJAR_SKIP_BROWSER is set".into());
    }
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

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// chromedriver, killed when dropped.
struct Driver(Child);

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The token `nightjar token create` printed (its last word).
fn token_of(out: &str) -> String {
    out.split_whitespace()
        .last()
        .unwrap_or_else(|| panic!("no token in {out:?}"))
        .to_string()
}

/// A token made by `nobody` (uid 65534) through the CLI, as that user.
fn nobody_token(nj: &Nj) -> String {
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

/// Share of the PNG's pixels that are not white.
fn ink(png_bytes: &[u8]) -> f64 {
    let mut dec = png::Decoder::new(std::io::Cursor::new(png_bytes));
    dec.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = dec.read_info().expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size().expect("size")];
    let info = reader.next_frame(&mut buf).expect("a frame");
    let px = info.color_type.samples();
    let pixels = &buf[..info.buffer_size()];
    let inked = pixels
        .chunks(px)
        .filter(|p| p.iter().take(3).any(|&c| c < 240))
        .count();
    inked as f64 / (pixels.len() / px) as f64
}

/// The browser side of the test.
struct B {
    c: Client,
    base: String,
    shots: PathBuf,
}

impl B {
    async fn go(&self, path: &str) {
        self.c
            .goto(&format!("{}{path}", self.base))
            .await
            .unwrap_or_else(|e| panic!("goto {path}: {e}"));
    }

    async fn js(&self, script: &str) -> Value {
        self.c
            .execute(script, vec![])
            .await
            .unwrap_or_else(|e| panic!("{script}: {e}"))
    }

    /// The text of the first element matching `css`, if there is one.
    async fn text(&self, css: &str) -> Option<String> {
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
    async fn until_text(&self, css: &str, needle: &str) -> String {
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
    async fn shot(&self, name: &str, w: u32, h: u32) {
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
        let ink = ink(&png);
        assert!(ink > 0.005, "{} is blank ({ink})", path.display());
        self.c.set_window_size(w, h).await.expect("resize");
    }

    /// Logs in through the form with `token`.
    async fn login(&self, token: &str) {
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

#[test]
fn the_dashboard_in_chromium_logs_in_shows_the_queue_streams_a_log_and_guards_its_buttons() {
    let (browser, driver) = match tools() {
        Ok(t) => t,
        Err(why) => {
            println!("SKIP: the dashboard browser test: {why}");
            return;
        }
    };
    let root = unsafe { libc::geteuid() } == 0;
    let http = free_port();
    // Peak price now: the cheap window is twelve hours away (UTC).
    let hour = (chrono::Utc::now().timestamp().div_euclid(3600) + 12).rem_euclid(24);
    let mut nj = Nj::new(&format!(
        "slots = 4\ntimezone = \"UTC\"\n\
         [gpu]\nbackend = \"sim:2xA100-80GB\"\nsample_period = \"200ms\"\nhost_mem_min_free = \"1MiB\"\n\
         [plugins]\nchain = [\"priority\", \"fair-share\", \"thermal\", \"offpeak-tariff\"]\n\
         [plugin.offpeak-tariff.config]\ncurrency = \"EUR\"\npeak_price = 1.2\n\
         [[plugin.offpeak-tariff.config.windows]]\nstart = \"{hour:02}:00\"\nend = \"{:02}:00\"\nprice = 0.35\n\
         [http]\nlisten = \"127.0.0.1:{http}\"\n",
        (hour + 1) % 24
    ));
    nj.start();
    let admin = token_of(&nj.ok(&["token", "create"]));
    let other = if root {
        // Let `nobody` reach the socket (a lab-wide daemon's is 0666).
        use std::os::unix::fs::PermissionsExt;
        for p in [nj.dir.path(), nj.state.as_path()] {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o711)).unwrap();
        }
        std::fs::set_permissions(&nj.config, std::fs::Permissions::from_mode(0o644)).unwrap();
        let sock = nj.state.join("nightjar.sock");
        std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o666)).unwrap();
        Some(nobody_token(&nj))
    } else {
        println!("SKIP: the second user's part (not root: cannot run the CLI as nobody)");
        None
    };
    let done = nj.submit(&["--priority", "urgent", "--name", "quick", "--", "true"]);
    let waiting = nj.submit(&["--name", "cheap-later", "--", "true"]);
    let logger = nj.submit(&[
        "--priority",
        "urgent",
        "--name",
        "talker",
        "--",
        "sh",
        "-c",
        "i=0; while [ $i -lt 600 ]; do echo line-$i; i=$((i+1)); sleep 0.2; done",
    ]);
    nj.wait(done);
    nj.until_slow("the tariff's deferral", || {
        nj.show(waiting)["task"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("offpeak-tariff"))
    });
    nj.until("the talker running", || {
        nj.show(logger)["task"]["state"] == "running"
    });

    let port = free_port();
    let _driver = Driver(
        Command::new(&driver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver"),
    );
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("target dir")
        .join("dashboard-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let profile = nj.path("chromium-profile");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut args = vec![
            "--headless=new".to_string(),
            "--disable-gpu".into(),
            "--no-first-run".into(),
            "--window-size=1280,900".into(),
            format!("--user-data-dir={}", profile.display()),
        ];
        if root {
            args.push("--no-sandbox".into());
        }
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            json!({ "binary": browser, "args": args }),
        );
        let t0 = Instant::now();
        let c = loop {
            let conn = hyper_util::client::legacy::connect::HttpConnector::new();
            match ClientBuilder::new(conn)
                .capabilities(caps.clone())
                .connect(&format!("http://127.0.0.1:{port}"))
                .await
            {
                Ok(c) => break c,
                Err(e) if t0.elapsed() < Duration::from_secs(20) => {
                    let _ = e;
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(e) => panic!("chromedriver: {e}"),
            }
        };
        let b = B {
            c,
            base: format!("http://127.0.0.1:{http}"),
            shots,
        };
        browse(&b, &nj, &admin, other.as_deref(), (done, waiting, logger)).await;
        let _ = b.c.close().await;
    });
    nj.ok(&["cancel", &logger.to_string()]);
}

async fn browse(b: &B, nj: &Nj, admin: &str, other: Option<&str>, ids: (i64, i64, i64)) {
    let (done, waiting, logger) = ids;
    // No session: every page sends the browser to the login form.
    b.go("/gpus").await;
    b.until_text("main h1", "Log in").await;
    b.shot("login", 1280, 900).await;
    // A wrong token shows the form again, saying so.
    let input = b.c.find(Locator::Css("#token")).await.expect("token field");
    input.send_keys("not-a-token").await.unwrap();
    input.send_keys("\u{E007}").await.unwrap();
    b.until_text("#login-error", "not valid").await;
    b.login(admin).await;

    // The queue: the waiting task, its reason the tariff's (names are
    // restricted at submit; the pages' escaping is unit-tested).
    let row = format!("#task-{waiting}");
    b.until_text(&row, "offpeak-tariff").await;
    let cell = b.text(&format!("{row} td.text")).await.unwrap_or_default();
    assert_eq!(cell, "cheap-later");
    b.until_text(&format!("#task-{logger}"), "running").await;
    b.shot("queue", 1280, 900).await;
    // On a phone: no horizontal scrolling.
    b.c.set_window_size(390, 844).await.unwrap();
    let wide = b.js("return document.documentElement.scrollWidth").await;
    assert!(
        wide.as_u64().unwrap_or(9999) <= 390,
        "the page scrolls sideways at 390 px: {wide}"
    );
    b.shot("queue-phone", 390, 844).await;
    b.c.set_window_size(1280, 900).await.unwrap();

    // The full `why` is one click away.
    b.c.find(Locator::Css(&format!("{row} a.why-link")))
        .await
        .expect("why link")
        .click()
        .await
        .unwrap();
    b.until_text("#why-text", "offpeak-tariff").await;

    // The running task's log streams in.
    b.go(&format!("/task/{logger}")).await;
    b.until_text("#log", "line-3").await;
    let before = b.text("#log").await.unwrap_or_default().lines().count();
    b.until_text("#log", &format!("line-{}", before + 5)).await;
    b.shot("task", 1280, 900).await;

    // A cancel by its owner, without reloading: the state arrives through SSE.
    b.go(&format!("/task/{waiting}")).await;
    b.js("window.__kept = 'yes'; return 1").await;
    b.c.find(Locator::Css(&format!("#cancel-{waiting}")))
        .await
        .expect("the owner's cancel button")
        .click()
        .await
        .unwrap();
    b.until_text("#task-state", "cancelled").await;
    assert_eq!(
        b.js("return window.__kept || null").await,
        json!("yes"),
        "the page reloaded"
    );
    assert_eq!(nj.show(waiting)["task"]["state"], "cancelled");

    for (page, name, needle) in [
        ("/gpus", "gpus", "A100"),
        ("/runs", "runs", "quick"),
        ("/plugins", "plugins", "offpeak-tariff"),
        ("/report", "report", "Summary"),
    ] {
        b.go(page).await;
        b.until_text("main", needle).await;
        if name == "runs" {
            let runs = b.text("#finished").await.unwrap_or_default();
            assert!(
                runs.contains(&done.to_string()) && runs.contains("succeeded"),
                "{runs}"
            );
        }
        b.shot(name, 1280, 900).await;
    }

    // A POST without the CSRF field is refused.
    let post = |token: &str, body: &str| post_cancel(&b.base, logger, token, body);
    assert_eq!(post(admin, ""), 403, "no CSRF field");
    assert_eq!(post(admin, "csrf=00"), 403, "a wrong CSRF token");

    // Another user: no button on someone else's task, the log private, and
    // a forged POST with their own valid CSRF token refused by the daemon.
    if let Some(other) = other {
        b.login(other).await;
        b.until_text(&format!("#task-{logger}"), "running").await;
        assert!(
            b.c.find(Locator::Css(&format!("#cancel-{logger}")))
                .await
                .is_err()
        );
        b.go(&format!("/task/{logger}")).await;
        b.until_text("#private", "private").await;
        assert!(
            b.c.find(Locator::Css(&format!("#cancel-{logger}")))
                .await
                .is_err()
        );
        let csrf = nightjar::web::auth::csrf_for(other);
        assert_eq!(
            post(other, &format!("csrf={csrf}")),
            403,
            "another user's task"
        );
        assert_eq!(nj.show(logger)["task"]["state"], "running");
    }
}

/// The status of a form POST cancelling `id` with the session `token`.
fn post_cancel(base: &str, id: i64, token: &str, body: &str) -> u16 {
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
