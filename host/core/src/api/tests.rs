//! The protocol's lines: every request and reply survives a round trip, and
//! a line of another version is explained, never misread.

use super::views::{GpuView, MemberView};
use super::wire::*;
use super::*;
use crate::client::{CallError, decode};

/// Serializes `value`, reads it back and serializes again: both texts agree.
fn round_trip<T: serde::Serialize + serde::de::DeserializeOwned>(value: &T) -> T {
    let text = serde_json::to_string(value).unwrap();
    let back: T = serde_json::from_str(&text).unwrap();
    assert_eq!(serde_json::to_string(&back).unwrap(), text);
    back
}

fn every_request() -> Vec<Request> {
    vec![
        Ping {}.into(),
        Submit {
            entries: vec![],
            verify: false,
        }
        .into(),
        TaskList {
            filter: ListFilter {
                state: Some(TaskState::Held),
                project: Some("p".into()),
                all: true,
                since: 5,
                user: Some("alice".into()),
            },
            limit: Some(100),
        }
        .into(),
        TaskCount {
            filter: ListFilter::default(),
        }
        .into(),
        Show { id: 1 }.into(),
        Cancel { id: 2 }.into(),
        Hold { id: 3 }.into(),
        Release { id: 4 }.into(),
        Retry {
            id: 5,
            no_cache: true,
        }
        .into(),
        Why { id: 6 }.into(),
        GpuList {}.into(),
        PluginList {}.into(),
        PluginReload {}.into(),
        Gc { dry_run: true }.into(),
        Wait { ids: vec![7, 8] }.into(),
        WaitProgress { ids: vec![7, 8] }.into(),
        Rerun {
            id: 9,
            run: Some(10),
            allow_changed: true,
            name: Some("again".into()),
        }
        .into(),
        Diff { a: 11, b: 12 }.into(),
        TokenCreate {
            name: Some("laptop".into()),
        }
        .into(),
        TokenList {}.into(),
        TokenRevoke { id: 13 }.into(),
    ]
}

/// `CamelCase` as `kebab-case`.
fn kebab(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('-');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

#[test]
fn the_verb_list_names_every_request_once_in_kebab_case() {
    let mut seen = std::collections::BTreeSet::new();
    for v in VERBS {
        assert_eq!(v.name, kebab(v.request), "{v:?}");
        assert!(seen.insert(v.name), "{} twice", v.name);
        assert!(!v.reply.is_empty());
    }
    // Each request's tag is the verb the list gives it, and decodes back.
    for req in every_request() {
        let text = serde_json::to_value(&req).unwrap();
        assert_eq!(text["verb"], req.verb());
        assert!(VERBS.iter().any(|v| v.name == req.verb()));
    }
    // A request of each verb in the list decodes from its name (fields
    // defaulted where the request has only optional ones).
    let decodable = VERBS
        .iter()
        .filter(|v| serde_json::from_value::<Request>(serde_json::json!({"verb": v.name})).is_ok())
        .count();
    assert!(decodable >= 10, "{decodable}");
}

#[test]
fn every_request_round_trips_inside_a_versioned_line() {
    for req in every_request() {
        let line = RequestLine { v: PROTOCOL, req };
        let text = serde_json::to_string(&line).unwrap();
        assert!(
            text.starts_with(&format!("{{\"v\":{PROTOCOL},\"req\":{{\"verb\":")),
            "{text}"
        );
        round_trip(&line);
    }
}

#[test]
fn verbs_are_kebab_case_on_the_wire() {
    let text = serde_json::to_string(&Request::from(PluginReload {})).unwrap();
    assert_eq!(text, r#"{"verb":"plugin-reload"}"#);
    let text = serde_json::to_string(&Request::from(Gc { dry_run: false })).unwrap();
    assert_eq!(text, r#"{"verb":"gc","dry_run":false}"#);
}

#[test]
fn typed_replies_round_trip() {
    round_trip(&ReplyLine::ok(Pong {
        pid: 1,
        version: "0.1.0".into(),
        protocol: PROTOCOL,
    }));
    round_trip(&ReplyLine::ok(Cancelled {
        cancelled: vec![1],
        stopping: vec![2],
    }));
    round_trip(&ReplyLine::ok(Changed { tasks: 3 }));
    round_trip(&ReplyLine::ok(vec![ReloadChange {
        plugin: "thermal".into(),
        outcome: ReloadOutcome::Rejected,
        detail: "bad".into(),
    }]));
    round_trip(&ReplyLine::ok(GcReport {
        tasks: 1,
        runs: vec![2],
        ..GcReport::default()
    }));
    round_trip(&ReplyLine::ok(vec![WaitResult {
        id: 1,
        state: TaskState::Failed,
        class: Some(RunClass::AppError),
        exit_code: Some(3),
        signal: None,
    }]));
    round_trip(&ReplyLine::ok(Vec::<GpuView>::new()));
    round_trip(&ReplyLine::ok(Rerunning {
        id: 3,
        name: "again".into(),
        rerun_of: manifest::RerunOf {
            task: 1,
            run: 2,
            inputs_changed: vec![manifest::InputChange {
                path: "/d/a.csv".into(),
                before: Some("aa".into()),
                after: Some("bb".into()),
                what: "content changed".into(),
            }],
        },
        notes: vec!["commit changed".into()],
    }));
    round_trip(&ReplyLine::ok(Vec::<MemberView>::new()));
}

#[test]
fn a_typed_reply_decodes_and_an_error_keeps_its_kind() {
    let ok = serde_json::to_string(&ReplyLine::ok(Changed { tasks: 2 })).unwrap();
    assert_eq!(decode::<Changed>(&ok).unwrap(), Changed { tasks: 2 });
    let err = serde_json::to_string(&ReplyLine::<()>::err(ApiError::new(
        ErrorKind::NotFound,
        "no task with id 9",
    )))
    .unwrap();
    match decode::<Changed>(&err) {
        Err(CallError::Api(e)) => {
            assert_eq!(e.kind, ErrorKind::NotFound);
            assert_eq!(e.message, "no task with id 9");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_reply_of_an_older_daemon_is_explained_as_a_version_mismatch() {
    // nightjar 0.1 answered `{"ok": ...}` without a version.
    match decode::<Changed>(r#"{"ok":3}"#) {
        Err(CallError::Api(e)) => {
            assert_eq!(e.kind, ErrorKind::Protocol);
            assert!(e.message.contains("protocol 1"), "{}", e.message);
            assert!(e.message.contains("restart the daemon"), "{}", e.message);
        }
        other => panic!("{other:?}"),
    }
    // Its error replies were plain strings naming no version (it cannot
    // read a versioned request): the mismatch is explained, its words quoted.
    match decode::<Changed>(r#"{"ok":null,"error":"bad request: missing field `verb`"}"#) {
        Err(CallError::Api(e)) => {
            assert_eq!(e.kind, ErrorKind::Protocol);
            assert!(e.message.contains("protocol 1"), "{}", e.message);
            assert!(e.message.contains("restart the daemon"), "{}", e.message);
            assert!(e.message.contains("missing field"), "{}", e.message);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_unknown_error_kind_of_a_newer_daemon_still_decodes() {
    let line = format!(r#"{{"v":{PROTOCOL},"error":"quota","kind":"over-quota"}}"#);
    match decode::<Changed>(&line) {
        Err(CallError::Api(e)) => {
            assert_eq!((e.kind, e.message.as_str()), (ErrorKind::Other, "quota"))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_version_mismatch_names_both_versions_and_what_to_do() {
    let e = ApiError::version_mismatch(Some(PROTOCOL + 1));
    assert_eq!(e.kind, ErrorKind::Protocol);
    assert!(e.message.contains(&format!("protocol {}", PROTOCOL + 1)));
    assert!(e.message.contains(&format!("protocol {PROTOCOL}")));
    let old = ApiError::version_mismatch(None);
    assert!(old.message.contains("nightjar 0.1"), "{}", old.message);
}

#[test]
fn exit_statuses_follow_the_error_kind() {
    assert_eq!(ErrorKind::NotFound.exit_status(), 4);
    assert_eq!(ErrorKind::Protocol.exit_status(), 5);
    assert_eq!(ErrorKind::Unavailable.exit_status(), 3);
    assert_eq!(ErrorKind::Invalid.exit_status(), 1);
    assert_eq!(ErrorKind::BadRequest.exit_status(), 1);
    assert_eq!(ErrorKind::Forbidden.exit_status(), 6);
    assert_eq!(
        ErrorKind::Internal.exit_status(),
        7,
        "the daemon's failure, not the caller's"
    );
    assert_eq!(ErrorKind::Other.exit_status(), 1, "a newer daemon's kind");
}

#[test]
fn a_manifest_without_rerun_of_still_parses_and_a_plain_one_writes_no_such_field() {
    let m = manifest::Manifest::new(manifest::Phase::Submit, 1, "/w".into());
    let text = serde_json::to_string(&m).unwrap();
    assert!(!text.contains("rerun_of"), "{text}");
    let back: manifest::Manifest = serde_json::from_str(&text).unwrap();
    assert_eq!(back.rerun_of, None);
    let mut r = m;
    r.rerun_of = Some(manifest::RerunOf {
        task: 4,
        run: 5,
        inputs_changed: vec![],
    });
    let text = serde_json::to_string(&r).unwrap();
    assert!(text.contains(r#""rerun_of":{"task":4,"run":5}"#), "{text}");
    assert_eq!(round_trip(&r), r);
}

#[test]
fn list_verbs_are_named_noun_list_one_way() {
    let lists: Vec<&str> = VERBS
        .iter()
        .map(|v| v.name)
        .filter(|n| n.ends_with("-list"))
        .collect();
    assert_eq!(
        lists,
        [
            "task-list",
            "gpu-list",
            "plugin-list",
            "notify-list",
            "token-list"
        ]
    );
    for gone in ["list", "gpus", "plugins", "list-count", "plugins-reload"] {
        assert!(
            VERBS.iter().all(|v| v.name != gone),
            "`{gone}` is only an earlier name now"
        );
    }
}

#[test]
fn a_renamed_verbs_earlier_name_is_read_as_the_new_one_and_written_new() {
    let renamed: Vec<_> = VERBS
        .iter()
        .filter_map(|v| v.was.map(|w| (w, v.name)))
        .collect();
    assert_eq!(
        renamed,
        [
            ("list", "task-list"),
            ("list-count", "task-count"),
            ("gpus", "gpu-list"),
            ("plugins", "plugin-list"),
            ("plugins-reload", "plugin-reload"),
        ]
    );
    let old: Request =
        serde_json::from_str(r#"{"verb":"list","filter":{"all":true,"since":0},"limit":3}"#)
            .unwrap();
    match &old {
        Request::TaskList(l) => assert_eq!(l.limit, Some(3)),
        other => panic!("`list` read as {other:?}"),
    }
    assert_eq!(old.verb(), "task-list");
    let again = serde_json::to_value(&old).unwrap();
    assert_eq!(again["verb"], "task-list", "written with the new name");
    for (was, name) in renamed {
        let fields = match was {
            "list" | "list-count" => {
                serde_json::json!({"verb": was, "filter": {"all": false, "since": 0}})
            }
            _ => serde_json::json!({ "verb": was }),
        };
        let req: Request = serde_json::from_value(fields)
            .unwrap_or_else(|e| panic!("earlier name `{was}` refused: {e}"));
        assert_eq!(req.verb(), name);
    }
}

#[cfg(feature = "schema")]
#[test]
fn the_protocol_schema_has_every_verbs_request_and_reply() {
    let s = schema();
    assert_eq!(s["protocol"], PROTOCOL);
    let replies = s["replies"].as_object().expect("replies");
    for v in VERBS {
        assert!(
            replies.contains_key(v.name),
            "no reply schema for {}",
            v.name
        );
    }
    assert_eq!(replies.len(), VERBS.len());
    let defs = s["$defs"].as_object().expect("$defs");
    let request = &defs["Request"];
    let tags: Vec<&str> = request["oneOf"]
        .as_array()
        .expect("a request is one of the verbs")
        .iter()
        .filter_map(|v| v["properties"]["verb"]["const"].as_str())
        .collect();
    for v in VERBS {
        assert!(
            tags.contains(&v.name),
            "the request schema lacks {}",
            v.name
        );
    }
    // Every `$ref` resolves.
    let text = s.to_string();
    for part in text.split("\"$ref\":\"#/$defs/").skip(1) {
        let name = part.split('"').next().unwrap_or_default();
        assert!(
            defs.contains_key(name),
            "{name} is referenced but not defined"
        );
    }
}
