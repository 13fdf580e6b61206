//! A scheduling policy built against the frozen 0.1 contract
//! (`wit/nightjar-plugin@0.1.0`) with wit-bindgen directly, as the lab's
//! existing `.wasm` files were: the host must keep loading it next to 0.2
//! plugins. It has no `nightjar-api-version` section (0.1 files have none).
//!
//! - a task of project `legacy-first` is allowed with score 1000, every
//!   other task with 0;
//! - a task of project `legacy-held` is deferred ("held by the 0.1 plugin
//!   NAME", its name as the host loaded it);
//! - a config other than "" or `mode = "ok"` is refused, naming `mode`.

wit_bindgen::generate!({
    path: "../../../wit/nightjar-plugin@0.1.0",
    world: "scheduling-policy",
});

use exports::nightjar::plugin::policy::{
    Deferral, Evaluation, Guest, Snapshot, TaskVerdict, Verdict,
};
use nightjar::plugin::host;
use nightjar::plugin::types::{ConfigError, Level};

struct Legacy;

impl Guest for Legacy {
    fn configure(config: String) -> Result<(), ConfigError> {
        let config = config.trim();
        if config.is_empty() || config == "mode = \"ok\"" {
            return Ok(());
        }
        Err(ConfigError {
            key: Some("mode".into()),
            message: format!("the 0.1 test plugin takes no config, not {config:?}"),
        })
    }

    fn evaluate(s: Snapshot) -> Evaluation {
        let name = host::plugin_name();
        let mut verdicts = Vec::with_capacity(s.queue.len());
        for t in &s.queue {
            let verdict = match t.project.as_str() {
                "legacy-first" => Verdict::Allow(1000),
                "legacy-held" => Verdict::Defer(Deferral {
                    reason: format!("held by the 0.1 plugin {name}"),
                    until: None,
                }),
                _ => Verdict::Allow(0),
            };
            verdicts.push(TaskVerdict {
                task: t.id,
                verdict,
            });
        }
        host::log(
            Level::Debug,
            &format!("{} verdicts from a 0.1 plugin", verdicts.len()),
        );
        Evaluation {
            verdicts,
            closed_gpus: Vec::new(),
            preempt: Vec::new(),
        }
    }
}

export!(Legacy);
