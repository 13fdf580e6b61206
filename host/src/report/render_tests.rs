use std::collections::BTreeMap;

use nightjar_core::api::report::{Accounting, GpuUtil, Group, Series, Wait};

use super::*;

const HOSTILE: &str = "<script>alert(1)</script>";

fn group(key: &str, runs: u64, cost: f64) -> Group {
    Group {
        key: key.into(),
        runs,
        outcomes: BTreeMap::from([("succeeded".into(), runs - 1), ("app-error".into(), 1)]),
        gpu_hours: 2.5,
        wait_p50_ms: Some(90_000),
        wait_p95_ms: Some(7_200_000),
        energy_kwh: 1.25,
        estimated_kwh: 0.25,
        cost,
        cost_at_submit: cost * 1.5,
        savings: cost * 0.5,
    }
}

fn empty() -> Accounting {
    Accounting {
        from: 1_764_460_800_000,
        to: 1_764_547_200_000,
        generated_at: 1_764_547_260_000,
        time_zone: "Asia/Shanghai".into(),
        currency: "CNY".into(),
        total: Group {
            key: "all".into(),
            ..Group::default()
        },
        by_project: vec![],
        by_user: vec![],
        by_task: vec![],
        series: Series {
            bucket_ms: 900_000,
            ..Series::default()
        },
        longest_waits: vec![],
        html: None,
    }
}

fn full() -> Accounting {
    let mut a = empty();
    let (from, b) = (a.from, a.series.bucket_ms);
    a.total = group("all", 9, 30.0);
    a.by_project = vec![
        group(HOSTILE, 4, 20.0),
        group("a \"quoted\" & 'single'", 3, 7.0),
        group("nlp", 2, f64::NAN),
    ];
    a.by_user = vec![group("alice", 5, 20.0), group("bob", 4, 10.0)];
    a.by_task = (0..25)
        .map(|i| group(&format!("task-{i}"), 2, 1.0))
        .collect();
    a.series.gpu_util = (0..2)
        .map(|g| GpuUtil {
            index: g,
            name: format!("H200 {HOSTILE}"),
            points: (0..96)
                .map(|i| {
                    (
                        from + i * b,
                        if i == 5 {
                            f64::NAN
                        } else {
                            (i % 10) as f64 * 10.0
                        },
                    )
                })
                .collect(),
        })
        .collect();
    a.series.queue_len = (0..96).map(|i| (from + i * b, (i % 7) as u32)).collect();
    a.series.energy_by_hour = (0..24).map(|h| if h < 7 { 3.0 } else { 0.5 }).collect();
    a.series.price_by_hour = (0..24)
        .map(|h| {
            if h == 3 {
                f64::INFINITY
            } else if h < 7 {
                0.3
            } else {
                0.9
            }
        })
        .collect();
    a.series.failures = BTreeMap::from([(HOSTILE.into(), 2), ("gpu-oom".into(), 1)]);
    a.longest_waits = (0..10)
        .map(|i| Wait {
            task: i,
            name: format!("sweep {HOSTILE}"),
            project: "vision".into(),
            waited_ms: 3_600_000 * (10 - i),
            why: Some(format!("deferred by offpeak: price 0.9 > 0.5 & {HOSTILE}")),
        })
        .collect();
    a
}

#[test]
fn escape_writes_the_five_special_characters_as_references() {
    assert_eq!(
        escape("<a href=\"x\">'&'</a>"),
        "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
    );
    assert_eq!(escape("plain 汉字"), "plain 汉字");
}

#[test]
fn a_hostile_name_never_appears_unescaped_in_the_page_or_its_charts() {
    let page = html(&full());
    assert!(!page.contains(HOSTILE), "raw script in the page");
    assert!(!page.contains("<script"), "a script element");
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(page.contains("a &quot;quoted&quot; &amp; &#39;single&#39;"));
    // The charts' labels (a failure class, a GPU name) are escaped by plotters.
    let svgs: Vec<&str> = page.split("<svg").skip(1).collect();
    assert!(svgs.iter().any(|s| s.contains("&lt;script&gt;")), "{page}");
}

#[test]
fn a_full_page_has_every_chart_and_table_and_no_nan() {
    let page = html(&full());
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(page.contains("name=\"viewport\"") && page.contains("@media print"));
    for id in ["gpu-util", "queue", "cost", "energy", "failures"] {
        assert!(
            page.contains(&format!("<figure id=\"{id}\"><svg")),
            "chart {id} missing"
        );
    }
    assert_eq!(page.matches("<svg").count(), 5);
    for bad in ["NaN", "inf", "chart not drawn"] {
        assert!(!page.contains(bad), "{bad} in the page");
    }
    assert!(page.contains("By user") && page.contains("alice"));
    assert!(page.contains("top 20 of 25") && page.contains("task-19"));
    assert!(!page.contains("task-20<"));
    assert_eq!(page.matches("<tr><td>#").count(), 10, "ten waits");
    assert!(page.contains("nightjar report 2025-11-30 08:00 – 2025-12-01 08:00"));
    // No external resource: the only URL is the SVG namespace.
    for u in page.split("http").skip(1) {
        assert!(u.starts_with("://www.w3.org/2000/svg\""), "{}", &u[..40]);
    }
    assert!(!page.contains("src=") && !page.contains("href="));
}

#[test]
fn an_empty_period_renders_a_page_that_says_so() {
    let page = html(&empty());
    assert!(page.contains("no runs in this period"));
    assert!(page.contains("no GPU samples in this period"));
    assert!(!page.contains("<svg") && !page.contains("By user") && !page.contains("NaN"));
    assert!(page.trim_end().ends_with("</html>"));
    // One user in the period (a daemon serving one user): no by-user table.
    let mut a = full();
    a.by_user.truncate(1);
    assert!(!html(&a).contains("By user"));
}

#[test]
fn durations_read_like_a_person_says_them() {
    assert_eq!(duration(None), "–");
    assert_eq!(duration(Some(45_000)), "45s");
    assert_eq!(duration(Some(723_000)), "12m 3s");
    assert_eq!(duration(Some(11_520_000)), "3h 12m");
    assert_eq!(duration(Some(187_200_000)), "2d 4h");
}
