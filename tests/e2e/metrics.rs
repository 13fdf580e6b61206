//! `/metrics` against a real Prometheus server (Debian's `prometheus`,
//! installed by `.ci/run`) scraping a real daemon on 127.0.0.1 with
//! simulated GPUs: the series arrive in Prometheus with the values the
//! daemon's runs and GPUs give them. And who may read them.

use std::io::Read;
use std::net::{IpAddr, SocketAddr};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::dashboard_driver::free_port;
use crate::harness::{Nj, needs};
use crate::http_client::{addr, call, connect_from, read_resp, send, try_read_resp};

/// A Prometheus server, killed when dropped.
struct Prometheus {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Prometheus {
    /// Starts one scraping `target` every second.
    fn scraping(target: SocketAddr) -> Prometheus {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: nightjar\n    static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .unwrap();
        let port = free_port();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| needs("Prometheus (Debian's `prometheus`)", e));
        Prometheus {
            child,
            port,
            _dir: dir,
        }
    }

    /// The result of the instant query `q` (PromQL) through the HTTP API.
    fn query(&self, q: &str) -> Option<Vec<Value>> {
        let encoded: String = q
            .bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' => (b as char).to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect();
        let a: SocketAddr = format!("127.0.0.1:{}", self.port).parse().unwrap();
        let mut s = std::net::TcpStream::connect(a).ok()?;
        send(
            &mut s,
            "GET",
            &format!("/api/v1/query?query={encoded}"),
            &[],
            b"",
        );
        // Prometheus may reset a connection while it starts: not yet.
        let r = try_read_resp(&mut s)?;
        let v: Value = serde_json::from_slice(&r.body).ok()?;
        (v["status"] == "success")
            .then(|| v["data"]["result"].as_array().cloned().unwrap_or_default())
    }

    /// `q`'s single value once Prometheus has one (60 s at most).
    fn value(&self, q: &str) -> f64 {
        let t0 = Instant::now();
        loop {
            if let Some(rows) = self.query(q)
                && let [row] = rows.as_slice()
                && let Some(v) = row["value"][1].as_str().and_then(|v| v.parse().ok())
            {
                return v;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "Prometheus has no single value for {q}: {:?}",
                self.query(q)
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

#[test]
fn a_real_prometheus_scrapes_runs_tasks_gpus_and_passes_from_the_daemon() {
    let mut nj = Nj::new(
        "slots = 4\n\
         [gpu]\nbackend = \"sim:2xA100-80GB\"\nsim_script = \"gpus.toml\"\nsample_period = \"200ms\"\nhost_mem_min_free = \"1MiB\"\n\
         [http]\nlisten = \"127.0.0.1:0\"\nmetrics = true\ntrusted_proxy_header = \"X-Remote-User\"\ntrusted_proxies = [\"127.0.0.2\"]\n",
    );
    // GPU 0 counts its energy, GPU 1 does not (the daemon sums its power).
    std::fs::write(
        nj.dir.path().join("gpus.toml"),
        "[[gpu]]\npower_w = 300\nenergy = true\n[[gpu]]\npower_w = 200\nenergy = false\n",
    )
    .unwrap();
    nj.start();
    let ok = nj.submit(&["--project", "vision", "--gpus", "1", "--", "sleep", "1"]);
    let bad = nj.submit(&["--project", "nlp", "--", "false"]);
    assert_eq!(nj.wait(ok), 0);
    assert_eq!(nj.wait(bad), 1);
    let a = addr(&nj);

    // Read directly, from loopback, without a token.
    let r = call(a, "GET", "/metrics", None, "");
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(
        r.head
            .contains("content-type: application/openmetrics-text"),
        "{}",
        r.head
    );
    let text = r.text();
    for line in [
        "nightjar_runs_ended_total{class=\"ok\",project=\"vision\"} 1",
        "nightjar_runs_ended_total{class=\"app-error\",project=\"nlp\"} 1",
        "nightjar_tasks{state=\"failed\",project=\"nlp\"} 1",
    ] {
        assert!(text.contains(line), "{line:?} in:\n{text}");
    }

    // Through the trusted proxy's address and without a token: refused.
    let mut s = connect_from("127.0.0.2".parse::<IpAddr>().unwrap(), a);
    send(&mut s, "GET", "/metrics", &[], b"");
    let refused = read_resp(&mut s);
    assert_eq!(refused.status, 401, "{}", refused.text());
    assert!(
        refused.text().contains("metrics_allow"),
        "{}",
        refused.text()
    );

    // A real Prometheus scrapes it.
    let p = Prometheus::scraping(a);
    assert_eq!(p.value("up{job=\"nightjar\"}"), 1.0);
    assert_eq!(
        p.value("nightjar_runs_ended_total{class=\"ok\",project=\"vision\"}"),
        1.0
    );
    assert_eq!(
        p.value("nightjar_runs_ended_total{class=\"app-error\",project=\"nlp\"}"),
        1.0
    );
    assert_eq!(
        p.value("nightjar_tasks{state=\"succeeded\",project=\"vision\"}"),
        1.0
    );
    assert_eq!(p.value("count(nightjar_gpu_power_watts)"), 2.0);
    assert_eq!(p.value("nightjar_gpu_power_watts{gpu=\"0\"}"), 300.0);
    assert_eq!(
        p.value("nightjar_gpu_memory_total_bytes{gpu=\"1\"}"),
        80.0 * 1024f64.powi(3)
    );
    assert!(p.value("nightjar_pass_duration_seconds_count") >= 1.0);
    // Both GPUs' energy grows: the counter's and the summed one.
    for gpu in ["0", "1"] {
        let q = format!("nightjar_gpu_energy_joules_total{{gpu=\"{gpu}\"}}");
        let first = p.value(&q);
        let t0 = Instant::now();
        while p.value(&q) <= first {
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "{q} stays at {first}"
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }
    assert_eq!(p.value("nightjar_outbox_dead"), 0.0);
    assert_eq!(p.value("nightjar_archive_backlog"), 0.0);

    // The Grafana dashboard's queries are PromQL this Prometheus accepts
    // (and it refuses what is not).
    assert!(p.query("nightjar_tasks{").is_none());
    let dash: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../examples/grafana/nightjar-dashboard.json"
        ))
        .unwrap(),
    )
    .unwrap();
    for panel in dash["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().unwrap() {
            let expr = target["expr"].as_str().unwrap();
            assert!(p.query(expr).is_some(), "Prometheus refuses {expr}");
        }
    }
}

#[test]
fn metrics_are_off_unless_configured_and_the_answer_says_how() {
    let mut nj = Nj::new("[http]\nlisten = \"127.0.0.1:0\"\n");
    nj.start();
    let r = call(addr(&nj), "GET", "/metrics", None, "");
    assert_eq!(r.status, 404);
    let mut body = String::new();
    r.body.as_slice().read_to_string(&mut body).unwrap();
    assert!(body.contains("metrics = true"), "{body}");
}

#[test]
fn the_metrics_own_listener_serves_metrics_only_and_only_to_whom_it_is_open() {
    let mut nj = Nj::new(
        "[http]\nmetrics = true\nmetrics_listen = \"127.0.0.1:0\"\ntrusted_proxy_header = \"X-Remote-User\"\ntrusted_proxies = [\"127.0.0.2\"]\n",
    );
    nj.start();
    let file = nj.state.join("metrics.addr");
    let t0 = Instant::now();
    let a: SocketAddr = loop {
        if let Ok(text) = std::fs::read_to_string(&file)
            && let Ok(a) = text.trim().parse()
        {
            break a;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "no {}",
            file.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let r = call(a, "GET", "/metrics", None, "");
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("nightjar_pass_duration_seconds_count"));
    // No API there, token or not.
    assert_eq!(call(a, "GET", "/api/v2/health", None, "").status, 404);
    assert_eq!(
        call(a, "POST", "/api/v2/ping", Some("nj_x"), "{}").status,
        404
    );
    // Not open to a peer that is neither loopback-local nor allowed.
    let mut s = connect_from("127.0.0.2".parse::<IpAddr>().unwrap(), a);
    send(
        &mut s,
        "GET",
        "/metrics",
        &["Authorization: Bearer nj_anything".into()],
        b"",
    );
    let refused = read_resp(&mut s);
    assert_eq!(refused.status, 403, "{}", refused.text());
    assert!(
        refused.text().contains("metrics_allow"),
        "{}",
        refused.text()
    );
    // And the API's server is off: `listen` is not set.
    assert!(!nj.state.join("http.addr").exists());
}
