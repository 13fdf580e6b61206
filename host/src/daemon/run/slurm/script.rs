//! The batch scripts of SLURM runs: a job of its own execs nightjar's
//! supervisor on its run folder; a job array's element finds its run
//! folder on its line of the batch's index first.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::folder::{INDEX, SCRIPT, SPEC, SPECS, Sampler, write_private};
use crate::daemon::run::executor::Launch;
use crate::gpu::node;
use crate::sandbox::launch::SupervisorCmd;

/// The script's lines that start a run on its node, the run folder being
/// `dir` (a quoted path, or `"$dir"`): for a GPU job with a `sampler`, the
/// node's sampler first, then `exec` of `supervisor` on the folder, its
/// spec read as `spec` says (`< FILE`, or `LINE < FILE`).
fn start_lines(
    supervisor: &SupervisorCmd,
    sampler: Option<&Sampler>,
    dir: &str,
    spec: &str,
) -> String {
    let quote = |p: &Path| shell_quote(&p.display().to_string());
    let mut command = vec![quote(&supervisor.program)];
    command.extend(supervisor.prefix.iter().map(|a| shell_quote(a)));
    command.push(dir.to_string());
    // `$$` is the shell's pid, which `exec` hands to the supervisor, whose
    // session and descendants are the run's processes. The sampler starts
    // detached (a subshell that leaves it behind), so it is not in the
    // supervisor's tree: the task's signals and the wait for its processes
    // do not reach it; SLURM ends it with the job.
    let sample = match sampler {
        Some(s) => format!(
            "({} {} {dir} $$ </dev/null >/dev/null 2>>{dir}/{} &)\n",
            quote(&s.program),
            node::VERB,
            shell_quote(node::LOG),
        ),
        None => String::new(),
    };
    format!("{sample}exec {} {spec}\n", command.join(" "))
}

/// Writes the batch script of `run` submitted as a job of its own (which
/// execs `supervisor` on its run folder, and for a GPU job sampled on its
/// node first starts `sampler` beside it); the script's path.
pub(super) fn run_script(
    supervisor: &SupervisorCmd,
    sampler: Option<&Sampler>,
    run: &Launch,
) -> Result<PathBuf> {
    let dir = shell_quote(&run.dir.display().to_string());
    let sampler = sampler.filter(|_| run.resources.gpus > 0);
    let script = format!(
        "#!/bin/sh\n# Run {} of task {}: nightjar's supervisor on the node SLURM picked.\n{}",
        run.run,
        run.spec.task_id,
        start_lines(
            supervisor,
            sampler,
            &dir,
            &format!("< {dir}/{}", shell_quote(SPEC))
        ),
    );
    let path = run.dir.join(SCRIPT);
    write_private(&path, script.as_bytes())?;
    Ok(path)
}

/// Makes the folder `dir` of batch `batch` (the runs in the folders
/// `runs`, all asking alike, become the elements of one job array, in this
/// order): the batch's [`INDEX`], and its script, whose element `i`
/// (SLURM's `SLURM_ARRAY_TASK_ID`) execs `supervisor` on the run folder on
/// the index's line `i + 1`, its spec line `i + 1` of [`SPECS`], as
/// [`run_script`] does for a run of its own (with the node's `sampler`
/// for GPU jobs). The script's path.
pub(super) fn batch_script(
    supervisor: &SupervisorCmd,
    sampler: Option<&Sampler>,
    dir: &Path,
    batch: i64,
    runs: &[&Path],
) -> Result<PathBuf> {
    // A batch id a fresh database used before (its runs' folders are gone
    // too): nothing of the old one is kept.
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).with_context(|| format!("make {}", dir.display()))?;
    let mut index = String::new();
    for run in runs {
        let path = run.display().to_string();
        // The index is read a line at a time; `shared_dir` refuses a
        // newline, and run folders are named by number under it.
        if path.contains('\n') {
            anyhow::bail!("run folder {path:?} holds a newline");
        }
        index.push_str(&path);
        index.push('\n');
    }
    write_private(&dir.join(INDEX), index.as_bytes())?;
    // Only the shell's builtins: `--export=NIL` leaves no PATH.
    let script = format!(
        "#!/bin/sh\n\
         # Batch {batch} of {n} runs: element i of this job array runs the run\n\
         # folder on line i + 1 of the index, with nightjar's supervisor.\n\
         i=0\n\
         dir=\n\
         while IFS= read -r line; do\n\
         \x20 if [ \"$i\" = \"$SLURM_ARRAY_TASK_ID\" ]; then dir=$line; break; fi\n\
         \x20 i=$((i + 1))\n\
         done < {index}\n\
         if [ -z \"$dir\" ]; then\n\
         \x20 echo \"nightjar: no run folder for array index $SLURM_ARRAY_TASK_ID in \"{index} >&2\n\
         \x20 exit 1\n\
         fi\n\
         {start}",
        n = runs.len(),
        index = shell_quote(&dir.join(INDEX).display().to_string()),
        start = start_lines(
            supervisor,
            sampler,
            "\"$dir\"",
            &format!(
                "\"$SLURM_ARRAY_TASK_ID\" < {}",
                shell_quote(&dir.join(SPECS).display().to_string())
            )
        ),
    );
    let path = dir.join(SCRIPT);
    write_private(&path, script.as_bytes())?;
    Ok(path)
}

/// `s` in single quotes for sh.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

#[cfg(test)]
#[path = "script_tests.rs"]
mod tests;
