//! The HTML report as people see it: a realistic accounting rendered by the
//! daemon's code, written and printed to PDF by the CLI's code, then looked
//! at by real tools: `pdfinfo` and `pdftoppm` (poppler-utils) for the PDF's
//! pages, headless Chromium for a screenshot and the DOM it built. The
//! images land in `$CARGO_TARGET_DIR/report-screenshots/` for people to look
//! at. Without Chromium or poppler-utils the test fails (`.ci/run` installs
//! them).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use nightjar_cli::report_files;
use nightjar_core::api::report::{Accounting, GpuUtil, Group, Series, TimelineBar, Wait};

const HOSTILE: &str = "<script>alert(1)</script>";

fn group(key: &str, runs: u64, failed: u64, cost: f64) -> Group {
    Group {
        key: key.into(),
        runs,
        outcomes: BTreeMap::from([
            ("succeeded".into(), runs - failed),
            ("app-error".into(), failed),
        ]),
        gpu_hours: runs as f64 * 1.5,
        wait_p50_ms: Some(600_000 * runs as i64),
        wait_p95_ms: Some(3_600_000 * runs as i64),
        energy_kwh: runs as f64 * 0.8,
        estimated_kwh: 0.1,
        cost,
        cost_at_submit: cost * 1.6,
        savings: cost * 0.6,
    }
}

/// A day of a lab's work: 3 projects (one named like an attack), 2 GPUs
/// sampled 100 times, 24 hours of energy and price, failures, 10 waits.
fn day() -> Accounting {
    let from = 1_764_460_800_000; // 2025-11-30 08:00 in Shanghai
    let to = from + 86_400_000;
    let bucket = 864_000;
    let projects = vec![
        group("vision", 14, 2, 41.5),
        group(&format!("{HOSTILE} & \"co\""), 9, 3, 22.25),
        group("nlp", 5, 0, 9.0),
    ];
    Accounting {
        from,
        to,
        generated_at: to + 60_000,
        time_zone: "Asia/Shanghai".into(),
        currency: "CNY".into(),
        total: group("all", 28, 5, 72.75),
        by_project: projects,
        by_user: vec![group("alice", 20, 3, 50.0), group("bob", 8, 2, 22.75)],
        by_task: (0..30)
            .map(|i| group(&format!("sweep-lr-{i}"), 1, i % 2, 2.0))
            .collect(),
        series: Series {
            bucket_ms: bucket,
            gpu_util: (0..2)
                .map(|g| GpuUtil {
                    index: g,
                    name: "NVIDIA H200".into(),
                    points: (0..100)
                        .map(|i| {
                            let x = (i as f64 / 8.0 + g as f64).sin();
                            (from + i * bucket, 50.0 + 45.0 * x)
                        })
                        .collect(),
                })
                .collect(),
            queue_len: (0..100)
                .map(|i| (from + i * bucket, (30 - (i - 40).abs()).max(0) as u32))
                .collect(),
            energy_by_hour: (0..24)
                .map(|h| if h < 7 { 4.0 + h as f64 * 0.3 } else { 0.6 })
                .collect(),
            price_by_hour: (0..24)
                .map(|h| match h {
                    0..=6 => 0.31,
                    7..=17 => 0.62,
                    _ => 0.95,
                })
                .collect(),
            failures: BTreeMap::from([
                ("app-error".into(), 3),
                ("gpu-oom".into(), 1),
                (HOSTILE.into(), 1),
            ]),
            // The night on two GPUs: a run an hour and a half, the projects
            // in turn (one named like an attack), every fifth failed.
            timeline: (0..28)
                .map(|i: i64| TimelineBar {
                    gpu: (i % 2) as u32,
                    task: 200 + i,
                    project: ["vision", HOSTILE, "nlp"][(i % 3) as usize].into(),
                    start: from + (i / 2) * 5_400_000,
                    end: from + (i / 2) * 5_400_000 + 5_000_000,
                    class: Some(if i % 5 == 4 { "app-error" } else { "ok" }.into()),
                })
                .collect(),
            timeline_left: 0,
            // 23:00 to 07:00 in Shanghai: the first 23 hours of the day
            // drawn hold it from 08:00 - so from 23:00 (+15 h) to the end.
            cheap: vec![(from + 15 * 3_600_000, to)],
        },
        longest_waits: (0..10)
            .map(|i| Wait {
                task: 100 + i,
                name: format!("train-{i} {HOSTILE}"),
                project: "vision".into(),
                waited_ms: (10 - i) * 2_700_000,
                why: Some(format!(
                    "deferred by offpeak-tariff: price 0.95 > 0.5 & \"{HOSTILE}\" <b>bold</b>"
                )),
            })
            .collect(),
        html: None,
    }
}

/// Chromium (with pdftoppm and pdfinfo); the test fails without them.
fn tools() -> PathBuf {
    let missing = match (report_files::browser(), which("pdftoppm"), which("pdfinfo")) {
        (Ok(b), true, true) => return b,
        (Err(e), _, _) => e.to_string(),
        _ => "pdftoppm/pdfinfo (poppler-utils) not on PATH".into(),
    };
    crate::harness::needs(
        "Chromium and poppler-utils",
        format!("{missing}; apt-get install chromium poppler-utils fonts-dejavu-core"),
    )
}

fn which(name: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {name}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs `cmd` within 90 s; its stdout and stderr.
fn run(cmd: &mut Command) -> (String, String) {
    let out = Command::new("timeout")
        .args(["-k", "5", "90"])
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .output()
        .expect("run timeout");
    let (o, e) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "{cmd:?}: {}\n{e}", out.status);
    (o, e)
}

/// Share of the PNG file's pixels that are not white.
fn ink(path: &Path) -> f64 {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    crate::harness::ink(&bytes)
}

fn chromium(browser: &Path, profile: &Path) -> Command {
    let mut c = Command::new(browser);
    c.args(["--headless", "--disable-gpu", "--no-first-run"])
        .arg(format!("--user-data-dir={}", profile.display()));
    // As root Chromium starts only without its sandbox (see report_files).
    // SAFETY: geteuid takes nothing and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        c.arg("--no-sandbox");
    }
    c
}

#[test]
fn the_report_prints_to_pdf_and_renders_in_chromium_with_its_charts_and_escaped_text() {
    let browser = tools();
    let out = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("report-screenshots");
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    let page = nightjar::report::render::html(&day());
    let html = out.join("report.html");
    report_files::write_html(&html, &page).unwrap();
    assert_eq!(std::fs::read_to_string(&html).unwrap(), page);

    // (a) The PDF: A4, several pages, none blank.
    let pdf = out.join("report.pdf");
    report_files::write_pdf(&pdf, &page).unwrap();
    let (info, _) = run(Command::new("pdfinfo").arg(&pdf));
    let pages: usize = info
        .lines()
        .find_map(|l| l.strip_prefix("Pages:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("{info}"));
    assert!(pages >= 2, "one section a page: {info}");
    assert!(info.contains("(A4)"), "printed on A4: {info}");
    run(Command::new("pdftoppm")
        .args(["-png", "-r", "50"])
        .arg(&pdf)
        .arg(out.join("page")));
    let mut pngs: Vec<PathBuf> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("page"))
        .collect();
    pngs.sort();
    assert_eq!(pngs.len(), pages, "{pngs:?}");
    for p in &pngs {
        let ink = ink(p);
        assert!(ink > 0.005, "{} is blank ({ink})", p.display());
    }

    // (b) The page in Chromium: a screenshot that is not blank, and the DOM
    // it built: five charts, the waits table, the hostile text as text.
    let profile = tempfile::tempdir().unwrap();
    let shot = out.join("screenshot.png");
    run(chromium(&browser, profile.path())
        .arg(format!("--screenshot={}", shot.display()))
        .arg("--window-size=1280,2000")
        .arg(format!("file://{}", html.display())));
    let ink = ink(&shot);
    assert!(ink > 0.02, "the screenshot is blank ({ink})");
    let (dom, log) = run(chromium(&browser, profile.path())
        .args(["--dump-dom", "--enable-logging=stderr", "--v=0"])
        .arg(format!("file://{}", html.display())));
    assert_eq!(dom.matches("<svg").count(), 6, "six charts");
    for id in [
        "timeline", "gpu-util", "queue", "cost", "energy", "failures",
    ] {
        assert!(dom.contains(&format!("<figure id=\"{id}\"><svg")), "{id}");
    }
    assert!(dom.contains("<table id=\"waits\">"));
    assert!(dom.contains("did not succeed"), "the timeline's legend");
    assert!(
        dom.contains("&lt;script&gt;alert(1)&lt;/script&gt;</span>"),
        "the hostile project in the timeline's legend, as text"
    );
    assert_eq!(dom.matches("<tr><td>#").count(), 10, "ten waits");
    assert!(
        !dom.contains("<script") && !dom.contains("<b>bold"),
        "markup from data"
    );
    assert!(dom.contains("train-0 &lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(dom.contains("&lt;b&gt;bold&lt;/b&gt;"));
    for bad in ["Uncaught", ":CONSOLE"] {
        assert!(!log.contains(bad), "{bad} in Chromium's log:\n{log}");
    }
    eprintln!(
        "report screenshots: {} ({} PDF pages, screenshot.png)",
        out.display(),
        pages
    );
}
