//! The words of a notification, in English or Chinese: a one-line title and
//! plain-text lines that say what happened and what to do (the class's
//! hint, the exit code, how long it ran, the last lines of stderr with
//! secrets cut out, the command that shows more).

use serde_json::{Map, Value};

use crate::config::Language;
use crate::store::OutboxEvent;

/// Lines of stderr a message carries at most.
pub const STDERR_LINES: usize = 10;

/// Bytes of stderr a message carries at most.
pub const STDERR_BYTES: usize = 1024;

fn text<'a>(facts: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    facts
        .get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

fn span(ms: i64) -> String {
    crate::time::fmt_span(ms.max(0))
}

/// What happened, per kind and language: (English, Chinese).
fn verb(kind: &str) -> (&'static str, &'static str) {
    match kind {
        "task-started" => ("started", "开始运行"),
        "task-succeeded" => ("succeeded", "成功"),
        "task-failed" => ("failed", "失败"),
        "task-validation-failed" => ("failed validation", "结果校验未通过"),
        "task-retried" => ("failed and will be retried", "失败，将重试"),
        "task-preempted" => ("was preempted and queued again", "被抢占，已重新排队"),
        "task-held" => ("is held", "已暂停等待"),
        "task-blocked" => ("is blocked", "被阻塞"),
        "task-cancelled" => ("was cancelled", "已取消"),
        "task-stalled" => ("seems stalled", "疑似停滞"),
        "plugin-disabled" => ("disabled a failing policy", "停用了一个出错的策略插件"),
        "disk-low" => ("low disk space", "磁盘空间不足"),
        "archive-failed" => ("could not be archived", "归档失败"),
        "daemon-started" => ("started", "已启动"),
        "daemon-stopped" => ("stopped", "已停止"),
        "test" => ("test message", "测试消息"),
        _ => ("event", "事件"),
    }
}

/// The title and the text of `e`; `stderr` is the end of its run's stderr
/// (already redacted), when it has one.
pub fn render(
    e: &OutboxEvent,
    lang: Language,
    host: &str,
    stderr: Option<&str>,
) -> (String, String) {
    let f = &e.facts;
    let (en, zh) = verb(&e.kind);
    let name = text(f, "name").unwrap_or("?");
    let project = e.project.as_deref().unwrap_or("default");
    let zh_lang = lang == Language::Zh;
    let title = match (e.task, zh_lang) {
        (Some(t), false) => format!("nightjar: {name} (task {t}, {project}) {en}"),
        (Some(t), true) => format!("nightjar：任务 {name}（#{t}，项目 {project}）{zh}"),
        _ if e.kind == "disk-low" => disk_low_title(f, zh_lang, host),
        (None, false) => format!("nightjar on {host}: {}", text(f, "message").unwrap_or(en)),
        (None, true) => format!("nightjar（{host}）{}", text(f, "message").unwrap_or(zh)),
    };
    let mut lines = Vec::new();
    let mut line = |en: String, zh: String| lines.push(if zh_lang { zh } else { en });
    if e.kind == "disk-low" {
        let path = text(f, "path").unwrap_or("?");
        line(
            format!("Watched path: {path}"),
            format!("监视的路径：{path}"),
        );
        line(
            "What to do: free room on that file system (delete or move old outputs, \
             checkpoints, scratch); tasks that hit ENOSPC are held as disk-full and go back \
             to the queue by themselves once there is room"
                .into(),
            "提示：请在该文件系统上腾出空间（删除或移走旧的输出、检查点、临时文件）；\
             因磁盘已满（ENOSPC）失败的任务会以 disk-full 暂停，有空间后自动重新排队"
                .into(),
        );
    }
    if let Some(class) = text(f, "class").filter(|c| *c != "ok") {
        let exit = f
            .get("exit_code")
            .and_then(Value::as_i64)
            .map(|c| format!(", exit {c}"))
            .unwrap_or_default();
        line(
            format!("Outcome: {class}{exit}"),
            format!("结果：{class}{exit}"),
        );
    }
    if let Some(hint) = text(f, "hint").filter(|_| e.kind != "disk-low") {
        line(format!("What to do: {hint}"), format!("提示：{hint}"));
    }
    if let Some(reason) = text(f, "reason").filter(|r| Some(*r) != text(f, "hint")) {
        line(format!("Now: {reason}"), format!("当前：{reason}"));
    }
    if let Some(ms) = f.get("duration_ms").and_then(Value::as_i64) {
        line(
            format!("Ran: {}", span(ms)),
            format!("运行时长：{}", span(ms)),
        );
    }
    if let Some(ms) = f.get("waited_ms").and_then(Value::as_i64) {
        line(
            format!("Waited: {}", span(ms)),
            format!("等待：{}", span(ms)),
        );
    }
    if let Some(g) = text(f, "gpus") {
        let peak = f
            .get("gpu_peak_bytes")
            .and_then(Value::as_u64)
            .map(|b| bytesize::ByteSize::b(b).display().iec_short().to_string());
        match peak {
            Some(p) => line(
                format!("GPUs: {g}, peak memory {p}"),
                format!("GPU：{g}，显存峰值 {p}"),
            ),
            None => line(format!("GPUs: {g}"), format!("GPU：{g}")),
        }
    }
    if let Some(n) = f.get("findings").and_then(Value::as_u64).filter(|n| *n > 0) {
        line(
            format!("Validator findings: {n}"),
            format!("校验发现：{n} 条"),
        );
    }
    if let Some(err) = stderr.filter(|s| !s.trim().is_empty()) {
        line(
            format!("Last lines of stderr:\n{}", err.trim_end()),
            format!("stderr 最后几行：\n{}", err.trim_end()),
        );
    }
    if let Some(t) = e.task {
        line(
            format!("More: nightjar show {t}"),
            format!("详情：nightjar show {t}"),
        );
    }
    (title, lines.join("\n"))
}

/// A `disk-low` event's title: the file system, its free and total space.
fn disk_low_title(f: &Map<String, Value>, zh: bool, host: &str) -> String {
    let size = |key: &str| {
        f.get(key)
            .and_then(Value::as_u64)
            .map(|b| bytesize::ByteSize::b(b).display().iec_short().to_string())
            .unwrap_or_else(|| "?".into())
    };
    let mount = text(f, "mount").or(text(f, "path")).unwrap_or("?");
    let (free, total) = (size("free_bytes"), size("total_bytes"));
    if zh {
        format!("nightjar（{host}）磁盘空间不足：{mount} 剩余 {free}（共 {total}）")
    } else {
        format!("nightjar on {host}: low disk space on {mount}: {free} free of {total}")
    }
}

/// The last [`STDERR_LINES`] lines (at most [`STDERR_BYTES`]) of `tail`.
pub fn last_lines(tail: &str) -> String {
    let lines: Vec<&str> = tail.lines().collect();
    let kept = lines[lines.len().saturating_sub(STDERR_LINES)..].join("\n");
    if kept.len() <= STDERR_BYTES {
        return kept;
    }
    let mut start = kept.len() - STDERR_BYTES;
    while !kept.is_char_boundary(start) {
        start += 1;
    }
    format!("…{}", &kept[start..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::outbox::Severity;

    fn failed() -> OutboxEvent {
        OutboxEvent {
            id: 7,
            at: 0,
            kind: "task-failed".into(),
            severity: Severity::Error,
            task: Some(12),
            run: Some(3),
            project: Some("vision".into()),
            facts: serde_json::json!({
                "name": "train", "class": "gpu-oom", "exit_code": 1,
                "hint": "its output says `CUDA out of memory`", "duration_ms": 125_000,
                "waited_ms": 3_600_000, "gpus": "0,1", "gpu_peak_bytes": 15_032_385_536u64,
            })
            .as_object()
            .cloned()
            .unwrap_or_default(),
        }
    }

    #[test]
    fn a_failure_says_what_happened_and_what_to_do_in_either_language() {
        let (title, text) = render(
            &failed(),
            Language::En,
            "gpu1",
            Some("RuntimeError: CUDA out of memory"),
        );
        assert_eq!(title, "nightjar: train (task 12, vision) failed");
        for want in [
            "Outcome: gpu-oom, exit 1",
            "What to do: its output says",
            "Ran: 2m05s",
            "Waited: 1h00m",
            "GPUs: 0,1, peak memory 14.0G",
            "RuntimeError",
            "More: nightjar show 12",
        ] {
            assert!(text.contains(want), "{want}: {text}");
        }
        let (title, text) = render(&failed(), Language::Zh, "gpu1", None);
        assert_eq!(title, "nightjar：任务 train（#12，项目 vision）失败");
        assert!(
            text.contains("结果：gpu-oom, exit 1") && text.contains("详情：nightjar show 12"),
            "{text}"
        );
    }

    #[test]
    fn disk_low_names_the_file_system_its_room_and_what_to_do_in_either_language() {
        let e = OutboxEvent {
            id: 9,
            at: 0,
            kind: "disk-low".into(),
            severity: Severity::Warning,
            task: None,
            run: None,
            project: None,
            facts: serde_json::json!({
                "message": "low disk space on /data", "path": "/data/runs/a", "mount": "/data",
                "free_bytes": 3u64 << 30, "total_bytes": 100u64 << 30,
                "hint": "free room",
            })
            .as_object()
            .cloned()
            .unwrap_or_default(),
        };
        let (title, text) = render(&e, Language::En, "gpu1", None);
        assert!(
            title.starts_with("nightjar on gpu1: low disk space on /data: 3")
                && title.contains("free of 100"),
            "{title}"
        );
        assert!(
            text.contains("Watched path: /data/runs/a")
                && text.contains("What to do: free room")
                && text.contains("held as disk-full"),
            "{text}"
        );
        assert_eq!(text.matches("What to do").count(), 1, "{text}");
        let (title, text) = render(&e, Language::Zh, "gpu1", None);
        assert!(
            title.starts_with("nightjar（gpu1）磁盘空间不足：/data 剩余 3"),
            "{title}"
        );
        assert!(text.contains("提示：请在该文件系统上腾出空间") && text.contains("disk-full"));
        assert!(!text.contains("What to do"), "{text}");
    }

    #[test]
    fn stderr_is_cut_to_its_last_lines_at_a_character_boundary() {
        let tail: String = (0..50).map(|i| format!("第{i}行 错误\n")).collect();
        let kept = last_lines(&tail);
        assert!(
            kept.starts_with("第40行") && kept.ends_with("第49行 错误"),
            "{kept}"
        );
        let long = "错".repeat(2000);
        let kept = last_lines(&long);
        assert!(kept.len() <= STDERR_BYTES + 3 && kept.starts_with('…'));
    }
}
