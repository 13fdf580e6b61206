//! The incremental policy through real components (the first-party
//! plugins, built with the SDK): an instance fed changes pass after pass
//! answers exactly as a fresh instance sent the whole snapshot does, and a
//! plugin that does not hold what the host believes is sent everything at
//! once.

use std::sync::Arc;

use crate::plugins::engine::PluginEngine;
use crate::plugins::incremental::{Change, Kind, Wire};
use crate::plugins::pass::Pass;
use crate::plugins::policy::{PluginLimits, PolicyPlugin, Priority, RunningTask, Snapshot, Usage};
use crate::plugins::tests::{snapshot, task, used};

fn load(engine: &PluginEngine, name: &str, wasm: &[u8]) -> PolicyPlugin {
    let limits = PluginLimits {
        evaluate_timeout: std::time::Duration::from_secs(10),
        ..PluginLimits::default()
    };
    PolicyPlugin::load(engine, name, wasm, "", limits).unwrap()
}

/// A running task of `project` on `gpus`.
fn run(id: i64, project: &str, gpus: Vec<u32>, started_at: i64) -> RunningTask {
    RunningTask {
        id,
        name: format!("run-{id}").into(),
        project: project.into(),
        priority: Priority::Normal,
        gpus,
        started_at,
        preemptible: id % 2 == 0,
    }
}

/// A queue of `n` tasks over three projects, a week of usage, four GPUs
/// and three running tasks, in the host's order.
fn lab(n: i64) -> Snapshot {
    let projects = ["vision", "bio", "nlp"];
    let mut s = snapshot(
        (0..n)
            .map(|i| {
                let mut t = task(i, projects[i as usize % 3], Priority::Normal, i * 1000);
                t.resources.gpus = (i % 3) as u32;
                t.estimated_runtime = (i % 2 == 0).then_some(600_000);
                t
            })
            .collect(),
    );
    let rows: Vec<Usage> = (0..40)
        .map(|i| {
            let (started_at, ended) = (i as i64 * 60_000, i as i64 * 60_000 + 30_000);
            used(
                &mut s,
                projects[i % 3],
                1,
                started_at,
                (i < 38).then_some(ended),
            )
        })
        .collect();
    s.usage = rows.into();
    let gpu = s.gpus[0].clone();
    s.gpus = (0..4)
        .map(|i| crate::plugins::policy::Gpu {
            index: i,
            uuid: format!("GPU-{i}"),
            ..gpu.clone()
        })
        .collect();
    s.running = (0..3)
        .map(|k| run(50_000 + k, projects[k as usize], vec![k as u32], 0))
        .collect();
    order(&mut s);
    s
}

fn order(s: &mut Snapshot) {
    s.queue
        .sort_by_key(|t| (std::cmp::Reverse(t.priority), t.submitted_at, t.id));
}

/// One pass later: two tasks start, two arrive (one urgent), one is
/// reprioritised, a run ends and another starts (in the usage and among the
/// running tasks, where the last takes the place of the one that ended),
/// the clock moves on, a GPU warms and another is closed or opened.
fn next(s: &mut Snapshot, round: i64) {
    s.queue.drain(0..2.min(s.queue.len()));
    let mut urgent = task(10_000 + round, "bio", Priority::Urgent, 500_000 + round);
    urgent.name = format!("urgent-{round}").into();
    s.queue.push(urgent);
    s.queue.push(task(
        20_000 + round,
        "new-project",
        Priority::Low,
        900_000 + round,
    ));
    if let Some(t) = s.queue.get_mut(5) {
        t.priority = Priority::High;
    }
    order(s);
    let mut used = s.usage.to_vec();
    if let Some(u) = used.iter_mut().find(|u| u.ended_at.is_none()) {
        u.ended_at = Some(s.now);
    }
    used.remove(0);
    let now = s.now;
    let bio = crate::plugins::tests::used(s, "bio", 2, now, None);
    used.push(bio);
    s.usage = used.into();
    if !s.running.is_empty() {
        let ended = round as usize % s.running.len();
        s.running.swap_remove(ended);
    }
    let project = ["vision", "bio", "nlp"][round as usize % 3];
    let gpus = vec![round as u32 % 4, (round as u32 + 1) % 4];
    s.running.push(run(60_000 + round, project, gpus, s.now));
    s.now += 3_600_000;
    s.gpus[0].temperature = 40 + round as u32 * 3;
    let closed = if round % 3 == 0 {
        vec!["thermal".to_string()]
    } else {
        Vec::new()
    };
    s.gpus[1 + round as usize % 3].closed_by = closed;
}

/// How many queued tasks `change` sends.
fn queue_sent(change: &Change) -> usize {
    match &change.wire {
        Wire::Incremental(w) => w.queue.added.id.len(),
        Wire::Delta(d) => (d.queue.as_ref())
            .and_then(|q| q.added.as_ref())
            .map_or(0, |a| a.id.len()),
    }
}

#[test]
fn changes_pass_after_pass_answer_as_the_whole_snapshot_does() {
    let engine = PluginEngine::new(None).unwrap();
    for (name, wasm) in crate::plugins::first_party::FIRST_PARTY {
        let mut kept = load(&engine, name, wasm);
        let mut s = lab(300);
        for round in 0..12 {
            if round > 0 {
                next(&mut s, round);
            }
            let before = kept.held().cloned();
            let pass = Pass::new(Arc::new(s.clone()));
            let got = kept.evaluate(&pass).unwrap();
            let want = load(&engine, name, wasm).evaluate(&pass).unwrap();
            assert_eq!(got, want, "{name}, pass {round}");
            // The plugin was sent the change from what it held, and confirmed it.
            let change = pass.change(before.as_ref(), Kind::Delta).unwrap();
            assert_eq!(
                change.base(),
                before.as_ref().map_or(0, |h| h.generation),
                "{name}, pass {round}"
            );
            assert!(
                Arc::ptr_eq(&change.held, kept.held().unwrap()),
                "{name}, pass {round}: holds what it was sent"
            );
            if round > 0 {
                let sent = queue_sent(&change);
                assert!(sent <= 3, "{name}, pass {round}: {sent} tasks sent");
            }
        }
    }
}

#[test]
fn a_plugin_that_does_not_hold_the_base_is_sent_everything_at_once() {
    let engine = PluginEngine::new(None).unwrap();
    let (name, wasm) = crate::plugins::first_party::FIRST_PARTY[0];
    let mut p = load(&engine, name, wasm);
    let s = Arc::new(lab(50));
    p.evaluate(&Pass::new(Arc::clone(&s))).unwrap();
    // The host believes the plugin holds a snapshot it was never sent.
    let forged = Arc::new(crate::plugins::incremental::Held::forged(&s, Kind::Delta));
    p.forge_held(Arc::clone(&forged));
    let pass = Pass::new(Arc::new((*s).clone()));
    let got = p.evaluate(&pass).unwrap();
    assert_eq!(got, load(&engine, name, wasm).evaluate(&pass).unwrap());
    let held = p.held().unwrap();
    assert_ne!(held.generation, forged.generation);
    assert_eq!(
        pass.change(None, Kind::Delta).unwrap().held.generation,
        held.generation,
        "it holds the whole snapshot it was sent"
    );
}

/// The hostile test plugin in `mode`.
fn hostile(engine: &PluginEngine, mode: &str) -> PolicyPlugin {
    let wasm = std::fs::read(env!("NIGHTJAR_TEST_PLUGIN_HOSTILE")).unwrap();
    let limits = PluginLimits {
        evaluate_timeout: std::time::Duration::from_secs(10),
        ..PluginLimits::default()
    };
    PolicyPlugin::load(engine, "hostile", &wasm, mode, limits).unwrap()
}

#[test]
fn a_plugin_sent_the_whole_snapshot_again_draws_its_bytes_afresh() {
    let engine = PluginEngine::new(None).unwrap();
    let mut p = hostile(&engine, "random-forgets");
    let s = Arc::new(lab(20));
    let first = p.evaluate(&Pass::new(Arc::clone(&s))).unwrap();
    assert!(p.held().is_some(), "it holds the snapshot");
    // Sent a change from it, it draws and answers that it holds nothing;
    // sent the whole snapshot then, its bytes are the snapshot's own, not
    // those after the ones it drew first.
    let pass = Pass::new(Arc::new((*s).clone()));
    let again = p.evaluate(&pass).unwrap();
    assert_eq!(again, first, "the same snapshot, the same bytes");
    assert_eq!(
        again,
        hostile(&engine, "random-forgets").evaluate(&pass).unwrap()
    );
}

/// `lab(n)` with its first task held by the hostile plugin's `ok` answer.
fn held_lab(n: i64) -> Snapshot {
    let mut s = lab(n);
    s.queue[0].project = "held-by-plugin".into();
    s
}

#[test]
fn a_plugin_that_answers_zero_forever_is_resent_the_whole_snapshot_once_then_refused() {
    let engine = PluginEngine::new(None).unwrap();
    let mut p = hostile(&engine, "lie-zero");
    let mut s = held_lab(20);
    p.evaluate(&Pass::new(Arc::new(s.clone()))).unwrap();
    assert!(p.held().is_some(), "the first answer is true");
    for round in 1..4 {
        next(&mut s, round);
        let pass = Pass::new(Arc::new(s.clone()));
        let err = p.evaluate(&pass).unwrap_err();
        assert_eq!(err.cause(), "invalid-answer", "pass {round}");
        // What it was last sent is the whole snapshot, once.
        let whole = pass.change(None, Kind::Delta).unwrap().held.generation;
        assert!(
            err.to_string().contains(&format!(
                "answers for snapshot 0, but was sent snapshot {whole}"
            )),
            "pass {round}: {err}"
        );
        assert!(p.held().is_none(), "pass {round}: the host holds nothing");
    }
}

#[test]
fn an_answer_for_another_generation_is_refused_and_the_next_pass_starts_from_nothing() {
    let engine = PluginEngine::new(None).unwrap();
    // The base it was sent echoed back as if it were the new snapshot.
    let mut p = hostile(&engine, "lie-base");
    let mut s = held_lab(20);
    p.evaluate(&Pass::new(Arc::new(s.clone()))).unwrap();
    let base = p.held().unwrap().generation;
    next(&mut s, 1);
    let pass = Pass::new(Arc::new(s.clone()));
    let err = p.evaluate(&pass).unwrap_err();
    assert_eq!(err.cause(), "invalid-answer");
    assert!(
        err.to_string().contains(&format!(
            "answers for snapshot {base}, but was sent snapshot"
        )),
        "{err}"
    );
    assert!(p.held().is_none());

    // A generation it was never sent, every second call; the calls between
    // are true, and the one after a refused answer is from nothing.
    let mut p = hostile(&engine, "lie-next");
    let mut s = held_lab(20);
    for round in 0..6 {
        if round > 0 {
            next(&mut s, round);
            // A task arrives that the plugin must see to answer right.
            let mut t = task(30_000 + round, "held-by-plugin", Priority::Urgent, round);
            t.name = format!("late-{round}").into();
            s.queue.push(t);
            order(&mut s);
        }
        let before = p.held().cloned();
        let pass = Pass::new(Arc::new(s.clone()));
        let got = p.evaluate(&pass);
        if round % 2 == 1 {
            let err = got.unwrap_err();
            assert_eq!(err.cause(), "invalid-answer", "pass {round}");
            assert!(err.to_string().contains("answers for snapshot"), "{err}");
            assert!(p.held().is_none(), "pass {round}");
            continue;
        }
        let fresh = hostile(&engine, "ok").evaluate(&pass).unwrap();
        assert_eq!(got.unwrap(), fresh, "pass {round}");
        assert!(
            before.is_none(),
            "pass {round}: after a refused answer the host holds nothing"
        );
        let change = pass.change(before.as_ref(), Kind::Delta).unwrap();
        assert!(Arc::ptr_eq(&change.held, p.held().unwrap()), "pass {round}");
    }
}

#[test]
fn after_a_trap_the_next_pass_is_sent_from_nothing_to_a_fresh_instance() {
    let engine = PluginEngine::new(None).unwrap();
    let mut p = hostile(&engine, "flaky");
    let mut s = held_lab(20);
    p.evaluate(&Pass::new(Arc::new(s.clone()))).unwrap();
    assert!(p.held().is_some());
    next(&mut s, 1);
    let err = p.evaluate(&Pass::new(Arc::new(s.clone()))).unwrap_err();
    assert_eq!(err.cause(), "trap", "{err}");
    assert!(p.held().is_none(), "a trap leaves the host holding nothing");
    next(&mut s, 2);
    let pass = Pass::new(Arc::new(s.clone()));
    let got = p.evaluate(&pass).unwrap();
    assert_eq!(got, hostile(&engine, "ok").evaluate(&pass).unwrap());
    let whole = pass.change(None, Kind::Delta).unwrap();
    assert_eq!(whole.base(), 0);
    assert!(Arc::ptr_eq(&whole.held, p.held().unwrap()));
}

#[test]
fn one_pass_sends_chain_members_holding_different_snapshots_each_its_own_change() {
    let engine = PluginEngine::new(None).unwrap();
    let plugins = crate::plugins::first_party::FIRST_PARTY;
    let (a_name, a_wasm) = plugins[0];
    let (b_name, b_wasm) = plugins[1 % plugins.len()];
    let mut a = load(&engine, a_name, a_wasm);
    let mut s = lab(100);
    a.evaluate(&Pass::new(Arc::new(s.clone()))).unwrap();
    // `b` joins the chain a pass later, and `c` holds what `a` holds.
    let mut b = load(&engine, b_name, b_wasm);
    let mut c = load(&engine, a_name, a_wasm);
    c.forge_held(Arc::clone(a.held().unwrap()));
    for round in 1..5 {
        next(&mut s, round);
        let pass = Pass::new(Arc::new(s.clone()));
        let (ha, hb) = (a.held().cloned(), b.held().cloned());
        let got_a = a.evaluate(&pass).unwrap();
        let got_b = b.evaluate(&pass).unwrap();
        assert_eq!(
            got_a,
            load(&engine, a_name, a_wasm).evaluate(&pass).unwrap()
        );
        assert_eq!(
            got_b,
            load(&engine, b_name, b_wasm).evaluate(&pass).unwrap()
        );
        let (ca, cb) = (
            pass.change(ha.as_ref(), Kind::Delta).unwrap(),
            pass.change(hb.as_ref(), Kind::Delta).unwrap(),
        );
        assert_ne!(ca.held.generation, cb.held.generation, "pass {round}");
        assert!(Arc::ptr_eq(&ca.held, a.held().unwrap()), "pass {round}");
        assert!(Arc::ptr_eq(&cb.held, b.held().unwrap()), "pass {round}");
        if round == 1 {
            // `c` holds the same generation as `a` (it was never sent it:
            // it answers 0 and is sent the whole snapshot).
            assert_eq!(c.evaluate(&pass).unwrap(), got_a);
            assert!(Arc::ptr_eq(
                &pass.change(None, Kind::Delta).unwrap().held,
                c.held().unwrap()
            ));
        }
    }
}

#[path = "tests_v0_2_2.rs"]
mod v0_2_2;
