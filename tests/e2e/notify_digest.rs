//! The digest: `nightjar notify digest` (and `[notify] digest`, whose
//! schedule is unit-tested in daemon/work/digest.rs) sums the runs of the period
//! into one event that reaches the notifiers subscribed to it.

use crate::harness::Nj;
use crate::notify::{Receiver, world};
use crate::plugin_config::start_fails;

#[test]
fn notify_digest_sums_the_runs_and_reaches_the_webhook() {
    let dir = tempfile::tempdir().unwrap();
    let r = Receiver::start(dir.path().join("got.jsonl"), None);
    let mut nj = world(r.port, "\"digest\"");
    nj.start();
    let good = nj.submit(&["--project", "vision", "--", "true"]);
    let bad = nj.submit(&[
        "--name",
        "prep",
        "--project",
        "nlp",
        "--",
        "sh",
        "-c",
        "exit 4",
    ]);
    nj.wait(good);
    nj.wait(bad);
    let out = nj.ok(&["notify", "digest"]);
    assert!(
        out.contains("digest of") && out.contains("written"),
        "{out}"
    );
    nj.until_slow("the digest", || {
        r.got()
            .iter()
            .any(|g| g["kind"] == "digest" && g["status"] == 204)
    });
    let got = r.got();
    let d = got.iter().find(|g| g["kind"] == "digest").unwrap();
    assert_eq!(d["valid"], true, "signed: {d}");
    assert_eq!(d["task"], serde_json::Value::Null);
    let title = d["title"].as_str().unwrap_or_default();
    assert!(title.contains("2 runs, 1 failed"), "{title}");
    let text = d["text"].as_str().unwrap_or_default();
    for want in [
        "Outcomes: app-error ×1, ok ×1",
        &format!("#{bad} prep (nlp): app-error"),
        "Project vision: 1 runs",
        "Now: 0 queued, 0 running, 0 held",
    ] {
        assert!(text.contains(want), "{want}\n{text}");
    }
    assert!(
        got.iter().all(|g| g["kind"] == "digest"),
        "subscribed to the digest only: {got:?}"
    );
    // The digest wrote the HTML report of its period and names it.
    let report = d["fields"]["report"].as_str().expect("a report field");
    let reports = nj.state.join("reports");
    assert!(
        report.starts_with(reports.to_str().unwrap()) && report.ends_with(".html"),
        "{report}"
    );
    assert!(text.contains(&format!("Report (HTML): {report}")), "{text}");
    let page = std::fs::read_to_string(report).unwrap();
    assert!(
        page.starts_with("<!DOCTYPE html>") && page.trim_end().ends_with("</html>"),
        "{page}"
    );
    assert!(page.contains("nightjar report"), "{page}");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(report).unwrap().permissions().mode();
    assert_eq!(mode & 0o077, 0, "the daemon user's only, like the database");
}

#[test]
fn a_bad_digest_schedule_or_mail_table_stops_the_start_naming_the_key() {
    let nj = Nj::new("[notify]\ndigest = \"every morning\"\n");
    let err = start_fails(&nj);
    assert!(
        err.contains("notify.digest") && err.contains("daily@"),
        "{err}"
    );
    let nj = Nj::new(
        "[mail]\nserver = \"smtp.example.org\"\ntls = \"none\"\nfrom = \"nj@example.org\"\n",
    );
    let err = start_fails(&nj);
    assert!(
        err.contains("mail.tls") && err.contains("loopback"),
        "{err}"
    );
    let nj = Nj::new(
        "[mail]\nserver = \"smtp.example.org\"\nfrom = \"nj@example.org\"\nuser = \"u\"\npassword = \"hunter22\"\n",
    );
    let err = start_fails(&nj);
    assert!(
        err.contains("mail.password") && !err.contains("hunter22"),
        "{err}"
    );
}
