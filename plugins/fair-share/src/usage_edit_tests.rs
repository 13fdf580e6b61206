//! The kept usage under edits of any shape a host may send (any runs
//! removed, new ones at any places) and under edits that contradict the
//! list they name: the same bits as a fresh instance, never a panic.
use super::history_tests::Lcg;
use super::*;
use nightjar_sdk::Usage;
use nightjar_sdk::testing::SnapshotBuilder;

const H: i64 = 3_600_000;

fn bits(m: &BTreeMap<String, f64>) -> Vec<(String, u64)> {
    m.iter().map(|(k, v)| (k.clone(), v.to_bits())).collect()
}

/// `warm` against an instance that saw nothing (the memo set aside).
fn cold(half_life: i64, s: &Snapshot) -> BTreeMap<String, f64> {
    let kept = MEMO.with(|m| m.take());
    let cold = usage(half_life, s, None);
    MEMO.with(|m| m.replace(kept));
    cold
}

type Run = (usize, u32, i64, Option<i64>);

const NAMES: [&str; 4] = ["vision", "bio", "nlp", ""];

fn snapshot(now: i64, runs: &[Run]) -> Snapshot<'static> {
    let mut s = SnapshotBuilder::at(now).build();
    s.usage = (runs.iter())
        .map(|&(p, gpus, started_at, ended_at)| Usage {
            project: NAMES[p],
            gpus,
            started_at,
            ended_at,
        })
        .collect();
    s
}

fn new_run(g: &mut Lcg, now: i64) -> Run {
    let end = now - g.below(30 * H as u64) as i64 + 5 * H;
    let ended_at = match g.below(5) {
        0 => None,
        _ => Some(end),
    };
    (
        g.below(4) as usize,
        g.below(3) as u32,
        end - 2 * H,
        ended_at,
    )
}

#[test]
fn any_removals_and_any_insertions_give_a_fresh_instances_sums() {
    MEMO.with(|m| m.take());
    let mut g = Lcg(11);
    let half_life = 24 * H;
    let mut now = 1_000 * 24 * H + H;
    let mut runs: Vec<Run> = Vec::new();
    for pass in 0..3_000u64 {
        // Any subset leaves, then new runs at any places.
        let removed: Vec<u32> = (0..runs.len() as u32).filter(|_| g.below(6) == 0).collect();
        for &r in removed.iter().rev() {
            runs.remove(r as usize);
        }
        let m = g.below(5) as usize;
        let len = runs.len() + m;
        let mut added_at: Vec<u32> = Vec::new();
        let mut left = m;
        for p in 0..len {
            // Choose `left` of the `len - p` places still to come.
            if (g.below((len - p) as u64) as usize) < left {
                added_at.push(p as u32);
                left -= 1;
            }
        }
        for &a in &added_at {
            runs.insert(a as usize, new_run(&mut g, now));
        }
        now += g.below(20 * 60_000) as i64;
        let s = snapshot(now, &runs);
        let e = UsageEdit {
            from: pass,
            to: pass + 1,
            removed,
            added_at,
        };
        let warm = usage(half_life, &s, Some(&e));
        assert_eq!(
            bits(&warm),
            bits(&cold(half_life, &s)),
            "pass {pass}: {e:?}"
        );
    }
}

/// The memo after a pass without an edit holds that pass's runs under
/// token 0, the token of the empty list: an edit from the empty list
/// (every run new) must not be read as an edit of what it holds.
#[test]
fn an_edit_from_nothing_never_edits_a_list_kept_without_a_token() {
    MEMO.with(|m| m.take());
    let half_life = 24 * H;
    let now = 500 * H;
    let a = snapshot(now, &[(0, 1, now - 3 * H, Some(now - 2 * H))]);
    let _ = usage(half_life, &a, None);
    let b = snapshot(now, &[(1, 4, now - 9 * H, Some(now - H))]);
    // From the empty list to one run, that run not named new: does not
    // fit the empty list, so it starts afresh.
    let lying = UsageEdit {
        from: 0,
        to: 3,
        removed: vec![],
        added_at: vec![],
    };
    let warm = usage(half_life, &b, Some(&lying));
    assert_eq!(bits(&warm), bits(&cold(half_life, &b)));
}
