//! A chain that mixes versions of the contract: a 0.1 component built from
//! the current sources (tests/plugins/legacy-v0_1, bound to the frozen
//! `wit/nightjar-plugin@0.1.0`, as the lab's existing files are) next to the
//! first-party priority policy on 0.2.3 (a delta policy, sent the pass as a
//! change). One pass, one snapshot; both answers take effect in
//! the combined order.

use std::path::Path;
use std::sync::Arc;

use crate::config::Config;
use crate::daemon::pipeline::chain::Chain;
use crate::daemon::pipeline::combine::Judgement;
use crate::plugins::engine::PluginEngine;
use crate::plugins::policy::Priority;
use crate::plugins::tests::{snapshot, task};

const V0_1: &str = env!("NIGHTJAR_TEST_PLUGIN_V0_1");

#[test]
fn a_0_1_plugin_and_a_0_2_plugin_judge_one_pass_together() {
    let dir = tempfile::tempdir().unwrap();
    let plugins = dir.path().join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::copy(V0_1, plugins.join("legacy.wasm")).unwrap();
    let cfg = Config::parse(
        &format!(
            "state_dir = {:?}\n[plugins]\nchain = [\"priority\", \"legacy\"]\n",
            dir.path().display().to_string()
        ),
        Path::new("nightjar.toml"),
    )
    .unwrap();
    let engine = PluginEngine::new(None).unwrap();
    let mut chain = Chain::load(&cfg, Some(&engine));
    let versions: Vec<(String, Option<String>)> = chain
        .views()
        .into_iter()
        .map(|v| (v.name, v.api_version))
        .collect();
    assert_eq!(
        versions,
        [
            ("priority".into(), Some("0.2.3".into())),
            ("legacy".into(), Some("0.1.0".into()))
        ]
    );
    // Task 1 is older and of the same class: alone, priority starts it first.
    let snap = snapshot(vec![
        task(1, "vision", Priority::Normal, 0),
        task(2, "legacy-first", Priority::Normal, 3_600_000),
        task(3, "legacy-held", Priority::High, 0),
    ]);
    let now = snap.now;
    let answer = chain.evaluate(Arc::new(snap), now);
    assert!(answer.failures.is_empty(), "{:?}", answer.failures);
    let score = |id| match answer.judgements.get(id) {
        Some(Judgement::Eligible(s)) => *s,
        other => panic!("task {id}: {other:?}"),
    };
    assert_eq!(score(1), 100 + 100, "normal, 10 h of aging at 10/h");
    assert_eq!(score(2), 100 + 90 + 1000, "the 0.1 plugin's 1000 on top");
    assert!(score(2) > score(1), "the 0.1 plugin's score takes effect");
    match answer.judgements.get(3) {
        Some(Judgement::Deferred(d)) => assert_eq!(
            d.to_string(),
            "deferred by legacy: held by the 0.1 plugin legacy"
        ),
        other => panic!("task 3: {other:?}"),
    }
    assert_eq!(
        answer.parts.get(&2).cloned().unwrap_or_default(),
        [("priority".into(), 190), ("legacy".into(), 1000)]
    );
}
