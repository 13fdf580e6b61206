//! The plugin host against real compiled components: the first-party
//! priority policy and the hostile test plugin (tests/plugins/hostile).

use std::time::Duration;

use super::engine::PluginEngine;
use super::pass::Pass;
use super::policy::*;

const HOSTILE: &[u8] = include_bytes!(env!("NIGHTJAR_TEST_PLUGIN_HOSTILE"));

fn priority_wasm() -> &'static [u8] {
    super::first_party::FIRST_PARTY
        .iter()
        .find(|(n, _)| *n == "priority")
        .map(|(_, w)| *w)
        .unwrap()
}

/// Deadlines a loaded 2-core machine cannot miss: the epoch ticker counts
/// on while a plugin's thread waits for a core, so a 100 ms deadline failed
/// calls that take a millisecond. Tests that expect a timeout ask
/// [`tight`].
fn limits() -> PluginLimits {
    PluginLimits {
        evaluate_timeout: Duration::from_secs(10),
        configure_timeout: Duration::from_secs(10),
        ..PluginLimits::default()
    }
}

/// Short deadlines, for the calls that must run out of them.
fn tight() -> PluginLimits {
    PluginLimits {
        evaluate_timeout: Duration::from_millis(100),
        configure_timeout: Duration::from_millis(300),
        ..PluginLimits::default()
    }
}

/// A queued task with no resources, for snapshots in tests.
pub(crate) fn task(id: i64, project: &str, priority: Priority, submitted_at: i64) -> QueuedTask {
    QueuedTask {
        id,
        name: format!("t{id}").into(),
        project: project.into(),
        priority,
        resources: Resources {
            gpus: 0,
            gpu_mem: None,
            cpus: None,
            mem: None,
            timeout: None,
        },
        submitted_at,
        eligible_at: submitted_at,
        attempts: 0,
        estimated_runtime: None,
    }
}

/// A usage row of `project` in `s` (named in its table from then on).
pub(crate) fn used(
    s: &mut Snapshot,
    project: &str,
    gpus: u32,
    started_at: i64,
    ended_at: Option<i64>,
) -> Usage {
    let k = match s.projects.iter().position(|p| &**p == project) {
        Some(k) => k,
        None => {
            let mut names = s.projects.to_vec();
            names.push(project.into());
            s.projects = names.into();
            s.projects.len() - 1
        }
    };
    Usage {
        project: k as u32,
        gpus,
        started_at,
        ended_at,
    }
}

/// A snapshot at 10:00 UTC with `queue` and one idle A100.
pub(crate) fn snapshot(queue: Vec<QueuedTask>) -> Snapshot {
    Snapshot {
        now: 10 * 3_600_000,
        time_zone: "UTC".into(),
        utc_offset: 0,
        queue,
        running: Vec::new(),
        gpus: vec![Gpu {
            index: 0,
            uuid: "GPU-0".into(),
            name: "A100".into(),
            mem_total: 80 << 30,
            mem_used: 0,
            mem_reserved: 0,
            util: 0,
            temperature: 40,
            power: 0,
            healthy: true,
            closed_by: Vec::new(),
        }],
        usage: Vec::new().into(),
        projects: Vec::new().into(),
    }
}

fn hostile(engine: &PluginEngine, mode: &str) -> Result<PolicyPlugin, PluginError> {
    PolicyPlugin::load(engine, "hostile", HOSTILE, mode, limits())
}

/// The hostile plugin in `mode`, loaded with [`tight`] deadlines.
fn hostile_tight(engine: &PluginEngine, mode: &str) -> Result<PolicyPlugin, PluginError> {
    PolicyPlugin::load(engine, "hostile", HOSTILE, mode, tight())
}

#[test]
fn the_priority_plugin_scores_by_class_and_age() {
    let engine = PluginEngine::new(None).unwrap();
    let mut p = PolicyPlugin::load(
        &engine,
        "priority",
        priority_wasm(),
        "aging_per_hour = 50",
        limits(),
    )
    .unwrap();
    let s = snapshot(vec![
        task(1, "a", Priority::Low, 0),
        task(2, "a", Priority::High, 9 * 3_600_000),
    ]);
    let s = std::sync::Arc::new(s);
    let e = p.evaluate(&Pass::new(std::sync::Arc::clone(&s))).unwrap();
    let scores: Vec<(i64, i32)> = e
        .all_verdicts(&s.queue)
        .iter()
        .map(|v| match v.verdict {
            Verdict::Allow(n) => (v.task, n),
            _ => panic!("allow only"),
        })
        .collect();
    assert_eq!(
        scores,
        vec![(1, 500), (2, 250)],
        "10 h at 50/h (capped at 500) vs high + 1 h"
    );
}

#[test]
fn a_bad_config_is_refused_at_load_with_the_plugins_reason() {
    let engine = PluginEngine::new(None).unwrap();
    let err = PolicyPlugin::load(
        &engine,
        "priority",
        priority_wasm(),
        "aging_per_hour = \"fast\"",
        limits(),
    )
    .err()
    .unwrap();
    assert_eq!(err.cause(), "config", "{err}");
    let err = hostile(&engine, "reject-config").err().unwrap();
    assert_eq!(
        err,
        PluginError::Config {
            key: Some("mode".into()),
            message: "this plugin refuses every config".into()
        }
    );
}

#[test]
fn a_configure_that_never_returns_times_out() {
    let engine = PluginEngine::new(None).unwrap();
    assert!(matches!(
        hostile_tight(&engine, "hang-config").err().unwrap(),
        PluginError::Timeout(_)
    ));
}

#[test]
fn an_infinite_loop_times_out_and_the_next_call_gets_a_fresh_instance() {
    let engine = PluginEngine::new(None).unwrap();
    let mut p = hostile_tight(&engine, "loop").unwrap();
    let s = snapshot(vec![task(1, "held-by-plugin", Priority::Normal, 0)]);
    let t = std::time::Instant::now();
    assert!(matches!(
        p.evaluate(&s.clone().into()),
        Err(PluginError::Timeout(_))
    ));
    // Only "stopped" against "loops for ever": a bound a loaded machine
    // cannot reach.
    assert!(
        t.elapsed() < Duration::from_secs(30),
        "the deadline stops it: {:?}",
        t.elapsed()
    );
    // Still looping on the next call (same config), and still stopped.
    assert!(matches!(
        p.evaluate(&s.clone().into()),
        Err(PluginError::Timeout(_))
    ));
}

/// 0.60 a kWh, 0.30 from 23:00 to 07:00, in UTC.
fn night_tariff() -> std::sync::Arc<crate::tariff::Tariff> {
    let w = crate::tariff::Window {
        from_s: 23 * 3600,
        to_s: 7 * 3600,
        price: 0.3,
        days: [true; 7],
        label: "23:00-07:00".into(),
    };
    std::sync::Arc::new(
        crate::tariff::Tariff::new("CNY".into(), 0.6, vec![w], chrono_tz::UTC).unwrap(),
    )
}

#[test]
fn the_tariff_import_answers_the_passs_tariff_and_none_without_one() {
    let engine = PluginEngine::new(None).unwrap();
    let mut p = hostile(&engine, "tariff").unwrap();
    let s = std::sync::Arc::new(snapshot(vec![task(1, "p", Priority::Normal, 0)]));
    let score = |e: &Evaluation| match e.all_verdicts(&s.queue)[0].verdict {
        Verdict::Allow(n) => n,
        ref other => panic!("{other:?}"),
    };
    // 10:00 to 10:00: 0.60 to 23:00, 0.30 to 07:00, 0.60 to 10:00.
    let pass = Pass::new(s.clone()).with_tariff(Some(night_tariff()));
    assert_eq!(score(&p.evaluate(&pass).unwrap()), 3);
    assert_eq!(
        score(&p.evaluate(&Pass::new(s.clone())).unwrap()),
        -1,
        "no tariff: none"
    );
}

#[test]
fn a_policy_flooding_the_tariff_import_is_stopped_by_its_limits() {
    let engine = PluginEngine::new(None).unwrap();
    let mut p = hostile_tight(&engine, "tariff-flood").unwrap();
    let s = std::sync::Arc::new(snapshot(vec![task(1, "p", Priority::Normal, 0)]));
    let pass = Pass::new(s).with_tariff(Some(night_tariff()));
    let err = p.evaluate(&pass).unwrap_err();
    assert!(
        matches!(err, PluginError::Timeout(_) | PluginError::Memory(_)),
        "{err:?}"
    );
}

#[test]
fn a_4_gib_allocation_hits_the_memory_cap() {
    let engine = PluginEngine::new(None).unwrap();
    let mut p = PolicyPlugin::load(&engine, "hostile", HOSTILE, "alloc", limits()).unwrap();
    let err = p
        .evaluate(&snapshot(vec![task(1, "a", Priority::Normal, 0)]).into())
        .unwrap_err();
    assert_eq!(err.cause(), "memory", "{err}");
}

#[test]
fn deep_recursion_and_panics_are_traps() {
    let engine = PluginEngine::new(None).unwrap();
    let s = snapshot(vec![task(1, "a", Priority::Normal, 0)]);
    let err = hostile(&engine, "recurse")
        .unwrap()
        .evaluate(&s.clone().into())
        .unwrap_err();
    assert_eq!(err.cause(), "trap", "{err}");
    let err = hostile(&engine, "panic")
        .unwrap()
        .evaluate(&s.into())
        .unwrap_err();
    assert_eq!(err.cause(), "trap", "{err}");
}

#[test]
fn a_ten_million_entry_answer_never_reaches_the_host() {
    let engine = PluginEngine::new(None).unwrap();
    let err = PolicyPlugin::load(&engine, "hostile", HOSTILE, "huge", limits())
        .unwrap()
        .evaluate(&snapshot(vec![]).into())
        .unwrap_err();
    assert_eq!(
        err.cause(),
        "memory",
        "10M verdicts do not fit in 64 MiB: {err}"
    );
}

#[test]
fn unknown_tasks_and_gpus_are_invalid_answers() {
    let engine = PluginEngine::new(None).unwrap();
    let s = snapshot(vec![task(1, "a", Priority::Normal, 0)]);
    for mode in ["unknown-task", "unknown-gpu"] {
        let err = hostile(&engine, mode)
            .unwrap()
            .evaluate(&s.clone().into())
            .unwrap_err();
        assert_eq!(err.cause(), "invalid-answer", "{mode}: {err}");
    }
}

#[test]
fn output_is_bounded_and_a_well_behaved_answer_passes() {
    let engine = PluginEngine::new(None).unwrap();
    let mut p = PolicyPlugin::load(&engine, "hostile", HOSTILE, "print", limits()).unwrap();
    let s = snapshot(vec![
        task(1, "held-by-plugin", Priority::Normal, 0),
        task(2, "a", Priority::Normal, 0),
    ]);
    let e = p.evaluate(&s.into()).unwrap();
    assert_eq!(e.verdicts.len(), 1);
    assert!(matches!(&e.verdicts[0].verdict, Verdict::Defer(d) if d.reason.contains("hostile")));
}

#[test]
fn bytes_that_are_not_a_component_do_not_load() {
    let engine = PluginEngine::new(None).unwrap();
    let err = PolicyPlugin::load(&engine, "junk", b"\0asm junk", "", limits())
        .err()
        .unwrap();
    assert_eq!(err.cause(), "compile");
}

#[test]
fn compiled_code_is_cached_on_disk_by_sha256() {
    let dir = tempfile::tempdir().unwrap();
    let engine = PluginEngine::new(Some(dir.path().to_path_buf())).unwrap();
    PolicyPlugin::load(&engine, "priority", priority_wasm(), "", limits()).unwrap();
    let cached: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
    assert_eq!(cached.len(), 1);
    assert!(cached[0].file_name().to_string_lossy().ends_with(".cwasm"));
    // A second load comes from the cache and works.
    let mut p = PolicyPlugin::load(&engine, "priority", priority_wasm(), "", limits()).unwrap();
    assert!(p.evaluate(&snapshot(vec![]).into()).is_ok());
}
