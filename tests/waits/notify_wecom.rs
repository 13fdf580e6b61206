//! The first-party `wecom` notifier against a WeChat Work bot played by a
//! real HTTP server on 127.0.0.1 (tests/e2e/wecom_mock.py): 200 failures in
//! a minute arrive as at most 20 messages (rate 20 a minute, the rest as
//! summaries), none lost, within WeCom's byte limits, after a 45009 answer
//! (rate limit, transient) to the first; markup in a sweep value (part of
//! each member's name) arrives as text, never as a mention.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use crate::harness::Nj;

struct Bot {
    child: Child,
    port: u16,
    log: std::path::PathBuf,
}

impl Drop for Bot {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn bot(log: std::path::PathBuf) -> Bot {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/e2e/wecom_mock.py");
    let mut child = Command::new("python3")
        .arg(script)
        .arg(&log)
        .arg("bot-key-5678")
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs the bot");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("port");
    Bot {
        child,
        port: line.trim().parse().expect("a port"),
        log,
    }
}

fn got(b: &Bot) -> Vec<Value> {
    std::fs::read_to_string(&b.log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[test]
fn two_hundred_failures_arrive_as_at_most_twenty_messages_with_none_lost() {
    let dir = tempfile::tempdir().unwrap();
    let b = bot(dir.path().join("bot.jsonl"));
    let mut nj = Nj::new(&format!(
        "slots = 8\n[notify]\nlanguage = \"zh\"\nretry = [\"300ms\", \"300ms\", \"300ms\"]\n\
         [notifier.group]\nplugin = \"wecom\"\nurl = \"http://127.0.0.1:{p}/cgi-bin/webhook/send\"\n\
         allow = [\"127.0.0.1:{p}\"]\nevents = [\"task-failed\"]\nrate_per_minute = 20\n\
         secrets = {{ key = \"env:NJ_TEST_WECOM_KEY\" }}\n",
        p = b.port
    ));
    nj.env
        .push(("NJ_TEST_WECOM_KEY".into(), "bot-key-5678".into()));
    nj.start();
    let file = nj.path("tasks").join("many.toml");
    let list: Vec<String> = (0..200).map(|i| i.to_string()).collect();
    std::fs::write(
        &file,
        format!(
            "name = \"many\"\ncommand = \"echo ${{i}} >&2; exit 1\"\n[sweep]\ni = [{}]\ntag = [\"**x** <@all>\"]\n",
            list.join(", ")
        ),
    )
    .unwrap();
    let sweep = nj.submit(&[file.to_str().unwrap()]);
    nj.wait(sweep);
    nj.until_slow("every failure is in a delivered message", || {
        got(&b)
            .iter()
            .filter(|m| m["ok"] == true)
            .map(|m| m["events"].as_u64().unwrap_or(0))
            .sum::<u64>()
            == 200
    });
    let all = got(&b);
    assert!(
        all.iter().all(|m| m["problem"].is_null()),
        "shape and byte limits: {all:?}"
    );
    assert_eq!(all[0]["errcode"], 45009, "the first answer is a rate limit");
    let delivered: Vec<&Value> = all.iter().filter(|m| m["ok"] == true).collect();
    assert!(
        delivered.len() <= 20,
        "{} messages for 200 failures",
        delivered.len()
    );
    assert!(
        delivered
            .iter()
            .any(|m| m["content"].as_str().unwrap_or_default().contains("失败")),
        "the configured language: {delivered:?}"
    );
    // The member names carry `**x** <@all>`: shown as look-alikes.
    let contents: Vec<&str> = delivered
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default())
        .collect();
    assert!(
        contents
            .iter()
            .all(|c| !c.contains("<@all>") && !c.contains("**x**")),
        "no markup from a task's name: {contents:?}"
    );
    assert!(
        contents
            .iter()
            .any(|c| c.contains("tag=＊＊x＊＊ ＜@all>]")),
        "the name, escaped: {contents:?}"
    );
    // The bot logs before it answers; the count moves once the answer is in.
    nj.until_slow("notify ls counts all 200", || {
        nj.json(&["notify", "ls"])["notifiers"][0]["delivered"] == 200
    });
    let ls = nj.json(&["notify", "ls"]);
    assert!(
        !ls.to_string().contains("bot-key-5678"),
        "the key is redacted"
    );
}
