//! The dashboard in a real browser: headless Chromium driven through
//! WebDriver (chromedriver, started here on a free port) against a real
//! daemon with two simulated GPUs, the four first-party policies (a tariff
//! that makes normal work wait), and its HTTP server. Everything is checked
//! through the DOM; each page is saved as a screenshot under
//! `target/dashboard-screenshots/` and checked not to be blank.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{ClientBuilder, Locator};
use serde_json::{Value, json};

use crate::dashboard_driver::{B, Driver, free_port, nobody_token, post_cancel, token_of, tools};
use crate::harness::Nj;

#[test]
fn the_dashboard_in_chromium_logs_in_shows_the_queue_streams_a_log_and_guards_its_buttons() {
    let (browser, driver) = match tools() {
        Ok(t) => t,
        Err(why) => crate::harness::needs("Chromium and chromedriver", why),
    };
    // SAFETY: geteuid takes nothing and cannot fail.
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
        crate::harness::needs("root", "the second user's part runs the CLI as nobody")
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
    // A task that leaves output files and says something on stderr.
    let out = nj.path("writer-out");
    let writer = nj.submit(&[
        "--priority",
        "urgent",
        "--name",
        "writer",
        "--output",
        out.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        &format!(
            "echo 'loss 0.25' > {0}/metrics.txt; head -c 2048 /dev/zero > {0}/weights.bin; \
             echo 'warning: <b>late</b> epoch' >&2",
            out.display()
        ),
    ]);
    nj.wait(done);
    nj.wait(writer);
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
        task_page(&b, &admin, writer).await;
        let _ = b.c.close().await;
    });
    nj.ok(&["cancel", &logger.to_string()]);
}

async fn browse(b: &B, nj: &Nj, admin: &str, other: Option<&str>, ids: (i64, i64, i64)) {
    let (done, waiting, logger) = ids;
    // No session: every page sends the browser to the login form.
    b.go("/gpus").await;
    b.until_text("main h1", "Log in").await;
    // The login page opens no event stream (it would be refused: a 401 in
    // the browser's console).
    assert_eq!(
        b.js("return document.getElementById('frag').getAttribute('data-live')")
            .await,
        Value::Null
    );
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

    // A task submitted now appears without a reload (the event stream).
    b.js("window.__kept = 'queue'; return 1").await;
    let late = nj.submit(&["--name", "late-comer", "--", "true"]);
    b.until_text(&format!("#task-{late}"), "late-comer").await;
    assert_eq!(b.js("return window.__kept || null").await, json!("queue"));
    nj.ok(&["cancel", &late.to_string()]);

    // The full `why` is one click away. The cancel above refreshes the
    // queue from the event stream, which may replace the row between the
    // find and the click (a stale element): found again then.
    let link = format!("{row} a.why-link");
    let mut clicked = false;
    for _ in 0..20 {
        let el = b.c.find(Locator::Css(&link)).await.expect("why link");
        if el.click().await.is_ok() {
            clicked = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(clicked, "the why link could not be clicked");
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
    // The page re-renders its task from the event stream (the other tasks'
    // runs go on), which may replace the button between the find and the
    // click (a stale element): found again then, as the why link is.
    let button = format!("#cancel-{waiting}");
    let mut clicked = false;
    for _ in 0..20 {
        let el =
            b.c.find(Locator::Css(&button))
                .await
                .expect("the owner's cancel button");
        if el.click().await.is_ok() {
            clicked = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(clicked, "the cancel button could not be clicked");
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

    // A page on another 127.0.0.1 port (the same *site* as the dashboard,
    // so the browser sends its session cookie along) tries to cancel the
    // running task and mint a token through the API: a fetch with the
    // cookie, then a plain-text form. Nothing happens.
    let evil = nj.path("evil");
    let api = &b.base;
    std::fs::write(
        evil.join("index.html"),
        format!(
            "<!doctype html><title>evil</title><form id=f method=POST action=\"{api}/api/v2/cancel\" enctype=\"text/plain\"><input name='{{\"id\":{logger},\"x\":\"' value='\"}}'></form>\
             <script>fetch('{api}/api/v2/token-create',{{method:'POST',credentials:'include',headers:{{'Content-Type':'text/plain'}},body:'{{\"name\":\"evil\"}}'}}).catch(()=>0)\
             .then(()=>fetch('{api}/api/v2/cancel',{{method:'POST',credentials:'include',mode:'no-cors',headers:{{'Content-Type':'text/plain'}},body:'{{\"id\":{logger}}}'}})).catch(()=>0)\
             .then(()=>{{document.title='sent';document.getElementById('f').submit();}});</script>"
        ),
    )
    .unwrap();
    let port = free_port();
    let mut server = Command::new("python3")
        .args([
            "-m",
            "http.server",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
        ])
        .current_dir(&evil)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let tokens_before = nj.json(&["token", "ls"]).as_array().map(Vec::len);
    let url = format!("http://127.0.0.1:{port}/");
    let t0 = Instant::now();
    while b.c.goto(&url).await.is_err() && t0.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The form's navigation lands on the API's answer (a 401 page).
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(10) {
        let at =
            b.c.current_url()
                .await
                .map(|u| u.to_string())
                .unwrap_or_default();
        if at.contains("/api/v2/cancel") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(
        nj.show(logger)["task"]["state"],
        "running",
        "a cross-site cancel"
    );
    assert_eq!(
        nj.json(&["token", "ls"]).as_array().map(Vec::len),
        tokens_before,
        "a cross-site token"
    );
    b.go("/").await;

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

/// The task page of a run that wrote files and stderr: its
/// folders, output files with sizes and digests, what it ran, the end of
/// its stderr (escaped), and its runs' timeline.
async fn task_page(b: &B, admin: &str, id: i64) {
    b.login(admin).await;
    b.go(&format!("/task/{id}")).await;
    b.until_text("#stderr-tail", "warning: <b>late</b> epoch")
        .await;
    let html = b
        .js("return document.getElementById('frag').innerHTML")
        .await;
    let html = html.as_str().unwrap_or_default();
    assert!(
        html.contains("&lt;b&gt;late&lt;/b&gt;"),
        "stderr is text, not markup"
    );
    b.until_text("#output", "writer-out").await;
    b.until_text("#workdir", "/").await;
    let files = b.until_text("#output-files", "metrics.txt").await;
    assert!(
        files.contains("weights.bin") && files.contains("2.0 KiB"),
        "{files}"
    );
    b.until_text("#manifest-code", "git").await;
    assert!(
        html.contains("id=\"task-timeline\"><svg"),
        "the runs' timeline"
    );
    b.shot("task-detail", 1280, 1600).await;
}
