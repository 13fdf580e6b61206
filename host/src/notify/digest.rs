//! The words of the digest, in English or Chinese: the period, how many
//! runs ended and how (by class), the failures, GPU-hours and energy per
//! project, the queue now, and where the period's HTML report is.

use chrono::TimeZone;
use chrono_tz::Tz;
use serde_json::{Map, Value};

use crate::config::Language;

fn when(ms: i64, tz: Tz) -> String {
    tz.timestamp_millis_opt(ms)
        .single()
        .map(|t| t.format("%Y-%m-%d %H:%M").to_string())
        .unwrap_or_else(|| ms.to_string())
}

fn int(f: &Map<String, Value>, key: &str) -> i64 {
    f.get(key).and_then(Value::as_i64).unwrap_or(0)
}

/// The title and the text of a digest whose facts are `f`.
pub fn render(f: &Map<String, Value>, lang: Language, host: &str, tz: Tz) -> (String, String) {
    let zh = lang == Language::Zh;
    let (from, to) = (when(int(f, "from"), tz), when(int(f, "to"), tz));
    let (runs, failed) = (int(f, "runs"), int(f, "failed"));
    let title = if zh {
        format!("nightjar（{host}）汇总 {from} – {to}：{runs} 次运行，{failed} 次失败")
    } else {
        format!("nightjar on {host}: digest {from} – {to}: {runs} runs, {failed} failed")
    };
    let mut lines = Vec::new();
    let by_class: Vec<String> = f
        .get("by_class")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(c, n)| format!("{c} ×{}", n.as_i64().unwrap_or(0)))
                .collect()
        })
        .unwrap_or_default();
    if !by_class.is_empty() {
        let classes = by_class.join(", ");
        lines.push(if zh {
            format!("结果：{classes}")
        } else {
            format!("Outcomes: {classes}")
        });
    }
    let failures = f.get("failures").and_then(Value::as_array);
    if let Some(list) = failures.filter(|l| !l.is_empty()) {
        lines.push(if zh {
            "失败：".into()
        } else {
            "Failures:".into()
        });
        for x in list {
            let s = |k: &str| x.get(k).and_then(Value::as_str).unwrap_or("?");
            let task = x.get("task").and_then(Value::as_i64).unwrap_or(0);
            lines.push(format!(
                "  #{task} {} ({}): {}",
                s("name"),
                s("project"),
                s("class")
            ));
        }
        let more = failed - list.len() as i64;
        if more > 0 {
            lines.push(if zh {
                format!("  ……另有 {more} 次")
            } else {
                format!("  … and {more} more")
            });
        }
    }
    if let Some(projects) = f.get("projects").and_then(Value::as_array) {
        for p in projects {
            let name = p.get("project").and_then(Value::as_str).unwrap_or("?");
            let runs = p.get("runs").and_then(Value::as_i64).unwrap_or(0);
            let hours = p.get("gpu_hours").and_then(Value::as_f64).unwrap_or(0.0);
            let energy = match (p.get("energy_kwh").and_then(Value::as_f64), zh) {
                (Some(k), false) => format!("{} kWh", nightjar_core::api::wire::fixed(k, 3)),
                (Some(k), true) => format!("{} 千瓦时", nightjar_core::api::wire::fixed(k, 3)),
                (None, false) => "energy not measured".into(),
                (None, true) => "未测量能耗".into(),
            };
            lines.push(if zh {
                format!(
                    "项目 {name}：{runs} 次运行，{} GPU 小时，{energy}",
                    nightjar_core::api::wire::fmt_amount(hours)
                )
            } else {
                format!(
                    "Project {name}: {runs} runs, {} GPU-hours, {energy}",
                    nightjar_core::api::wire::fmt_amount(hours)
                )
            });
        }
    }
    let (q, r, h) = (int(f, "queued"), int(f, "running"), int(f, "held"));
    lines.push(if zh {
        format!("现在：排队 {q}，运行中 {r}，暂停 {h}")
    } else {
        format!("Now: {q} queued, {r} running, {h} held")
    });
    if let Some(path) = f.get("report").and_then(Value::as_str) {
        lines.push(if zh {
            format!("报告（HTML）：{path}")
        } else {
            format!("Report (HTML): {path}")
        });
    }
    lines.push(if zh {
        "详情：nightjar ls".into()
    } else {
        "More: nightjar ls".into()
    });
    (title, lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_digest_says_the_period_outcomes_failures_and_projects_in_either_language() {
        let f = serde_json::json!({
            "from": 1_764_460_800_000i64, "to": 1_764_547_200_000i64,
            "runs": 5, "succeeded": 3, "failed": 2,
            "by_class": {"ok": 3, "gpu-oom": 1, "app-error": 1},
            "failures": [{"task": 4, "name": "train", "project": "vision", "class": "gpu-oom"}],
            "projects": [{"project": "vision", "runs": 5, "gpu_hours": 2.5, "energy_kwh": null},
                         {"project": "nlp", "runs": 1, "gpu_hours": 1.0, "energy_kwh": 0.75}],
            "queued": 2, "running": 1, "held": 0,
            "report": "/var/lib/nightjar/reports/2025-12-01_08-00.html",
        });
        let f = f.as_object().unwrap();
        let tz: Tz = "Asia/Shanghai".parse().unwrap();
        let (title, text) = render(f, Language::En, "gpu1", tz);
        assert_eq!(
            title,
            "nightjar on gpu1: digest 2025-11-30 08:00 – 2025-12-01 08:00: 5 runs, 2 failed"
        );
        for want in [
            "Outcomes: app-error ×1, gpu-oom ×1, ok ×3",
            "#4 train (vision): gpu-oom",
            "… and 1 more",
            "Project vision: 5 runs, 2.50 GPU-hours, energy not measured",
            "Project nlp: 1 runs, 1.00 GPU-hours, 0.750 kWh",
            "Now: 2 queued, 1 running, 0 held",
            "Report (HTML): /var/lib/nightjar/reports/2025-12-01_08-00.html",
        ] {
            assert!(text.contains(want), "{want}\n{text}");
        }
        let (title, text) = render(f, Language::Zh, "gpu1", tz);
        assert!(
            title.contains("汇总") && title.contains("2 次失败"),
            "{title}"
        );
        assert!(
            text.contains("项目 nlp：1 次运行")
                && text.contains("未测量能耗")
                && text.contains("报告（HTML）：/var/lib/nightjar/reports/"),
            "{text}"
        );
    }
}
