//! Notifications through the first-party `webhook` notifier to a real
//! receiver on 127.0.0.1 (tests/e2e/webhook_receiver.py) that checks every
//! signature, from real runs: what a failure's message says, delivered in
//! order across a daemon killed with events pending or mid-send, a hanging
//! server, secrets cut out, and `notify test`. (A receiver that is down for
//! a while and a dead letter sent again are the in-process tier's:
//! `host/src/api/inproc/notify.rs`.)

use crate::harness::Nj;

pub(crate) use crate::webhook::{Receiver, SECRET, delivered, in_order_once};

/// A daemon with notifier `hook` sending `events` to `port`.
pub(crate) fn world(port: u16, events: &str) -> Nj {
    world_with(
        port,
        events,
        "retry = [\"300ms\", \"300ms\", \"300ms\", \"300ms\", \"300ms\", \"300ms\"]\n",
    )
}

/// A daemon with notifier `hook` sending `events` to `port`, its `[notify]`
/// table holding `notify` (TOML lines).
pub(crate) fn world_with(port: u16, events: &str, notify: &str) -> Nj {
    let mut nj = Nj::new(&format!(
        "[notify]\n{notify}\
         [notifier.hook]\nplugin = \"webhook\"\nurl = \"http://127.0.0.1:{port}/hook\"\n\
         allow = [\"127.0.0.1:{port}\"]\nevents = [{events}]\nsecrets = {{ signing = \"env:NJ_TEST_HOOK_SECRET\" }}\n"
    ));
    nj.env.push(("NJ_TEST_HOOK_SECRET".into(), SECRET.into()));
    nj
}

#[test]
fn a_failed_task_reaches_the_webhook_signed_once_with_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let r = Receiver::start(dir.path().join("got.jsonl"), None);
    let mut nj = world(r.port, "\"task-failed\", \"task-succeeded\"");
    nj.start();
    let bad = nj.submit(&[
        "--name",
        "train",
        "--",
        "sh",
        "-c",
        "echo 'KeyError: lr' >&2; exit 3",
    ]);
    let good = nj.submit(&["--", "true"]);
    nj.wait(bad);
    nj.wait(good);
    nj.until_slow("two deliveries", || delivered(&r).len() == 2);
    let got = r.got();
    let failed = got
        .iter()
        .find(|g| g["kind"] == "task-failed")
        .expect("task-failed");
    assert_eq!(failed["task"], bad);
    assert_eq!(failed["schema"], "nightjar.event.v1");
    let text = failed["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("Outcome: app-error, exit 3")
            && text.contains("KeyError: lr")
            && text.contains(&format!("nightjar show {bad}")),
        "{text}"
    );
    // The receiver logs before it answers; the count moves once the answer is in.
    nj.until_slow("notify ls counts both", || {
        nj.json(&["notify", "ls"])["notifiers"][0]["delivered"] == 2
    });
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(delivered(&r).len(), 2, "never sent twice");
}

#[test]
fn events_pending_when_the_daemon_is_killed_are_delivered_after_it_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("got.jsonl");
    // The receiver is not there yet: the port is taken then freed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut nj = world(port, "\"task-succeeded\"");
    nj.start();
    let ids: Vec<i64> = (0..3).map(|_| nj.submit(&["--", "true"])).collect();
    for id in &ids {
        nj.wait(*id);
    }
    nj.kill9();
    let r = Receiver::start(log, Some(port));
    nj.start();
    nj.until_slow("all three delivered", || delivered(&r).len() == 3);
    in_order_once(&r, &ids);
}

#[test]
fn notify_test_prints_the_servers_answer_and_a_host_off_the_allow_list_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let r = Receiver::start(dir.path().join("got.jsonl"), None);
    let mut nj = world(r.port, "\"task-failed\"");
    nj.start();
    let out = nj.ok(&["notify", "test", "hook"]);
    assert!(
        out.contains(&format!("POST http://127.0.0.1:{}/hook -> 204", r.port))
            && out.contains("delivered"),
        "{out}"
    );
    assert_eq!(r.got()[0]["kind"], "test");
    let missing = nj.cli(&["notify", "test", "nope"]);
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no notifier named `nope`"));

    let mut off = Nj::new(&format!(
        "[notifier.hook]\nplugin = \"webhook\"\nurl = \"http://127.0.0.1:{}/hook\"\nallow = [\"hooks.example.org\"]\n",
        r.port
    ));
    off.start();
    let out = off.cli(&["notify", "test", "hook"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !out.status.success() && text.contains("allow-list"),
        "{text}"
    );
}

#[test]
fn a_daemon_killed_during_a_send_repeats_only_that_delivery_with_the_same_key() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("got.jsonl");
    let r = Receiver::start(log.clone(), None);
    let hold = log.with_extension("jsonl.hold");
    std::fs::write(&hold, "").unwrap();
    let mut nj = world(r.port, "\"task-succeeded\"");
    nj.start();
    let id = nj.submit(&["--", "true"]);
    nj.wait(id);
    nj.until_slow("the send is in flight", || r.got().len() == 1);
    nj.kill9();
    std::fs::remove_file(&hold).unwrap();
    nj.start();
    let second = nj.submit(&["--", "true"]);
    nj.wait(second);
    nj.until_slow("the in-flight event again, then the next", || {
        r.got().len() == 3
    });
    let keys: Vec<String> = r
        .got()
        .iter()
        .map(|g| g["key"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        keys[0], keys[1],
        "the same delivery, with its key: {keys:?}"
    );
    assert_ne!(keys[1], keys[2], "{keys:?}");
    assert_eq!(r.got()[2]["task"], second);
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(r.got().len(), 3, "nothing else repeated");
}

#[test]
fn a_secret_in_a_task_name_or_its_stderr_is_cut_out_of_the_message() {
    let dir = tempfile::tempdir().unwrap();
    let r = Receiver::start(dir.path().join("got.jsonl"), None);
    let mut nj = world(r.port, "\"task-failed\"");
    nj.start();
    let id = nj.submit(&[
        "--name",
        &format!("leak-{SECRET}"),
        "--",
        "sh",
        "-c",
        &format!("echo 'token={SECRET}' >&2; exit 1"),
    ]);
    nj.wait(id);
    nj.until_slow("delivered", || delivered(&r).len() == 1);
    let all = std::fs::read_to_string(dir.path().join("got.jsonl")).unwrap();
    assert!(!all.contains(SECRET), "{all}");
    assert!(all.contains("token=<redacted>"), "{all}");
}

#[test]
fn retrying_a_dead_letter_of_a_notifier_no_longer_configured_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let r = Receiver::start(dir.path().join("got.jsonl"), None);
    r.answer(Some(400));
    let mut nj = world(r.port, "\"task-failed\"");
    nj.start();
    let id = nj.submit(&["--", "false"]);
    nj.wait(id);
    nj.until_slow("a dead letter", || {
        nj.json(&["notify", "ls"])["dead"]
            .as_array()
            .is_some_and(|d| !d.is_empty())
    });
    let dead = nj.json(&["notify", "ls"])["dead"][0]["id"].to_string();
    nj.term();
    let text = std::fs::read_to_string(&nj.config).unwrap();
    let cut = text.find("[notifier.hook]").expect("the notifier's table");
    std::fs::write(&nj.config, &text[..cut]).unwrap();
    nj.start();
    let out = nj.cli(&["notify", "retry", &dead]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("notifier `hook`") && err.contains("[notifier.hook]"),
        "{err}"
    );
    assert_eq!(nj.json(&["notify", "ls"])["dead"][0]["state"], "dead");
}

#[test]
fn a_notifier_whose_server_hangs_delays_no_other_notifiers_delivery() {
    let dir = tempfile::tempdir().unwrap();
    let slow = Receiver::start(dir.path().join("slow.jsonl"), None);
    let good = Receiver::start(dir.path().join("good.jsonl"), None);
    // The slow server logs each request and never answers within the
    // deadline (30 s a call); its notifier sorts first.
    slow.hold(true);
    let (sp, gp) = (slow.port, good.port);
    let mut nj = Nj::new(&format!(
        "[notify]\nhttp_timeout = \"30s\"\ntimeout = \"30s\"\nretry = [\"300ms\"]\n\
         [notifier.a-slow]\nplugin = \"webhook\"\nurl = \"http://127.0.0.1:{sp}/hook\"\n\
         allow = [\"127.0.0.1:{sp}\"]\nevents = [\"task-succeeded\"]\nsecrets = {{ signing = \"env:NJ_TEST_HOOK_SECRET\" }}\n\
         [notifier.b-good]\nplugin = \"webhook\"\nurl = \"http://127.0.0.1:{gp}/hook\"\n\
         allow = [\"127.0.0.1:{gp}\"]\nevents = [\"task-succeeded\"]\nsecrets = {{ signing = \"env:NJ_TEST_HOOK_SECRET\" }}\n"
    ));
    nj.env.push(("NJ_TEST_HOOK_SECRET".into(), SECRET.into()));
    nj.start();
    // The first delivery may wait for the webhook plugin's first compile.
    let first = nj.submit(&["--", "true"]);
    nj.wait(first);
    nj.until_slow("the good server has the first event", || {
        delivered(&good).len() == 1
    });
    nj.until("the slow server is holding a request", || {
        !slow.got().is_empty()
    });
    // While the slow one holds its lane for 30 s, the good one keeps up.
    let more: Vec<i64> = (0..3).map(|_| nj.submit(&["--", "true"])).collect();
    for &id in &more {
        nj.wait(id);
    }
    nj.until(
        "the good server has every event while the slow one hangs",
        || delivered(&good).len() == 4,
    );
    slow.hold(false);
}
