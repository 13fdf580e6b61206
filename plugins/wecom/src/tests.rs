use nightjar_sdk::http::{HttpError, Request};
use nightjar_sdk::testing::{HttpMock, event};
use nightjar_sdk::*;
use serde_json::Value;

use super::*;

const KEY: &str = "693a91f6-7xxx-4bc4-97a0-0ec2sifa5aaa";
const OK: &str = r#"{"errcode":0,"errmsg":"ok"}"#;

fn config(extra: &str) -> Config {
    let text = format!("secrets = {{ key = {KEY:?} }}\n{extra}");
    Wecom::configure(&text).unwrap_or_else(|e| panic!("{text}: {e:?}"))
}

fn key_of(text: &str) -> String {
    let e = Wecom::configure(text).expect_err(text);
    e.key
        .unwrap_or_else(|| panic!("{text}: no key in {}", e.message))
}

/// Delivers `events` with `c` (WeCom answering ok) and returns the one request.
fn sent(c: &Config, events: &[Event]) -> (Request, Value) {
    let mock = HttpMock::install();
    mock.reply(200, OK);
    Wecom::deliver(c, events).unwrap_or_else(|e| panic!("{e}"));
    let mut requests = mock.take_requests();
    assert_eq!(requests.len(), 1, "one delivery, one message");
    let r = requests.remove(0);
    let body = serde_json::from_slice(&r.body).expect("JSON");
    (r, body)
}

fn content(body: &Value) -> &str {
    let t = body["msgtype"].as_str().unwrap();
    body[t]["content"].as_str().unwrap()
}

fn chinese(id: i64, kind: &str) -> Event {
    Event {
        title: format!("任务 {id}(训练视觉模型)失败:显存不足,已重试两次"),
        text: "第 2 次尝试在 3 小时 12 分后因显存不足退出。\n建议:减小批大小,或申请 80GB 显存的 GPU。\n".repeat(60),
        ..event(id, kind)
    }
}

#[test]
fn configuration_errors_name_the_key() {
    assert_eq!(key_of(""), "secrets");
    assert_eq!(
        key_of("secrets = {}"),
        "secrets",
        "the SDK names the table a key is missing from"
    );
    assert_eq!(key_of("secrets = { key = \"\" }"), "secrets.key");
    let k = format!("secrets = {{ key = {KEY:?} }}\n");
    assert_eq!(key_of(&format!("{k}format = \"html\"")), "format");
    assert_eq!(key_of(&format!("{k}url = \"qyapi.weixin.qq.com\"")), "url");
    assert_eq!(key_of(&format!("{k}mentions = []")), "mentions");
    assert_eq!(
        key_of(&format!("{k}mention = {{ default = [\"@all\"] }}")),
        "mention.default[0]"
    );
    assert_eq!(
        key_of(&format!(
            "{k}mention = {{ projects = {{ vision = [\"lisi\", \"13800000000\"] }} }}"
        )),
        "mention.projects.vision[1]"
    );
    assert_eq!(
        key_of(&format!("{k}mention = {{ default = [\"a b\"] }}")),
        "mention.default[0]"
    );
    let e = Wecom::configure(&format!("{k}mention = {{ default = [\"@all\"] }}")).unwrap_err();
    assert!(e.message.contains("format = \"text\""), "{}", e.message);
    // Text messages take every kind of mention.
    config(
        "format = \"text\"\nmention = { default = [\"@all\"], projects = { vision = [\"13800000000\", \"lisi\"] } }",
    );
}

#[test]
fn one_event_is_one_markdown_message_to_the_keyed_url() {
    let c = config("");
    let mut e = event(7, "task-failed");
    e.text = "out of GPU memory\nhint: smaller batch\n".into();
    let (r, body) = sent(&c, &[e]);
    assert_eq!(r.method, "POST");
    assert_eq!(r.url, format!("{DEFAULT_URL}?key={KEY}"));
    assert_eq!(r.header_value("content-type"), Some("application/json"));
    assert_eq!(body["msgtype"], "markdown");
    assert_eq!(
        content(&body),
        "<font color=\"warning\">**task-failed #7**</font>\nout of GPU memory\nhint: smaller batch"
    );
    let c = config("url = \"https://proxy.example/wecom?via=lab\"\nformat = \"text\"");
    let (r, body) = sent(&c, &[event(8, "task-succeeded")]);
    assert_eq!(
        r.url,
        format!("https://proxy.example/wecom?via=lab&key={KEY}")
    );
    assert_eq!(
        body,
        serde_json::json!({"msgtype": "text", "text": {"content": "task-succeeded #8"}})
    );
}

#[test]
fn text_mentions_go_in_the_lists_by_project() {
    let c = config(
        "format = \"text\"\n[mention]\ndefault = [\"@all\"]\nprojects = { vision = [\"13800000000\", \"lisi\"], nlp = [\"lisi\"] }",
    );
    let (_, body) = sent(&c, &[event(1, "task-failed")]);
    assert_eq!(body["text"]["mentioned_list"], serde_json::json!(["lisi"]));
    assert_eq!(
        body["text"]["mentioned_mobile_list"],
        serde_json::json!(["13800000000"])
    );
    let other = Event {
        project: Some("protein".into()),
        ..event(2, "task-failed")
    };
    let (_, body) = sent(&c, std::slice::from_ref(&other));
    assert_eq!(body["text"]["mentioned_list"], serde_json::json!(["@all"]));
    assert!(body["text"].get("mentioned_mobile_list").is_none());
    let nlp = Event {
        project: Some("nlp".into()),
        ..event(3, "task-failed")
    };
    let (_, body) = sent(&c, &[event(1, "task-failed"), other, nlp]);
    assert_eq!(
        body["text"]["mentioned_list"],
        serde_json::json!(["lisi", "@all"])
    );
    assert_eq!(
        body["text"]["mentioned_mobile_list"],
        serde_json::json!(["13800000000"])
    );
    let none = config("format = \"text\"");
    let (_, body) = sent(&none, &[event(1, "test")]);
    assert!(body["text"].get("mentioned_list").is_none());
}

#[test]
fn markdown_mentions_close_the_content_and_survive_truncation() {
    let c = config(
        "mention = { default = [\"zhangsan\"], projects = { vision = [\"lisi\", \"wangwu\"] } }",
    );
    let (_, body) = sent(&c, &[event(1, "task-failed")]);
    assert!(
        content(&body).ends_with("\n<@lisi> <@wangwu>"),
        "{}",
        content(&body)
    );
    let (_, body) = sent(&c, &[chinese(1, "task-failed")]);
    let text = content(&body);
    assert!(text.len() <= 4096, "{}", text.len());
    assert!(text.ends_with("…\n<@lisi> <@wangwu>"), "{text}");
}

#[test]
fn long_chinese_text_is_cut_at_a_character_boundary_within_the_limits() {
    let long = chinese(1, "task-failed");
    assert!(long.text.len() > 6000, "{}", long.text.len());
    for (format, limit) in [("markdown", 4096), ("text", 2048)] {
        let c = config(&format!("format = {format:?}"));
        let (_, body) = sent(&c, std::slice::from_ref(&long));
        let text = content(&body);
        assert!(text.len() <= limit, "{format}: {}", text.len());
        assert!(
            text.len() > limit - 8,
            "{format}: uses the room: {}",
            text.len()
        );
        assert!(text.ends_with('…'), "{format}");
        assert!(text.contains("任务 1(训练视觉模型)失败"), "{format}");
    }
}

#[test]
fn a_summary_of_200_events_is_one_message_that_fits_and_counts_them_all() {
    let mut events: Vec<Event> = (1..=200)
        .map(|i| match i % 4 {
            0 => chinese(i, "task-succeeded"),
            1 => chinese(i, "task-failed"),
            _ => chinese(i, "task-retried"),
        })
        .collect();
    events[0].title = "很长的标题".repeat(100); // 1500 bytes: cut to one line's share
    for (format, limit) in [("markdown", 4096), ("text", 2048)] {
        let c = config(&format!("format = {format:?}"));
        let (_, body) = sent(&c, &events);
        let text = content(&body);
        assert!(text.len() <= limit, "{format}: {}", text.len());
        assert!(text.contains("(200)"), "{format}: {text}");
        assert!(
            text.contains("task-retried ×100 · task-failed ×50 · task-succeeded ×50"),
            "{format}: {text}"
        );
        let shown = text.lines().filter(|l| l.starts_with("- ")).count();
        assert!(shown >= 5, "{format}: {shown} lines");
        assert!(
            text.ends_with(&format!("\n… +{}", 200 - shown)),
            "{format}: the rest are counted: {text}"
        );
        assert!(text.contains("任务 2(训练视觉模型)"), "oldest first");
        assert!(
            !text.contains("已重试两次。\n"),
            "no event texts in a summary"
        );
    }
    // A few fit whole, with no overflow line.
    let c = config("format = \"text\"");
    let (_, body) = sent(&c, &events[1..4]);
    let text = content(&body);
    assert_eq!(text.lines().filter(|l| l.starts_with("- ")).count(), 3);
    assert!(!text.contains("… +"), "{text}");
}

#[test]
fn errcodes_and_statuses_sort_into_transient_and_permanent() {
    let c = config("");
    let one = [event(1, "test")];
    let mock = HttpMock::install();
    let cases: Vec<(Result<http::Response, HttpError>, Option<bool>)> = vec![
        (Ok(http::Response::new(200, OK)), None),
        (
            Ok(http::Response::new(
                200,
                r#"{"errcode":45009,"errmsg":"api freq out of limit"}"#,
            )),
            Some(true),
        ),
        (
            Ok(http::Response::new(
                200,
                r#"{"errcode":-1,"errmsg":"system busy"}"#,
            )),
            Some(true),
        ),
        (
            Ok(http::Response::new(
                200,
                r#"{"errcode":93000,"errmsg":"invalid webhook url"}"#,
            )),
            Some(false),
        ),
        (
            Ok(http::Response::new(
                200,
                r#"{"errcode":40008,"errmsg":"invalid message type"}"#,
            )),
            Some(false),
        ),
        (
            Ok(http::Response::new(200, "<html>proxy login</html>")),
            Some(false),
        ),
        (Ok(http::Response::new(502, "bad gateway")), Some(true)),
        (Ok(http::Response::new(404, "")), Some(false)),
        (Err(HttpError::Timeout), Some(true)),
        (Err(HttpError::Unreachable("reset".into())), Some(true)),
        (
            Err(HttpError::Denied(format!(
                "{DEFAULT_URL}?key={KEY}: qyapi.weixin.qq.com is not allow-listed"
            ))),
            Some(false),
        ),
    ];
    for (answer, transient) in cases {
        match &answer {
            Ok(r) => mock.respond(r.clone()),
            Err(e) => mock.fail(e.clone()),
        };
        let got = Wecom::deliver(&c, &one);
        match transient {
            None => assert_eq!(got, Ok(()), "{answer:?}"),
            Some(t) => {
                let e = got.expect_err("an error");
                assert_eq!(e.is_transient(), t, "{answer:?}: {e}");
                assert!(e.message().starts_with("wecom: "), "{e}");
                assert!(!e.message().contains(KEY), "the key is never shown: {e}");
            }
        }
    }
    mock.reply(200, r#"{"errcode":93000,"errmsg":"invalid webhook url"}"#);
    let e = Wecom::deliver(&c, &one).unwrap_err();
    assert!(
        e.message().contains("93000") && e.message().contains("invalid webhook url"),
        "{e}"
    );
}

#[test]
fn mobiles_userids_and_all_are_told_apart() {
    assert_eq!(Who::of("@all"), Who::All);
    assert_eq!(Who::of("13800000000"), Who::Mobile("13800000000"));
    assert_eq!(Who::of("+8613800000000"), Who::Mobile("+8613800000000"));
    assert_eq!(Who::of("zhangsan"), Who::User("zhangsan"));
    assert_eq!(Who::of("007"), Who::User("007"));
}

/// An event whose title and text carry markdown a user could have written.
fn hostile(id: i64) -> Event {
    Event {
        title: "train **x** [a](http://evil) <font color=\"info\">ok</font> <@all>".into(),
        text: "# Big\n> quoted\n`code` [b](http://evil) <@all>\nsnake_case ok".into(),
        ..event(id, "task-failed")
    }
}

#[test]
fn host_text_in_markdown_is_shown_never_read_as_markup() {
    let c = config("");
    let (_, body) = sent(&c, &[hostile(1)]);
    assert_eq!(
        content(&body),
        "<font color=\"warning\">**train ＊＊x＊＊ [a］(http://evil) ＜font color=\"info\">ok＜/font> ＜@all>**</font>\n\
         ＃ Big\n＞ quoted\n｀code｀ [b］(http://evil) ＜@all>\nsnake_case ok"
    );
    // In a summary too: only the plugin's own markup is markup.
    let (_, body) = sent(&c, &[hostile(1), hostile(2)]);
    let text = content(&body);
    assert!(!text.contains("<@") && !text.contains("]("), "{text}");
    assert_eq!(text.matches("<font").count(), 2, "{text}");
    assert_eq!(text.matches("**").count(), 2, "{text}");
    // Plain text messages carry the host's words as they are.
    let (_, body) = sent(&config("format = \"text\""), &[hostile(1)]);
    assert!(content(&body).starts_with("train **x** [a](http://evil)"));
}

#[test]
fn configured_mentions_still_mention_while_a_named_one_does_not() {
    let c = config("mention = { default = [\"zhangsan\"], projects = { vision = [\"lisi\"] } }");
    let (_, body) = sent(&c, &[hostile(1)]);
    let text = content(&body);
    assert!(text.ends_with("\n<@lisi>"), "{text}");
    assert_eq!(
        text.matches("<@").count(),
        1,
        "only the configured one: {text}"
    );
}

#[test]
fn the_byte_limits_hold_after_escaping() {
    // Each `*` and `<` becomes 3 bytes: 3000 of them are 9000.
    let e = Event {
        title: "<".repeat(3000),
        text: "*".repeat(3000),
        ..event(1, "task-failed")
    };
    for (format, limit) in [("markdown", 4096), ("text", 2048)] {
        let c = config(&format!(
            "format = {format:?}\nmention = {{ default = [\"lisi\"] }}"
        ));
        let (_, body) = sent(&c, std::slice::from_ref(&e));
        let text = content(&body);
        assert!(text.len() <= limit, "{format}: {}", text.len());
        if format == "markdown" {
            assert!(
                text.contains("**</font>\n＊"),
                "the title is cut inside its markup: {text}"
            );
            assert!(text.ends_with("…\n<@lisi>"), "{text}");
        }
    }
    let many: Vec<Event> = (1..=200)
        .map(|i| Event {
            title: "<*>".repeat(200),
            ..event(i, "task-failed")
        })
        .collect();
    let (_, body) = sent(&config(""), &many);
    let text = content(&body);
    assert!(text.len() <= 4096, "{}", text.len());
    assert!(text.contains("… +"), "{text}");
}
