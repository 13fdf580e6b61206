//! A succeeded run's output manifest: every regular file of its output
//! folder with size and sha256 (the walk the validators already made, or a
//! walk now), kept in the database and as `outputs.json` in the run folder.
//! Blocking: called while a run's end is judged, off the runtime.

use std::path::Path;

use crate::daemon::state::Daemon;
use crate::postrun::manifest;
use crate::sandbox::files::RunAs;
use crate::time::now_ms;
use nightjar_core::api::outputs::{FILE, FORMAT, OutputManifest};

impl Daemon {
    /// The output manifest of run `run` whose output folder is `output`
    /// (none: the run had no output folder); `walked` is the validators'
    /// walk of it, when they made one; `who` the run's owner, as whom it
    /// is walked (or why nothing of theirs may be read).
    pub(in crate::daemon) fn output_manifest(
        &self,
        run: i64,
        output: Option<&Path>,
        walked: Option<manifest::Manifest>,
        who: Result<&Option<RunAs>, &String>,
    ) -> Option<OutputManifest> {
        let output = output?;
        let mut m = OutputManifest {
            format: FORMAT.into(),
            run,
            folder: output.to_path_buf(),
            captured_at: now_ms(),
            files: Vec::new(),
            omitted: 0,
            skipped: Vec::new(),
            note: None,
        };
        let walked = match walked {
            Some(w) => Ok(w),
            None => who.map_err(String::clone).and_then(|who| {
                crate::privsep::as_owner(who.as_ref(), |_| {
                    manifest::walk(output).map_err(|e| e.to_string())
                })
                .and_then(|r| r)
            }),
        };
        match walked {
            Ok(w) => {
                m.files = w.files;
                m.omitted = w.omitted;
                m.skipped = w.skipped;
            }
            Err(e) => m.note = Some(format!("the output folder was not hashed: {e}")),
        }
        let rel = Path::new("runs").join(run.to_string()).join(FILE);
        let written = serde_json::to_vec_pretty(&m)
            .map_err(std::io::Error::other)
            .and_then(|bytes| self.state.write(&rel, &bytes));
        if let Err(e) = written {
            tracing::warn!("run {run}: cannot write {}: {e}", rel.display());
        }
        Some(m)
    }
}
