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

/// A run as an edit compares it: its project's text, not its address.
type Key = (String, u32, i64, Option<i64>);

/// The edits a host would send one instance: each snapshot's usage against
/// the last one's, as the host's `diff::aligned` makes them (the runs
/// before the first one still there leave, then the two lists side by
/// side, an unequal pair one removal and one addition).
#[derive(Default)]
pub(super) struct Feed {
    token: u64,
    last: Vec<Key>,
}

impl Feed {
    /// The edit from the last snapshot's usage (from nothing the first
    /// time) to `s`'s.
    pub(super) fn edit(&mut self, s: &Snapshot) -> UsageEdit {
        let new: Vec<Key> = (s.usage.iter())
            .map(|u| (u.project.to_string(), u.gpus, u.started_at, u.ended_at))
            .collect();
        let old = std::mem::replace(&mut self.last, new);
        let new = &self.last;
        let skip = (new.first())
            .and_then(|f| old.iter().position(|o| o == f))
            .unwrap_or(old.len());
        let mut removed: Vec<u32> = (0..skip as u32).collect();
        let mut added_at = Vec::new();
        let (mut i, mut j) = (skip, 0);
        while i < old.len() && j < new.len() {
            if old[i] != new[j] {
                removed.push(i as u32);
                added_at.push(j as u32);
            }
            (i, j) = (i + 1, j + 1);
        }
        removed.extend(i as u32..old.len() as u32);
        added_at.extend(j as u32..new.len() as u32);
        let from = self.token;
        self.token += 1;
        UsageEdit {
            from,
            to: self.token,
            removed,
            added_at,
        }
    }
}

fn fresh(half_life: i64, s: &Snapshot) -> BTreeMap<String, f64> {
    MEMO.with(|m| *m.borrow_mut() = Memo::default());
    usage(half_life, s, None)
}

/// The sums at `s` through the warm memo with `feed`'s edit, and through
/// a fresh one (the warm one set aside meanwhile and kept after), with the
/// runs each weighed.
fn warm_and_cold(
    feed: &mut Feed,
    half_life: i64,
    s: &Snapshot,
) -> (BTreeMap<String, f64>, usize, BTreeMap<String, f64>, usize) {
    let warm = usage(half_life, s, Some(&feed.edit(s)));
    let computed = MEMO.with(|m| m.borrow().computed);
    let kept = MEMO.with(|m| m.take());
    let cold = fresh(half_life, s);
    let all = MEMO.with(|m| m.borrow().computed);
    MEMO.with(|m| m.replace(kept));
    (warm, computed, cold, all)
}

#[test]
fn kept_weights_give_the_sums_a_fresh_instance_gives_bit_for_bit() {
    let half_life = 24 * H;
    // Passes 7 minutes apart across two anchors, each checked against
    // an instance that saw nothing before it.
    let mut now = 1_000 * H + 23 * H;
    let mut passes_kept = 0;
    let mut feed = Feed::default();
    for pass in 0..40 {
        let s = week(now);
        let (warm, computed, cold, all) = warm_and_cold(&mut feed, half_life, &s);
        // Asked again (an empty edit), every run is kept.
        assert_eq!(usage(half_life, &s, Some(&feed.edit(&s))), cold);
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
fn an_edit_from_a_list_not_held_or_that_does_not_fit_starts_afresh() {
    let half_life = 24 * H;
    let now = 1_000 * H;
    let mut feed = Feed::default();
    let s = week(now);
    let _ = usage(half_life, &s, Some(&feed.edit(&s)));
    let later = week(now + 60_000);
    let cold = fresh(half_life, &later);
    for k in 0..4 {
        let _ = usage(half_life, &s, Some(&feed.edit(&s)));
        let right = feed.edit(&later);
        assert!(right.added_at.len() >= 2, "{right:?}");
        let wrong = match k {
            // From another list.
            0 => UsageEdit {
                from: right.from + 7,
                ..right
            },
            // A removal past the end, positions out of order, a length
            // that does not add up.
            1 => UsageEdit {
                removed: vec![u32::MAX],
                ..right
            },
            2 => UsageEdit {
                added_at: right.added_at.iter().rev().copied().collect(),
                ..right
            },
            _ => UsageEdit {
                added_at: vec![],
                ..right
            },
        };
        assert_eq!(usage(half_life, &later, Some(&wrong)), cold, "edit {k}");
        let all = MEMO.with(|m| m.borrow().computed);
        assert!(all > 500, "edit {k}: every run weighed afresh, {all}");
        // Its token is the new list's: the next edit from it applies.
        let _ = usage(half_life, &later, Some(&feed.edit(&later)));
        assert_eq!(MEMO.with(|m| m.borrow().computed), 0, "edit {k}");
    }
    // A clock that went back starts afresh too (a run seen ended may run).
    let before = week(now - 60_000);
    let got = usage(half_life, &before, Some(&feed.edit(&before)));
    assert_eq!(got, fresh(half_life, &before));
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
fn a_run_changed_in_place_is_weighed_again() {
    let half_life = 24 * H;
    let now = 500 * H;
    let mut feed = Feed::default();
    let a = SnapshotBuilder::at(now)
        .usage("vision", 1, now - 3 * H, Some(now - 2 * H))
        .build();
    let _ = usage(half_life, &a, Some(&feed.edit(&a)));
    // Same times, another project, then more GPUs: each a new run.
    let b = SnapshotBuilder::at(now)
        .usage("bio", 1, now - 3 * H, Some(now - 2 * H))
        .build();
    let (warm, computed, cold, _) = warm_and_cold(&mut feed, half_life, &b);
    assert_eq!((warm, computed), (cold, 1));
    let _ = usage(half_life, &a, Some(&feed.edit(&a)));
    let c = SnapshotBuilder::at(now)
        .usage("vision", 4, now - 3 * H, Some(now - 2 * H))
        .build();
    let (got, _, cold, _) = warm_and_cold(&mut feed, half_life, &c);
    assert_eq!(got, cold);
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
    let mut feed = Feed::default();
    let first = usage(half_life, &s, Some(&feed.edit(&s)));
    let again = usage(half_life, &s, Some(&feed.edit(&s)));
    assert_eq!(first.len(), MAX_PROJECTS + 10);
    assert_eq!(first, again);
    // Started afresh once past the bound, then named each project once.
    MEMO.with(|m| assert_eq!(m.borrow().names.len(), MAX_PROJECTS + 10));
}
