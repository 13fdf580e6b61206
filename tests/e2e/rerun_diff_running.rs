//! `nightjar diff` of a run still running, secrets redacted in a diff, and
//! a diff too long to print cut.

use serde_json::Value;

use crate::harness::Nj;
use crate::rerun_diff::runs;

#[test]
fn diff_of_a_running_run_works_secrets_stay_redacted_and_a_long_diff_is_cut() {
    let mut nj = Nj::new("");
    nj.start();
    // Sixty output files whose content is the run's id: all differ.
    let many = nj.submit(&[
        "--env",
        "API_TOKEN=s3cret-token-1234",
        "--",
        "sh",
        "-c",
        "for i in $(seq 60); do echo $NIGHTJAR_RUN_ID > ${OUTPUT_PATH}/f$i; done",
    ]);
    assert_eq!(nj.wait(many), 0);
    let again = nj.json(&["rerun", &many.to_string()])["id"]
        .as_i64()
        .unwrap();
    assert_eq!(nj.wait(again), 0);
    let (a, b) = (runs(&nj, many)[0], runs(&nj, again)[0]);
    let text = nj.ok(&["diff", &a.to_string(), &b.to_string()]);
    let rows = text.lines().filter(|l| l.starts_with("outputs")).count();
    assert_eq!(rows, 50, "{text}");
    assert!(text.contains("... and 10 more difference(s)"), "{text}");
    let d = nj.json(&["diff", &a.to_string(), &b.to_string()]);
    assert_eq!(d["changes"].as_array().unwrap().len(), 60);

    // A run still running: diffed on its start manifest; a secret it lacks
    // or has is `<redacted>`, never its value.
    let slow = nj.submit(&["--", "sleep", "30"]);
    nj.until("the run's start manifest", || {
        nj.show(slow)["manifests"]["runs"]
            .as_array()
            .is_some_and(|r| !r.is_empty())
    });
    let running = runs(&nj, slow)[0];
    let out = nj.ok(&["--json", "diff", &a.to_string(), &running.to_string()]);
    assert!(!out.contains("s3cret-token-1234"), "{out}");
    let d: Value = serde_json::from_str(&out).unwrap();
    let token = d["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["what"] == "API_TOKEN")
        .expect("API_TOKEN row");
    assert_eq!(
        (&token["a"], &token["b"]),
        (&Value::from("<redacted>"), &Value::Null)
    );
    let notes = d["notes"].to_string();
    assert!(
        notes.contains(&format!(
            "run {running} has no output manifest (it has not ended"
        )),
        "{notes}"
    );
    nj.ok(&["cancel", &slow.to_string()]);
}
