//! Telling versions and interfaces apart by a component's export names, and
//! the note when its section disagrees.

use super::*;

#[test]
fn the_exported_interface_names_the_version() {
    let v = from_exports(["wasi:cli/run@0.2.0", "nightjar:plugin/policy@0.2.0"]);
    let api = |names: &[&str]| from_exports(names.iter().copied()).map(|d| (d.api, d.adapter()));
    assert_eq!(v.map(|d| d.api), Ok(ApiVersion::V0_2_0));
    assert_eq!(
        api(&["nightjar:plugin/policy@0.2.1"]),
        Ok((ApiVersion::V0_2_1, Adapter::V0_2))
    );
    assert_eq!(
        api(&["nightjar:plugin/policy@0.1.0"]),
        Ok((ApiVersion::V0_1_0, Adapter::V0_1))
    );
    assert_eq!(
        api(&["nightjar:plugin/policy@0.2.2"]),
        Ok((ApiVersion::V0_2_2, Adapter::V0_2)),
        "0.2.2's plain policy is called as any 0.2 one"
    );
    assert_eq!(
        api(&["nightjar:plugin/incremental-policy@0.2.2"]),
        Ok((ApiVersion::V0_2_2, Adapter::Incremental))
    );
    assert_eq!(
        api(&["nightjar:plugin/delta-policy@0.2.3"]),
        Ok((ApiVersion::V0_2_3, Adapter::Delta))
    );
    let before_delta = from_exports(["nightjar:plugin/delta-policy@0.2.2"]).unwrap_err();
    assert_eq!(
        before_delta.cause(),
        "version",
        "the interface is new in 0.2.3"
    );
    assert!(
        before_delta.to_string().contains("delta-policy@0.2.2"),
        "{before_delta}"
    );
    let early = from_exports(["nightjar:plugin/incremental-policy@0.2.1"]).unwrap_err();
    assert_eq!(early.cause(), "version", "the interface is new in 0.2.2");
    assert!(
        early.to_string().contains("incremental-policy@0.2.1"),
        "{early}"
    );
    assert_eq!(ApiVersion::V0_2_0.adapter(), ApiVersion::V0_2_1.adapter());
    assert_ne!(ApiVersion::V0_1_0.adapter(), ApiVersion::V0_2_1.adapter());
}

#[test]
fn an_unknown_version_names_what_it_found_and_what_is_supported() {
    let e = from_exports(["nightjar:plugin/policy@0.3.0"]).unwrap_err();
    assert_eq!(e.cause(), "version");
    let text = e.to_string();
    assert!(
        text.contains("nightjar:plugin/policy@0.3.0")
            && text.contains("0.1.0, 0.2.0, 0.2.1, 0.2.2, 0.2.3"),
        "{text}"
    );
}

#[test]
fn both_or_neither_version_is_refused() {
    let both = from_exports([
        "nightjar:plugin/policy@0.1.0",
        "nightjar:plugin/policy@0.2.0",
    ])
    .unwrap_err();
    assert_eq!(both.cause(), "world");
    assert!(
        both.to_string().contains("policy@0.1.0, policy@0.2.0"),
        "{both}"
    );
    let plain_and_incremental = from_exports([
        "nightjar:plugin/policy@0.2.2",
        "nightjar:plugin/incremental-policy@0.2.2",
    ])
    .unwrap_err();
    assert_eq!(plain_and_incremental.cause(), "world");
    let incremental_and_delta = from_exports([
        "nightjar:plugin/incremental-policy@0.2.3",
        "nightjar:plugin/delta-policy@0.2.3",
    ])
    .unwrap_err();
    assert_eq!(incremental_and_delta.cause(), "world");
    assert!(
        (incremental_and_delta.to_string())
            .contains("incremental-policy@0.2.3, delta-policy@0.2.3"),
        "{incremental_and_delta}"
    );
    let patch_levels = from_exports([
        "nightjar:plugin/policy@0.2.0",
        "nightjar:plugin/policy@0.2.1",
    ])
    .unwrap_err();
    assert_eq!(
        patch_levels.cause(),
        "world",
        "two 0.2 exports: {patch_levels}"
    );
    let neither = from_exports(["nightjar:plugin/notify@0.1.0"]).unwrap_err();
    assert!(
        neither
            .to_string()
            .contains("`nightjar:plugin/notify@0.1.0`"),
        "{neither}"
    );
    let none = from_exports([]).unwrap_err();
    assert!(none.to_string().contains("exports nothing"), "{none}");
}

#[test]
fn a_section_that_disagrees_is_noted_and_the_exports_win() {
    let d = Detected {
        api: ApiVersion::V0_1_0,
        exported: Exported::Policy,
        declared: Some("0.2.0".into()),
    };
    let note = d.note().unwrap();
    assert!(note.contains("the exported interface wins"), "{note}");
    let agrees = Detected {
        api: ApiVersion::V0_2_1,
        exported: Exported::Policy,
        declared: Some("0.2.1".into()),
    };
    assert_eq!(agrees.note(), None);
    let incremental = Detected {
        api: ApiVersion::V0_2_2,
        exported: Exported::Incremental,
        declared: Some("0.2.1".into()),
    };
    let note = incremental.note().unwrap();
    assert!(
        note.contains("exports nightjar:plugin/incremental-policy@0.2.2"),
        "the note names the interface the component exports: {note}"
    );
    let delta = Detected {
        api: ApiVersion::V0_2_3,
        exported: Exported::Delta,
        declared: Some("0.2.2".into()),
    };
    let note = delta.note().unwrap();
    assert!(
        note.contains("exports nightjar:plugin/delta-policy@0.2.3"),
        "{note}"
    );
}
