//! Checkpoint resume end to end: a real script that saves a checkpoint every
//! second is preempted by fair share, saves on its own signal, and its next
//! run starts from the step the newest complete checkpoint holds; a retry
//! of a failed shell command resumes the same way.

use std::path::Path;

use crate::harness::{Nj, read};
use crate::policies::world;

/// Saves `ckpt/step-NNNN.ckpt` (the step inside) every second, atomically
/// (a hidden temporary file renamed into place) and then its `.done`
/// marker. On SIGUSR1 it saves once more, leaves a torn newer file without a
/// marker (as a save cut short would), and exits. Resumed, it runs three
/// more steps and ends.
const TRAIN: &str = r#"step=0
if [ "$1" = "--resume-from" ]; then
  step=$(cat "$2")
  echo "resumed from step $step"
else
  echo "fresh start"
fi
save() {
  name=$(printf 'ckpt/step-%04d.ckpt' "$step")
  echo "$step" > ckpt/.tmp
  mv ckpt/.tmp "$name"
  touch "$name.done"
}
trap 'save; echo torn > "$(printf "ckpt/step-%04d.ckpt" $((step + 1)))"; echo "preempted at step $step"; exit 0' USR1
end=100000
if [ -n "$2" ]; then end=$((step + 3)); fi
while [ "$step" -lt "$end" ]; do
  step=$((step + 1))
  save
  sleep 1
done
echo "finished at step $step"
"#;

const TASK: &str = r#"name = "trainer"
project = "hog"
command = ["sh", "train.sh"]
preemptible = true
checkpoint = { pattern = "ckpt/step-*.ckpt", resume = "--resume-from ${CHECKPOINT}", marker = "{}.done", signal = "USR1", grace = "30s" }
"#;

fn stdout_of(run: &serde_json::Value) -> String {
    read(&Path::new(run["run_dir"].as_str().unwrap()).join("stdout.log"))
}

#[test]
fn a_preempted_task_saves_on_its_signal_and_resumes_from_its_newest_complete_checkpoint() {
    let mut nj = world(
        "[plugins]\nchain = [\"fair-share\"]\npreempt_min_runtime = \"100ms\"\n[plugin.fair-share.config]\npreempt_below = 0.5\n",
    );
    nj.start();
    let work = nj.path("work");
    std::fs::write(work.join("train.sh"), TRAIN).unwrap();
    std::fs::write(work.join("trainer.toml"), TASK).unwrap();
    // A checkpoint from before: a first attempt never resumes.
    std::fs::create_dir_all(work.join("ckpt")).unwrap();
    std::fs::write(work.join("ckpt/step-0000.ckpt"), "0\n").unwrap();
    std::fs::write(work.join("ckpt/step-0000.ckpt.done"), "").unwrap();
    let hog = nj.json(&["submit", "trainer.toml"])[0]["id"]
        .as_i64()
        .unwrap();
    nj.until("two checkpoints saved", || {
        work.join("ckpt/step-0002.ckpt.done").exists()
    });
    let starved = nj.submit(&["--project", "starved", "--", "true"]);
    assert_eq!(nj.wait(starved), 0, "the starved project gets the slot");
    assert_eq!(nj.wait(hog), 0, "{}", nj.daemon_log());

    let shown = nj.show(hog);
    let runs = shown["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "{shown}");
    assert_eq!(runs[0]["class"], "preempted", "{shown}");
    assert!(runs[0]["checkpoint"].is_null(), "{shown}");
    let first = stdout_of(&runs[0]);
    assert!(first.starts_with("fresh start"), "{first}");
    let saved: u32 = first
        .lines()
        .find_map(|l| l.strip_prefix("preempted at step "))
        .unwrap_or_else(|| panic!("the task saved on SIGUSR1: {first}"))
        .parse()
        .unwrap();
    assert!(saved >= 2, "{first}");

    // The torn step after it had no marker: the marked one is resumed from.
    let expected = work.join(format!("ckpt/step-{saved:04}.ckpt"));
    assert_eq!(read(&expected).trim(), saved.to_string());
    assert!(
        work.join(format!("ckpt/step-{:04}.ckpt", saved + 1))
            .exists()
    );
    let second = stdout_of(&runs[1]);
    assert!(
        second.starts_with(&format!("resumed from step {saved}\n")),
        "{second}"
    );
    assert!(
        second.contains(&format!("finished at step {}", saved + 3)),
        "{second}"
    );
    let resumed = runs[1]["checkpoint"].as_str().unwrap();
    assert_eq!(
        std::fs::canonicalize(resumed).unwrap(),
        std::fs::canonicalize(&expected).unwrap()
    );
    let human = nj.ok(&["show", &hog.to_string()]);
    assert!(
        human.contains(&format!("resumed from {resumed}")),
        "{human}"
    );
    assert!(
        shown["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["kind"] == "checkpoint"),
        "{shown}"
    );
}

#[test]
fn a_retried_shell_command_resumes_with_the_path_quoted() {
    let mut nj = Nj::new("");
    nj.start();
    // A space in the folder: the path must reach the script as one word.
    let work = nj.path("work/my work");
    std::fs::write(
        work.join("step.sh"),
        "if [ \"$1\" = --from ]; then echo \"resumed at $(cat \"$2\") from $2\"; exit 0; fi\n\
         mkdir -p ckpt; echo 7 > ckpt/.t; mv ckpt/.t ckpt/a.ckpt; exit 3\n",
    )
    .unwrap();
    std::fs::write(
        work.join("retry.toml"),
        "command = \"sh step.sh\"\n[retry]\nmax_attempts = 2\nbackoff = \"0s\"\non = [\"app-error\"]\n[checkpoint]\npattern = \"ckpt/*.ckpt\"\nresume = \"--from ${CHECKPOINT}\"\nsettle = \"0s\"\n",
    )
    .unwrap();
    let id = nj.json(&["submit", "my work/retry.toml"])[0]["id"]
        .as_i64()
        .unwrap();
    assert_eq!(nj.wait(id), 0, "{}", nj.daemon_log());
    let shown = nj.show(id);
    let runs = shown["runs"].as_array().unwrap();
    assert_eq!(runs[0]["exit_code"], 3, "{shown}");
    let path = runs[1]["checkpoint"].as_str().unwrap();
    assert!(path.ends_with("my work/ckpt/a.ckpt"), "{shown}");
    assert_eq!(
        stdout_of(&runs[1]).trim(),
        format!("resumed at 7 from {path}")
    );
}
