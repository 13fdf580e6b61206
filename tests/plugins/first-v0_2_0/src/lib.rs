//! A scheduling policy built against the frozen 0.2.0 contract
//! (`wit/nightjar-plugin@0.2.0`, policies only, no `tariff` import) with
//! wit-bindgen directly, as the first 0.2 plugins were: the host must keep
//! loading it next to 0.1 and 0.2.1 plugins. It has no
//! `nightjar-api-version` section (no SDK wrote one).
//!
//! - a task of project `v020-first` is allowed with score 500, every other
//!   task with 0;
//! - a task of project `v020-held` is deferred ("held by the 0.2.0 plugin
//!   NAME", its name as the host loaded it);
//! - a config other than "" is refused, naming `mode`.

wit_bindgen::generate!({
    path: "../../../wit/nightjar-plugin@0.2.0",
    world: "scheduling-policy",
});

use exports::nightjar::plugin::policy::{
    Deferral, Evaluation, Guest, Snapshot, TaskVerdict, Verdict,
};
use nightjar::plugin::host;
use nightjar::plugin::types::ConfigError;

struct First;

/// The text at index `i` of the snapshot's string table ("" when out of range).
fn text(s: &Snapshot, i: u32) -> &str {
    let i = i as usize;
    let ends = &s.strings.ends;
    let Some(&end) = ends.get(i) else {
        return "";
    };
    let start = if i == 0 { 0 } else { ends[i - 1] };
    s.strings
        .chars
        .get(start as usize..end as usize)
        .unwrap_or("")
}

impl Guest for First {
    fn configure(config: String) -> Result<(), ConfigError> {
        if config.trim().is_empty() {
            return Ok(());
        }
        Err(ConfigError {
            key: Some("mode".into()),
            message: format!("the 0.2.0 test plugin takes no config, not {config:?}"),
        })
    }

    fn evaluate(s: Snapshot) -> Evaluation {
        let held = format!("held by the 0.2.0 plugin {}", host::plugin_name());
        let mut verdicts = Vec::with_capacity(s.queue.id.len());
        for (i, &project) in s.queue.project.iter().enumerate() {
            let verdict = match text(&s, project) {
                "v020-first" => Verdict::Allow(500),
                "v020-held" => Verdict::Defer(Deferral {
                    reason: 0,
                    until: None,
                }),
                _ => Verdict::Allow(0),
            };
            verdicts.push(TaskVerdict {
                task: i as u32,
                verdict,
            });
        }
        Evaluation {
            reasons: vec![held],
            verdicts,
            closed_gpus: Vec::new(),
            preempt: Vec::new(),
        }
    }
}

export!(First);
