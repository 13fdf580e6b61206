use super::private::{configure_into, deliver_with};
use super::*;
use crate::__private::ConfigSlot;
use crate::http;
use crate::testing::{HttpMock, event};

#[derive(serde::Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct Config {
    url: String,
}

/// POSTs the events' ids, comma-separated, in one request.
struct Ids;

impl Notifier for Ids {
    type Config = Config;
    fn deliver(c: &Config, events: &[Event]) -> Result<(), DeliveryError> {
        let ids: Vec<String> = events.iter().map(|e| e.id.to_string()).collect();
        http::post_json(&c.url, [("x", "y")], ids.join(","))?.check()
    }
    fn check_config(c: &Config) -> Result<(), ConfigError> {
        if !c.url.starts_with("https://") {
            return Err(ConfigError::at("url", "must start with https://"));
        }
        Ok(())
    }
}

#[test]
fn configure_parses_then_checks() {
    assert_eq!(
        Ids::configure("url = \"http://x\"")
            .unwrap_err()
            .key
            .as_deref(),
        Some("url")
    );
    assert_eq!(
        Ids::configure("url = \"https://x\"\nulr = 1")
            .unwrap_err()
            .key
            .as_deref(),
        Some("ulr")
    );
    assert!(Ids::configure("url = \"https://x\"").is_ok());
}

#[test]
fn deliver_uses_the_kept_config_and_passes_errors_through() {
    let mock = HttpMock::install();
    mock.reply(200, "").reply(429, "slow down");
    let slot = ConfigSlot::new();
    configure_into::<Ids>(&slot, "url = \"https://hook.example/a\"").unwrap();
    assert!(configure_into::<Ids>(&slot, "url = \"ftp://x\"").is_err());
    deliver_with::<Ids>(&slot, &[event(1, "test"), event(2, "test")]).unwrap();
    let e = deliver_with::<Ids>(&slot, &[event(3, "test")]).unwrap_err();
    assert_eq!(e, DeliveryError::transient("HTTP 429: slow down"));
    let sent = mock.requests();
    assert_eq!(
        sent[0].url, "https://hook.example/a",
        "a refused config changes nothing"
    );
    assert_eq!(sent[0].text(), "1,2");
}

#[test]
fn no_events_send_nothing_and_no_config_is_transient() {
    let mock = HttpMock::install();
    let slot = ConfigSlot::<Config>::new();
    assert_eq!(deliver_with::<Ids>(&slot, &[]), Ok(()));
    let e = deliver_with::<Ids>(&slot, &[event(1, "test")]).unwrap_err();
    assert!(e.is_transient());
    assert!(e.message().contains("not configured"), "{e}");
    assert!(mock.requests().is_empty());
}

#[test]
fn events_read_their_fields_and_seconds() {
    let mut e = event(5, "task-failed");
    e.fields.push(Field {
        name: "class".into(),
        value: "oom".into(),
    });
    e.fields.push(Field {
        name: "class".into(),
        value: "second".into(),
    });
    assert_eq!(e.field("class"), Some("oom"));
    assert_eq!(e.field("hint"), None);
    assert_eq!(e.at_seconds(), 1_700_000_005);
    e.at = -1;
    assert_eq!(e.at_seconds(), -1);
    assert_eq!(e.severity, crate::Severity::Error);
}

#[test]
fn truncation_cuts_at_a_character_boundary_and_fits() {
    let zh = "任务失败:显存不足".repeat(50);
    for max in 0..60 {
        let t = truncate(&zh, max);
        assert!(t.len() <= max, "{max}: {}", t.len());
        if max >= 3 {
            assert!(t.ends_with(ELLIPSIS));
        }
    }
    assert_eq!(truncate("short", 5), "short");
    assert_eq!(truncate("", 0), "");
    assert_eq!(truncate("abcd", 2), "ab");
}

#[test]
fn errors_say_what_they_are() {
    let e = DeliveryError::permanent("bad key").map_message(|m| format!("wecom: {m}"));
    assert_eq!(e.to_string(), "permanent: wecom: bad key");
    assert!(!e.is_transient());
}

/// A notifier written before `check_config`: only the earlier `check`.
struct Earlier;

impl Notifier for Earlier {
    type Config = Config;
    fn deliver(_: &Config, _: &[Event]) -> Result<(), DeliveryError> {
        Ok(())
    }
    #[allow(deprecated)]
    fn check(c: &Config) -> Result<(), ConfigError> {
        Ids::check_config(c)
    }
}

#[test]
fn a_notifier_that_implements_only_the_earlier_check_is_still_checked() {
    let err = Earlier::configure("url = \"http://x\"").unwrap_err();
    assert_eq!(err.key.as_deref(), Some("url"));
    assert!(Earlier::configure("url = \"https://x\"").is_ok());
}
