//! A policy of the frozen 0.2.2 contract (the `kept-v0_2_2` fixture, built
//! without the SDK) through the same passes as the first-party ones.

use super::*;

#[test]
fn a_0_2_2_policy_is_still_sent_changes_with_running_tasks_and_gpus_whole() {
    // A policy of the frozen 0.2.2 contract, built without the SDK: fed
    // changes pass after pass, it answers as a fresh instance sent the
    // whole snapshot, and its running tasks and GPUs arrive whole.
    const V0_2_2: &[u8] = include_bytes!(env!("NIGHTJAR_TEST_PLUGIN_V0_2_2"));
    let engine = PluginEngine::new(None).unwrap();
    let mut kept = load(&engine, "kept", V0_2_2);
    assert_eq!(
        kept.version.exported,
        crate::plugins::version::Exported::Incremental
    );
    let mut s = lab(120);
    s.queue[3].project = "v022-held".into();
    let (mut deferred, mut closed) = (0, 0);
    for round in 0..16 {
        if round > 0 {
            next(&mut s, round);
        }
        let before = kept.held().cloned();
        let pass = Pass::new(Arc::new(s.clone()));
        let got = kept.evaluate(&pass).unwrap();
        let want = load(&engine, "kept", V0_2_2).evaluate(&pass).unwrap();
        assert_eq!(got, want, "pass {round}");
        let change = pass.change(before.as_ref(), Kind::Incremental).unwrap();
        assert!(
            Arc::ptr_eq(&change.held, kept.held().unwrap()),
            "pass {round}"
        );
        let Wire::Incremental(wire) = &change.wire else {
            panic!("pass {round}: a 0.2.2 policy was sent the delta form");
        };
        assert_eq!(
            (wire.running.len(), wire.gpus.len()),
            (s.running.len(), s.gpus.len()),
            "pass {round}: running tasks and GPUs whole"
        );
        assert_eq!(wire.base, before.as_ref().map_or(0, |h| h.generation));
        deferred += (got.verdicts.iter())
            .filter(|v| matches!(v.verdict, crate::plugins::policy::Verdict::Defer(_)))
            .count();
        closed += got.closed_gpus.len();
    }
    assert!(
        deferred > 0 && closed > 0,
        "{deferred} deferrals, {closed} closures"
    );
}
