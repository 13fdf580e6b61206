//! The kept usage against a fresh computation.
use super::*;
use nightjar_sdk::testing::SnapshotBuilder;

const H: i64 = 3_600_000;

/// A week of hour-long runs ending every 17 minutes, in three projects,
/// two running: the usage at `now`.
fn week(now: i64) -> Snapshot<'static> {
    let mut b = SnapshotBuilder::at(now);
    // Ends on a grid fixed in time, so passes share most runs.
    let step = 17 * 60_000;
    let mut end = (now - 7 * 24 * H).div_euclid(step) * step + step;
    while end < now {
        let k = (end / step) as usize;
        let project = ["vision", "bio", "nlp"][k % 3];
        b = b.usage(project, (k % 4) as u32, end - H, Some(end));
        end += step;
    }
    b.usage("bio", 2, now - 3 * H, None)
        .usage("vision", 1, now - H, Some(now + H))
        .build()
}

fn fresh(half_life: i64, s: &Snapshot) -> BTreeMap<String, f64> {
    MEMO.with(|m| *m.borrow_mut() = Memo::default());
    owned(usage(half_life, s))
}

fn owned(m: BTreeMap<&str, f64>) -> BTreeMap<String, f64> {
    m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

#[test]
fn kept_weights_give_the_sums_a_fresh_instance_gives_bit_for_bit() {
    let half_life = 24 * H;
    // Passes 7 minutes apart across two anchors, each checked against
    // an instance that saw nothing before it.
    let mut now = 1_000 * H + 23 * H;
    let mut passes_kept = 0;
    for pass in 0..40 {
        let s = week(now);
        let warm = owned(usage(half_life, &s));
        let computed = MEMO.with(|m| m.borrow().computed);
        let cold = fresh(half_life, &s);
        let all = MEMO.with(|m| m.borrow().computed);
        // Asked again, the fresh instance finds every run kept.
        assert_eq!(owned(usage(half_life, &s)), cold);
        assert_eq!(MEMO.with(|m| m.borrow().computed), 0);
        assert_eq!(warm.len(), 3, "{warm:?}");
        assert!(all > 500, "a fresh instance weighs every run: {all}");
        // Across an anchor everything is weighed again; else only
        // the runs that ended since.
        let crossed =
            pass == 0 || (now - 7 * 60_000).div_euclid(half_life) != now.div_euclid(half_life);
        assert!(
            crossed || computed <= 2,
            "{computed} weighed again at {now}"
        );
        passes_kept += usize::from(!crossed);
        for (p, v) in &cold {
            assert_eq!(warm[p].to_bits(), v.to_bits(), "{p} at {now}");
        }
        now += 7 * 60_000;
    }
    assert!(passes_kept > 30, "{passes_kept}");
}

#[test]
fn the_sums_are_the_decay_formula_within_rounding() {
    let half_life = 10 * H;
    let now = 1_234 * H + 5 * 60_000;
    let s = week(now);
    let mut want: BTreeMap<String, f64> = BTreeMap::new();
    for u in &s.usage {
        let end = u.ended_at.unwrap_or(now).min(now);
        let w = hours(u.started_at, end)
            * u.gpus.max(1) as f64
            * 0.5f64.powf((now - end) as f64 / half_life as f64);
        *want.entry(u.project.to_string()).or_default() += w;
    }
    let got = fresh(half_life, &s);
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>()
    );
    for (p, v) in &want {
        assert!(
            (got[p] - v).abs() <= v.abs() * 1e-12,
            "{p}: {} vs {v}",
            got[p]
        );
    }
}

#[test]
fn a_run_changed_in_place_is_not_taken_for_the_kept_one() {
    let half_life = 24 * H;
    let now = 500 * H;
    let a = SnapshotBuilder::at(now)
        .usage("vision", 1, now - 3 * H, Some(now - 2 * H))
        .build();
    let _ = usage(half_life, &a);
    // Same times, another project, then more GPUs: each a new run.
    let b = SnapshotBuilder::at(now)
        .usage("bio", 1, now - 3 * H, Some(now - 2 * H))
        .build();
    assert_eq!(owned(usage(half_life, &b)), fresh(half_life, &b));
    let _ = usage(half_life, &a);
    let c = SnapshotBuilder::at(now)
        .usage("vision", 4, now - 3 * H, Some(now - 2 * H))
        .build();
    let got = owned(usage(half_life, &c));
    assert_eq!(got, fresh(half_life, &c));
    assert!(got["vision"] > 3.0, "four GPUs for an hour: {got:?}");
}

#[test]
fn many_projects_start_the_memo_afresh_and_keep_the_answer() {
    let half_life = 24 * H;
    let now = 800 * H;
    let mut names = Vec::new();
    for k in 0..(MAX_PROJECTS + 10) {
        names.push(format!("p{k}"));
    }
    let mut b = SnapshotBuilder::at(now);
    for (k, n) in names.iter().enumerate() {
        b = b.usage(n, 1, now - 2 * H - k as i64, Some(now - H));
    }
    let s = b.build();
    let first = owned(usage(half_life, &s));
    let again = owned(usage(half_life, &s));
    assert_eq!(first.len(), MAX_PROJECTS + 10);
    assert_eq!(first, again);
    // Started afresh once past the bound, then named each project once.
    MEMO.with(|m| assert_eq!(m.borrow().names.len(), MAX_PROJECTS + 10));
}
