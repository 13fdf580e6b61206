//! A chain member whose worker thread ended (what a panic in the host's
//! side of a call leaves) fails that pass and answers again at the next,
//! started again from its cached code; it was left failing every call
//! until the chain disabled it.

use std::path::Path;
use std::sync::Arc;

use crate::config::Config;
use crate::daemon::pipeline::chain::Chain;
use crate::plugins::engine::PluginEngine;
use crate::plugins::policy::Priority;
use crate::plugins::tests::{snapshot, task};

#[test]
fn a_member_whose_thread_ended_is_started_again_at_the_next_pass() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = Config::parse(
        &format!(
            "state_dir = {:?}\n[plugins]\nchain = [\"priority\"]\n",
            dir.path().display().to_string()
        ),
        Path::new("nightjar.toml"),
    )
    .unwrap();
    let engine = PluginEngine::new(None).unwrap();
    let mut chain = Chain::load(&cfg, Some(&engine));
    let snap = Arc::new(snapshot(vec![task(1, "vision", Priority::Normal, 0)]));
    let now = snap.now;
    assert!(chain.evaluate(Arc::clone(&snap), now).failures.is_empty());
    chain.end_worker("priority");
    let failed = chain.evaluate(Arc::clone(&snap), now);
    assert_eq!(failed.failures.len(), 1, "{:?}", failed.failures);
    assert!(
        failed.failures[0].1.contains("thread ended"),
        "{:?}",
        failed.failures
    );
    for _ in 0..3 {
        let again = chain.evaluate(Arc::clone(&snap), now);
        assert!(
            again.failures.is_empty(),
            "started again: {:?}",
            again.failures
        );
    }
    assert!(chain.views().iter().all(|v| v.state != "disabled"));
}
