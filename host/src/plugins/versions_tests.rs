//! Versions of the contract against real components: the first-party
//! policies on 0.2, a 0.1 component built from the current sources
//! (tests/plugins/legacy-v0_1), components that export both, neither or an
//! unknown version, a version section that lies, and 0.2 answers whose
//! indices or string tables are out of bounds.

use std::time::Duration;

use super::engine::PluginEngine;
use super::pass::Pass;
use super::policy::*;
use super::tests::{snapshot, task};
use super::version::{ApiVersion, declared};

const HOSTILE: &[u8] = include_bytes!(env!("NIGHTJAR_TEST_PLUGIN_HOSTILE"));
const V0_1: &[u8] = include_bytes!(env!("NIGHTJAR_TEST_PLUGIN_V0_1"));
const V0_2_0: &[u8] = include_bytes!(env!("NIGHTJAR_TEST_PLUGIN_V0_2_0"));

/// Roomy deadlines: these calls are expected to answer, and a deadline's
/// ticker counts on while a plugin's thread waits for a core on a loaded
/// machine (as `tests.rs`'s `limits`).
fn limits() -> PluginLimits {
    PluginLimits {
        evaluate_timeout: Duration::from_secs(10),
        configure_timeout: Duration::from_secs(10),
        ..PluginLimits::default()
    }
}

fn load(wasm: &[u8], config: &str) -> Result<PolicyPlugin, PluginError> {
    let engine = PluginEngine::new(None).unwrap();
    PolicyPlugin::load(&engine, "p", wasm, config, limits())
}

/// `wasm` with a custom section `name` holding `data` appended.
fn with_section(wasm: &[u8], name: &str, data: &[u8]) -> Vec<u8> {
    fn leb(mut n: usize, out: &mut Vec<u8>) {
        loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            out.push(if n == 0 { byte } else { byte | 0x80 });
            if n == 0 {
                break;
            }
        }
    }
    let mut body = Vec::new();
    leb(name.len(), &mut body);
    body.extend_from_slice(name.as_bytes());
    body.extend_from_slice(data);
    let mut out = wasm.to_vec();
    out.push(0);
    leb(body.len(), &mut out);
    out.extend_from_slice(&body);
    out
}

#[test]
fn every_first_party_plugin_is_the_latest_version_and_says_so_in_its_section() {
    for (name, wasm) in super::first_party::FIRST_PARTY {
        let p = load(wasm, "").unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(p.version.api, ApiVersion::LATEST, "{name}");
        assert_eq!(p.version.declared.as_deref(), Some("0.2.3"), "{name}");
        assert_eq!(
            p.version.exported,
            super::version::Exported::Delta,
            "{name}: the SDK exports the delta policy"
        );
        assert_eq!(p.version.note(), None);
    }
}

#[test]
fn a_0_2_policy_without_the_tariff_import_loads_as_one_with_it_does() {
    // `priority` never asks for the tariff, as a policy built before the
    // import was added; `offpeak-tariff` does. Both load on this host.
    let engine = PluginEngine::new(None).unwrap();
    let imports = |name: &str| -> Vec<String> {
        let wasm = super::first_party::FIRST_PARTY
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, w)| *w)
            .unwrap();
        let c = engine.component(wasm).unwrap();
        let ty = c.component_type();
        ty.imports(&engine.engine)
            .map(|(n, _)| n.to_string())
            .collect()
    };
    let tariff = "nightjar:plugin/tariff@0.2.3".to_string();
    assert!(!imports("priority").contains(&tariff));
    assert!(imports("offpeak-tariff").contains(&tariff));
    for name in ["priority", "offpeak-tariff"] {
        let (_, wasm) = super::first_party::FIRST_PARTY
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap();
        assert!(load(wasm, "").is_ok(), "{name}");
    }
}

#[test]
fn a_0_1_component_loads_and_its_answer_is_read_by_id() {
    let mut p = load(V0_1, "").unwrap();
    assert_eq!(p.version.api, ApiVersion::V0_1_0);
    assert_eq!(p.version.declared, None, "0.1 files carry no section");
    let s = snapshot(vec![
        task(4, "legacy-held", Priority::Normal, 0),
        task(9, "legacy-first", Priority::Low, 0),
    ]);
    let e = p.evaluate(&s.into()).unwrap();
    assert!(
        matches!(&e.verdicts[0].verdict, Verdict::Defer(d) if &*d.reason == "held by the 0.1 plugin p")
    );
    assert_eq!(e.verdicts[1].task, 9);
    assert!(matches!(e.verdicts[1].verdict, Verdict::Allow(1000)));
    let err = load(V0_1, "colour = 1").err().unwrap();
    assert_eq!(err.cause(), "config", "{err}");
}

#[test]
fn a_component_of_the_frozen_0_2_0_contract_loads_on_the_0_2_1_bindings() {
    // Built from wit/nightjar-plugin@0.2.0 as first released: it exports
    // policy@0.2.0 and imports host@0.2.0 and no tariff; the host links it
    // with its 0.2.1 bindings (semver-compatible names).
    let mut p = load(V0_2_0, "").unwrap();
    assert_eq!(p.version.api, ApiVersion::V0_2_0);
    assert_eq!(p.version.declared, None, "no SDK wrote a section");
    let s = snapshot(vec![
        task(4, "v020-held", Priority::Normal, 0),
        task(9, "v020-first", Priority::Low, 0),
        task(11, "other", Priority::Low, 0),
    ]);
    let e = p.evaluate(&s.into()).unwrap();
    assert_eq!(
        e.verdicts.iter().map(|v| v.task).collect::<Vec<_>>(),
        [4, 9, 11],
        "positions read back as ids"
    );
    assert!(
        matches!(&e.verdicts[0].verdict, Verdict::Defer(d) if &*d.reason == "held by the 0.2.0 plugin p"),
        "{:?}",
        e.verdicts[0]
    );
    assert!(matches!(e.verdicts[1].verdict, Verdict::Allow(500)));
    assert!(matches!(e.verdicts[2].verdict, Verdict::Allow(0)));
    let err = load(V0_2_0, "mode = 1").err().unwrap();
    assert_eq!(err.cause(), "config", "{err}");
    assert!(err.to_string().contains("at `mode`"), "{err}");
}

#[test]
fn a_component_exporting_both_versions_or_neither_is_refused() {
    let both = wat::parse_str(
        r#"(component (instance $a)
             (export "nightjar:plugin/policy@0.1.0" (instance $a))
             (export "nightjar:plugin/policy@0.2.0" (instance $a)))"#,
    )
    .unwrap();
    let err = load(&both, "").err().unwrap();
    assert_eq!(err.cause(), "world", "{err}");
    assert!(
        err.to_string()
            .contains("a policy interface 2 times (policy@0.1.0, policy@0.2.0)"),
        "{err}"
    );
    let neither = wat::parse_str("(component)").unwrap();
    let err = load(&neither, "").err().unwrap();
    assert_eq!(err.cause(), "world", "{err}");
    assert!(err.to_string().contains("exports nothing"), "{err}");
}

#[test]
fn an_unknown_version_names_what_it_found_and_what_the_host_loads() {
    let future = wat::parse_str(
        r#"(component (instance $a) (export "nightjar:plugin/policy@0.3.0" (instance $a)))"#,
    )
    .unwrap();
    let err = load(&future, "").err().unwrap();
    assert_eq!(err.cause(), "version", "{err}");
    let text = err.to_string();
    assert!(
        text.contains("nightjar:plugin/policy@0.3.0") && text.contains("it loads 0.1.0, 0.2.0"),
        "{text}"
    );
}

#[test]
fn a_version_section_that_lies_loses_to_the_exports_and_says_so() {
    let lying = with_section(V0_1, "nightjar-api-version", b"0.2.0");
    assert_eq!(declared(&lying).as_deref(), Some("0.2.0"));
    let mut p = load(&lying, "").unwrap();
    assert_eq!(p.version.api, ApiVersion::V0_1_0, "the exports win");
    let note = p.version.note().unwrap();
    assert!(
        note.contains("says \"0.2.0\"")
            && note.contains("nightjar:plugin/policy@0.1.0")
            && note.contains("the exported interface wins"),
        "{note}"
    );
    let s = snapshot(vec![task(9, "legacy-first", Priority::Low, 0)]);
    assert!(p.evaluate(&s.into()).is_ok(), "called as what it is");
    // A section of junk is cut and shown, never trusted.
    let junk = with_section(V0_1, "nightjar-api-version", &[b'x'; 4096]);
    assert_eq!(declared(&junk).map(|d| d.len()), Some(32));
}

#[test]
fn out_of_range_indices_in_a_0_2_answer_are_invalid_answers() {
    let mut s = snapshot(vec![task(1, "a", Priority::Normal, 0)]);
    s.running.push(RunningTask {
        id: 5,
        name: "r".into(),
        project: "a".into(),
        priority: Priority::Normal,
        gpus: vec![],
        started_at: 0,
        preemptible: true,
    });
    let pass = Pass::from(s);
    for (mode, says) in [
        (
            "bad-task-index",
            "queue index 1, which is not in the queue (1 tasks)",
        ),
        (
            "bad-reason-index",
            "names reason 5, but the answer has 1 reasons",
        ),
        (
            "bad-running-index",
            "preempts running index 4, which is not running",
        ),
        ("unknown-task", "not in the queue"),
    ] {
        let mut p = load(HOSTILE, mode).unwrap();
        let err = p.evaluate(&pass).unwrap_err();
        assert_eq!(err.cause(), "invalid-answer", "{mode}: {err}");
        assert!(err.to_string().contains(says), "{mode}: {err}");
        // The instance survives a bad answer; the next call gets the same.
        assert_eq!(p.evaluate(&pass).unwrap_err(), err);
    }
}

#[test]
fn a_huge_reason_table_never_reaches_the_host() {
    let mut p = load(HOSTILE, "reasons-huge").unwrap();
    let err = p
        .evaluate(&snapshot(vec![task(1, "a", Priority::Normal, 0)]).into())
        .unwrap_err();
    assert_eq!(err.cause(), "invalid-answer", "{err}");
    assert!(
        err.to_string()
            .contains("more data in one call than it accepts"),
        "{err}"
    );
}

#[test]
fn a_string_table_larger_than_the_plugins_memory_fails_as_memory() {
    // 10,000 names of 8 KiB: 80 MiB of text for a plugin capped at 64 MiB.
    let queue = (0..10_000)
        .map(|i| QueuedTask {
            name: format!("{i:08}").repeat(1024).into(),
            ..task(i, "a", Priority::Normal, 0)
        })
        .collect();
    let mut p = load(HOSTILE, "ok").unwrap();
    let err = p.evaluate(&snapshot(queue).into()).unwrap_err();
    assert_eq!(err.cause(), "memory", "{err}");
}
