//! The task page's detail sections, for who may read them: where it runs
//! and writes (its workdir and output folder), what its last run left
//! (the output files with sizes and digests), what its runs ran (the
//! manifest's gist), the tail of its stderr, and a timeline of its runs.

use std::fmt::Write as _;

use super::call::call;
use super::layout::escape;
use crate::access::Caller;
use crate::api::Api;
use crate::api::Logs;
use crate::api::wire::TaskDetail;
use crate::time::now_ms;

/// Most runs the task's timeline draws (the newest; the rest are counted).
const MAX_LANES: usize = 64;

/// Most output files listed (the rest are counted).
const MAX_FILES: usize = 50;

/// How much of stderr's end is shown, bytes.
const STDERR_TAIL: u64 = 4096;

/// Where the task runs and writes.
pub fn folders(o: &mut String, t: &TaskDetail) {
    o.push_str("<h2 id=\"where\">Where</h2><dl class=\"kv\">");
    let _ = write!(
        o,
        "<dt>Workdir</dt><dd><code id=\"workdir\">{}</code></dd>",
        escape(&t.spec.workdir.display().to_string())
    );
    match &t.spec.output {
        Some(out) => {
            let _ = write!(
                o,
                "<dt>Output folder</dt><dd><code id=\"output\">{}</code></dd>",
                escape(out)
            );
        }
        None => o.push_str(
            "<dt>Output folder</dt><dd class=\"none\">none set (<code>output</code> in the task file)</dd>",
        ),
    }
    o.push_str("</dl>");
}

/// The newest run's output files, sizes and digests.
pub fn outputs(o: &mut String, t: &TaskDetail) {
    let Some(run) = t.runs.iter().rev().find(|r| r.outputs.manifest.is_some()) else {
        return;
    };
    let Some(m) = &run.outputs.manifest else {
        return;
    };
    let _ = write!(
        o,
        "<h2 id=\"outputs\">Output files</h2><p class=\"meta\">Run {} (attempt {}): {} file{}, {} in <code>{}</code>",
        run.id,
        run.attempt,
        m.files.len() + m.omitted as usize,
        if m.files.len() + m.omitted as usize == 1 {
            ""
        } else {
            "s"
        },
        escape(&bytesize::ByteSize(m.bytes()).to_string()),
        escape(&m.folder.display().to_string()),
    );
    if let Some(at) = run.outputs.removed_at {
        let _ = write!(
            o,
            "; removed by retention at {}",
            escape(&crate::time::fmt_local(at))
        );
    }
    if let Some(a) = &run.outputs.archive {
        let _ = write!(o, "; archive: {}", a.state.as_str());
        if let Some(p) = &a.path {
            let _ = write!(o, " at <code>{}</code>", escape(&p.display().to_string()));
        }
    }
    o.push_str(".</p>");
    if m.files.is_empty() {
        o.push_str("<p class=\"none\">no files</p>");
        return;
    }
    o.push_str(
        "<div class=\"scroll\"><table id=\"output-files\"><thead><tr><th>File</th>\
         <th class=\"num\">Size</th><th>sha256</th></tr></thead><tbody>",
    );
    for f in m.files.iter().take(MAX_FILES) {
        let short: String = f.sha256.chars().take(12).collect();
        let _ = write!(
            o,
            "<tr><td class=\"text\">{}</td><td class=\"num\">{}</td><td><code title=\"{}\">{}…</code></td></tr>",
            escape(&f.path),
            escape(&bytesize::ByteSize(f.size).to_string()),
            escape(&f.sha256),
            escape(&short),
        );
    }
    o.push_str("</tbody></table></div>");
    let more = m.files.len().saturating_sub(MAX_FILES) + m.omitted as usize;
    if more > 0 {
        let _ = write!(
            o,
            "<p class=\"meta\">and {more} more (<code>nightjar show {} --json</code> lists those the manifest holds)</p>",
            t.task.id
        );
    }
}

/// What the newest run ran (else what was asked at submit): code, inputs,
/// environment.
pub fn manifest(o: &mut String, t: &TaskDetail) {
    let Some(m) = t.manifests.runs.last().or(t.manifests.submit.as_ref()) else {
        return;
    };
    o.push_str("<h2 id=\"manifest\">What it ran</h2><dl class=\"kv\">");
    let git = &m.git;
    let code = match (&git.commit, &git.note) {
        (Some(c), _) => format!(
            "git {}{}{}",
            c.chars().take(12).collect::<String>(),
            git.branch
                .as_deref()
                .map(|b| format!(" on {b}"))
                .unwrap_or_default(),
            if git.dirty == Some(true) {
                ", with uncommitted changes"
            } else {
                ""
            }
        ),
        (None, Some(note)) => format!("git: {note}"),
        (None, None) => "no git commit".into(),
    };
    let _ = write!(
        o,
        "<dt>Code</dt><dd id=\"manifest-code\">{}</dd>",
        escape(&code)
    );
    let _ = write!(
        o,
        "<dt>Inputs</dt><dd>{} file{} hashed{}</dd>",
        m.inputs.len(),
        if m.inputs.len() == 1 { "" } else { "s" },
        if m.inputs_changed.is_empty() {
            String::new()
        } else {
            format!("; {} changed since submit", m.inputs_changed.len())
        }
    );
    if let Some(e) = &m.environment
        && let Some(id) = &e.image_id
    {
        let short: String = id.trim_start_matches("sha256:").chars().take(12).collect();
        let _ = write!(o, "<dt>Image</dt><dd><code>{}</code></dd>", escape(&short));
    }
    if let Some(p) = &m.python {
        let _ = write!(
            o,
            "<dt>Python</dt><dd>{} with {} package{}</dd>",
            escape(&p.kind),
            p.packages.len(),
            if p.packages.len() == 1 { "" } else { "s" }
        );
    }
    let _ = write!(
        o,
        "</dl><p class=\"meta\">All of it: <code>nightjar show {} --manifest</code></p>",
        t.task.id
    );
}

/// Whether `c` of a run's stderr is shown as it is: not a control
/// character (but a line feed or tab) and not a bidirectional-text control,
/// which would reorder what the page shows around it.
fn shown_as_is(c: char) -> bool {
    let bidi = matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    (!c.is_control() || c == '\n' || c == '\t') && !bidi
}

/// The last [`STDERR_TAIL`] bytes of the newest run's stderr.
pub async fn stderr(o: &mut String, d: &Api, caller: &Caller, t: &TaskDetail) {
    if t.runs.is_empty() {
        return;
    }
    let req = Logs {
        id: t.task.id,
        attempt: None,
        stderr: true,
        cursor: None,
        tail: Some(STDERR_TAIL),
    };
    o.push_str("<h2 id=\"stderr\">Stderr (its end)</h2>");
    match call(d, caller, req).await {
        Ok(chunk) => {
            let bytes = chunk.bytes();
            if bytes.is_empty() {
                o.push_str("<p class=\"none\" id=\"stderr-empty\">nothing on stderr</p>");
                return;
            }
            let text: String = String::from_utf8_lossy(&bytes)
                .chars()
                .map(|c| if shown_as_is(c) { c } else { '\u{fffd}' })
                .collect();
            let _ = write!(
                o,
                "<pre class=\"log\" id=\"stderr-tail\">{}</pre><p class=\"meta\">The last {} of run {} (attempt {}): <code>nightjar logs {} --stderr</code> has it all.</p>",
                escape(&text),
                escape(&bytesize::ByteSize(bytes.len() as u64).to_string()),
                chunk.run,
                chunk.attempt,
                t.task.id
            );
        }
        Err(e) => {
            let _ = write!(o, "<p class=\"error\">{}</p>", escape(&e.message));
        }
    }
}

/// A timeline of the task's runs: one lane per attempt, each bar coloured
/// by how it ended (a run in progress ends now).
pub fn timeline(o: &mut String, d: &Api, t: &TaskDetail) {
    use crate::report::timeline::{Bar, Timeline, draw, legend};
    if t.runs.is_empty() {
        return;
    }
    let now = now_ms();
    // The newest runs, the rest counted.
    let shown = &t.runs[t.runs.len().saturating_sub(MAX_LANES)..];
    let earlier = t.runs.len() - shown.len();
    let classes: Vec<String> = shown
        .iter()
        .map(|r| {
            r.class
                .map_or_else(|| "running".to_string(), |c| c.as_str().to_string())
        })
        .collect();
    let bars: Vec<Bar> = shown
        .iter()
        .zip(&classes)
        .enumerate()
        .map(|(i, (r, class))| Bar {
            lane: i as u32,
            start: r.started_at,
            end: r.finished_at.unwrap_or(now).max(r.started_at),
            group: class,
            failed: r.class.is_some_and(|c| c.as_str() != "ok"),
        })
        .collect();
    let from = bars.iter().map(|b| b.start).min().unwrap_or(now);
    let to = bars
        .iter()
        .map(|b| b.end)
        .max()
        .unwrap_or(now)
        .max(from + 60_000);
    let pad = (to - from) / 20;
    let drawn = draw(&Timeline {
        caption: "Its runs (a lane per attempt)",
        lanes: shown.len() as u32,
        lane_name: "attempt",
        lane_base: shown
            .first()
            .map_or(1, |r| u32::try_from(r.attempt).unwrap_or(1)),
        from: from - pad,
        to: to + pad,
        tz: d.config().tz(),
        bars: &bars,
        cheap: &[],
        max_bars: MAX_LANES,
        width: 800,
    });
    o.push_str("<h2 id=\"runs-timeline\">Timeline</h2>");
    match drawn {
        Ok(g) => {
            let failed = bars.iter().any(|b| b.failed);
            let cut = match earlier {
                0 => String::new(),
                n => format!(
                    " The newest {} runs; {n} earlier ones are not drawn.",
                    shown.len()
                ),
            };
            let _ = write!(
                o,
                "<figure id=\"task-timeline\">{}<figcaption>{}{cut}</figcaption></figure>",
                g.svg,
                legend(&g.groups, failed)
            );
        }
        Err(e) => {
            let _ = write!(o, "<p class=\"error\">{}</p>", escape(&e));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::shown_as_is;

    #[test]
    fn stderr_keeps_text_lines_and_tabs_but_not_controls_or_bidi_overrides() {
        let shown: String = "a\tb\nc\u{1b}[31m\u{202e}dcba\u{7}é"
            .chars()
            .map(|c| if shown_as_is(c) { c } else { '?' })
            .collect();
        assert_eq!(shown, "a\tb\nc?[31m?dcba?é");
    }
}
