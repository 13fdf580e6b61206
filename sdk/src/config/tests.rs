use std::collections::BTreeMap;

use serde::Deserialize;

use super::*;

#[derive(Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
struct Config {
    aging_per_hour: i32,
    weights: Weights,
    margin: Duration,
    windows: Vec<Window>,
    shares: BTreeMap<String, f64>,
    #[serde(deserialize_with = "string_list")]
    projects: Vec<String>,
}

#[derive(Debug, Deserialize, PartialEq, Default)]
#[serde(default, deny_unknown_fields)]
struct Weights {
    low: i32,
    high: i32,
}

#[derive(Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct Window {
    #[serde(default)]
    days: Days,
    start: TimeOfDay,
    end: TimeOfDay,
}

#[derive(Debug, Deserialize, PartialEq, Default)]
#[serde(rename_all = "lowercase")]
enum Days {
    #[default]
    All,
    Weekends,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            aging_per_hour: 10,
            weights: Weights::default(),
            margin: Duration::from_ms(0),
            windows: Vec::new(),
            shares: BTreeMap::new(),
            projects: Vec::new(),
        }
    }
}

fn key(text: &str) -> Option<String> {
    from_toml::<Config>(text).unwrap_err().key
}

#[test]
fn empty_text_gives_the_defaults_and_values_parse() {
    assert_eq!(from_toml::<Config>("").unwrap(), Config::default());
    let c: Config = from_toml(
        "margin = \"30m\"\nprojects = \"render, archive\"\n[[windows]]\nstart = \"23:00\"\nend = \"07:00\"\n",
    )
    .unwrap();
    assert_eq!(c.margin.ms(), 1_800_000);
    assert_eq!(c.projects, ["render", "archive"]);
    assert_eq!(c.windows[0].start.minute(), 23 * 60);
    assert_eq!(c.windows[0].days, Days::All);
    let c: Config = from_toml("projects = [\"a\", \"b\"]").unwrap();
    assert_eq!(c.projects, ["a", "b"]);
}

#[test]
fn a_wrong_type_names_the_key_at_every_depth() {
    assert_eq!(
        key("aging_per_hour = \"fast\"").as_deref(),
        Some("aging_per_hour")
    );
    assert_eq!(
        key("[weights]\nhigh = true\n").as_deref(),
        Some("weights.high")
    );
    assert_eq!(
        key("weights = { low = 1, high = \"x\" }").as_deref(),
        Some("weights.high")
    );
    assert_eq!(
        key("[[windows]]\nstart = \"01:00\"\nend = \"02:00\"\n[[windows]]\nstart = 3\nend = \"04:00\"\n")
            .as_deref(),
        Some("windows[1].start")
    );
    assert_eq!(
        key("[shares]\nvision = \"lots\"").as_deref(),
        Some("shares.vision")
    );
    assert_eq!(
        key("[shares]\n\"my lab\" = \"lots\"").as_deref(),
        Some("shares.\"my lab\"")
    );
    assert_eq!(key("projects = [\"a\", 2]").as_deref(), Some("projects[1]"));
    assert_eq!(
        key("weights.low = 1\nweights.high = 2.5").as_deref(),
        Some("weights.high")
    );
    assert_eq!(key("[colours]\nred = 1").as_deref(), Some("colours"));
}

#[test]
fn an_unknown_key_is_named_and_the_message_lists_the_known_ones() {
    let e = from_toml::<Config>("aging_per_hour = 5\ncolour = 1").unwrap_err();
    assert_eq!(e.key.as_deref(), Some("colour"));
    assert!(
        e.message.starts_with("unknown key `colour`"),
        "{}",
        e.message
    );
    assert!(e.message.contains("aging_per_hour"), "{}", e.message);
    assert_eq!(
        key("[weights]\nmedium = 1").as_deref(),
        Some("weights.medium")
    );
}

#[test]
fn a_bad_value_names_the_key_and_says_what_is_expected() {
    let e = from_toml::<Config>("margin = \"soon\"").unwrap_err();
    assert_eq!(e.key.as_deref(), Some("margin"));
    assert_eq!(
        e.message,
        "`soon` is not a duration like \"30s\", \"5m\", \"2h\" or \"1d\""
    );
    let e = from_toml::<Config>("[[windows]]\nstart = \"25:00\"\nend = \"07:00\"\n").unwrap_err();
    assert_eq!(e.key.as_deref(), Some("windows[0].start"));
    let e = from_toml::<Config>(
        "[[windows]]\ndays = \"fortnights\"\nstart = \"01:00\"\nend = \"07:00\"\n",
    )
    .unwrap_err();
    assert_eq!(e.key.as_deref(), Some("windows[0].days"));
    assert!(
        e.message.contains("expected `all` or `weekends`"),
        "{}",
        e.message
    );
}

#[test]
fn a_missing_key_names_its_table() {
    let e = from_toml::<Config>("[[windows]]\nstart = \"01:00\"\n").unwrap_err();
    assert_eq!(e.key.as_deref(), Some("windows[0]"));
    assert!(e.message.contains("missing key `end`"), "{}", e.message);
}

#[test]
fn text_that_is_not_toml_names_the_line() {
    let e = from_toml::<Config>("aging_per_hour = = 3").unwrap_err();
    assert_eq!(e.key.as_deref(), Some("aging_per_hour"));
    let e = from_toml::<Config>("\n\n[[[").unwrap_err();
    assert_eq!(e.key, None);
    assert!(
        e.message.ends_with("(at line 3 of the config)"),
        "{}",
        e.message
    );
}

#[test]
fn sizes_and_times_parse_and_refuse() {
    #[derive(Debug, Deserialize)]
    struct S {
        mem: Size,
        at: TimeOfDay,
    }
    let s: S = from_toml("mem = \"80GiB\"\nat = \"07:30\"").unwrap();
    assert_eq!((s.mem.bytes(), s.at.minute()), (80 << 30, 450));
    assert_eq!(TimeOfDay::new(7, 30), Some(s.at));
    let e = from_toml::<S>("mem = 12\nat = \"07:30\"").unwrap_err();
    assert_eq!(e.key.as_deref(), Some("mem"));
    assert!(e.message.contains("a size like"), "{}", e.message);
}

#[test]
fn an_error_raised_after_an_element_is_read_names_that_element_or_its_list() {
    /// Read as a plain string first, refused afterwards (the error comes
    /// back through the list, not from inside the element's deserializer).
    #[derive(Debug)]
    struct Checked;
    impl<'de> serde::Deserialize<'de> for Checked {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            let s = String::deserialize(d)?;
            if s == "bad" {
                return Err(serde::de::Error::custom("bad one"));
            }
            Ok(Checked)
        }
    }
    #[derive(serde::Deserialize, Debug)]
    #[allow(dead_code)]
    struct C {
        rules: Vec<Checked>,
    }
    let e = from_toml::<C>("rules = [\"ok\", \"bad\"]").unwrap_err();
    assert_eq!(e.key.as_deref(), Some("rules"), "{e:?}");
}

#[derive(serde::Deserialize, Debug)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Required {
    url: String,
    #[serde(default)]
    headers: std::collections::BTreeMap<String, String>,
}

#[test]
fn a_missing_top_level_key_is_named() {
    for text in [
        "",
        "\n",
        "headers = { a = \"b\" }",
        "[headers]\na = \"b\"\n",
    ] {
        let e = from_toml::<Required>(text).unwrap_err();
        assert_eq!(e.key.as_deref(), Some("url"), "{text:?}: {}", e.message);
        assert!(e.message.contains("missing key `url`"), "{}", e.message);
    }
}
