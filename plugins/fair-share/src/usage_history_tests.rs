//! The kept usage after any history: runs reordered, duplicated, dropped
//! (hundreds at once), changed in place, names at other addresses, times
//! at the ends of i64, against a fresh instance (bit for bit) and the decay
//! formula run by run (within 10^-9).
use super::tests::Feed;
use super::*;
use nightjar_sdk::Usage;
use nightjar_sdk::testing::SnapshotBuilder;

const H: i64 = 3_600_000;

/// A small deterministic generator (the same sequence everywhere).
pub(super) struct Lcg(pub(super) u64);

impl Lcg {
    pub(super) fn below(&mut self, n: u64) -> u64 {
        self.0 = (self.0)
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n.max(1)
    }

    fn any(&mut self) -> i64 {
        (self.below(1 << 31) << 33 ^ self.below(1 << 31) << 2 ^ self.below(4)) as i64
    }

    fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[self.below(from.len() as u64) as usize]
    }
}

/// The decay formula, run by run in the usage's order (times as i128).
fn plain(half_life: i64, s: &Snapshot) -> BTreeMap<String, f64> {
    let mut want = BTreeMap::new();
    for u in &s.usage {
        let end = u.ended_at.unwrap_or(s.now).min(s.now);
        let age = (i128::from(s.now) - i128::from(end)) as f64;
        let w = hours(u.started_at, end)
            * f64::from(u.gpus.max(1))
            * 0.5f64.powf(age / half_life as f64);
        *want.entry(u.project.to_string()).or_insert(0.0) += w;
    }
    want
}

fn bits(m: &BTreeMap<String, f64>) -> Vec<(&str, u64)> {
    m.iter().map(|(k, v)| (k.as_str(), v.to_bits())).collect()
}

/// The usage after whatever this instance saw before, reached through
/// `feed`'s edit: the same bits as an instance that saw nothing (this
/// one's memo set aside meanwhile and kept after), and the formula within
/// rounding. The runs weighed this pass, and the ended runs kept.
fn check(feed: &mut Feed, half_life: i64, s: &Snapshot, what: &str) -> (usize, usize) {
    let warm = usage(half_life, s, Some(&feed.edit(s)));
    let weighed = MEMO.with(|m| {
        let m = m.borrow();
        (m.computed, m.rows.iter().filter(|r| r.closed).count())
    });
    let kept = MEMO.with(|m| m.take());
    let cold = usage(half_life, s, None);
    MEMO.with(|m| m.replace(kept));
    assert_eq!(bits(&warm), bits(&cold), "{what}");
    let want = plain(half_life, s);
    assert_eq!(
        warm.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>(),
        "{what}"
    );
    for (p, w) in &want {
        let g = warm[p];
        assert!(
            g.is_finite() && g >= 0.0 && (g - w).abs() <= w * 1e-9 + 1e-300,
            "{what}: {p:?}: {g:e} against {w:e}"
        );
    }
    weighed
}

#[derive(Clone, Copy, Debug)]
struct Run {
    project: usize,
    gpus: u32,
    started_at: i64,
    ended_at: Option<i64>,
    /// Its name at an address of its own, not the shared one.
    own: bool,
}

/// A snapshot of `runs` at `now`, names borrowed from `names` or `copies`.
fn snapshot<'a>(
    now: i64,
    runs: &[Run],
    names: &'a [String],
    copies: &'a [Option<String>],
) -> Snapshot<'a> {
    let mut s: Snapshot<'a> = SnapshotBuilder::at(now).build();
    s.usage = (runs.iter().zip(copies))
        .map(|(r, c)| Usage {
            project: c.as_deref().unwrap_or(&names[r.project]),
            gpus: r.gpus,
            started_at: r.started_at,
            ended_at: r.ended_at,
        })
        .collect();
    s
}

/// A new run near `now`: mostly ended within the week, some running, some
/// said to end later, some ending before they start, a few anywhere.
fn new_run(g: &mut Lcg, now: i64, projects: usize) -> Run {
    let end = now.saturating_sub(g.below(7 * 24 * H as u64) as i64);
    let start = end.saturating_sub(g.below(10 * H as u64) as i64);
    let (started_at, ended_at) = match g.below(20) {
        0 => (start, None),
        1 => (
            start,
            Some(now.saturating_add(g.below(H as u64) as i64 + 1)),
        ),
        2 => (end.saturating_add(g.below(H as u64) as i64), Some(end)),
        3 => (g.any(), Some(g.any())),
        4 => (g.pick(&[i64::MIN, i64::MAX, 0, -1]), Some(end)),
        _ => (start, Some(end)),
    };
    Run {
        project: g.below(projects as u64) as usize,
        gpus: g.pick(&[0, 1, 1, 2, 4, 8, u32::MAX]),
        started_at,
        ended_at,
        own: g.below(4) == 0,
    }
}

/// One edit of the runs between passes.
fn edit(g: &mut Lcg, runs: &mut Vec<Run>, now: i64, projects: usize) {
    let n = runs.len();
    let at = g.below(n.max(1) as u64) as usize;
    match g.below(40) {
        // Hundreds leave at once, or join at once.
        0 => drop(runs.drain(..(257 + g.below(100) as usize).min(n))),
        1 => {
            let from = g.below(n as u64 + 1) as usize;
            runs.splice(from..from, (0..300).map(|_| new_run(g, now, projects)));
        }
        2..=4 if n > 0 => drop(runs.remove(at)),
        5..=6 if n > 1 => runs.swap(at, g.below(n as u64) as usize),
        7 if n > 0 => runs[at..(at + 20).min(n)].reverse(),
        8..=9 if n > 0 => runs.insert(g.below(n as u64) as usize, runs[at]),
        10..=11 if n > 0 => runs[at].gpus = g.pick(&[0, 1, 3, u32::MAX]),
        12..=13 if n > 0 => runs[at].project = g.below(projects as u64) as usize,
        14..=15 if n > 0 => runs[at].own = !runs[at].own,
        16..=17 => runs.insert(at.min(n), new_run(g, now, projects)),
        // Mostly the window moves: a few leave at the front, a few join at
        // the end.
        _ => {
            runs.drain(..(g.below(4) as usize).min(n));
            for _ in 0..g.below(6) {
                runs.push(new_run(g, now, projects));
            }
        }
    }
}

#[test]
fn after_any_history_the_sums_are_a_fresh_instances_bit_for_bit() {
    MEMO.with(|m| m.take());
    let names: Vec<String> = ["vision", "bio", "", "nlp", "é", "vision2", "x", "y"]
        .iter()
        .map(|n| n.to_string())
        .collect();
    let mut g = Lcg(7);
    let mut now = 1_700_000_000_000i64;
    let mut half_life = 24 * H;
    let mut runs: Vec<Run> = (0..300).map(|_| new_run(&mut g, now, 4)).collect();
    let mut feed = Feed::default();
    let mut mixed = 0;
    for pass in 0..1_500 {
        for _ in 0..1 + g.below(3) {
            edit(&mut g, &mut runs, now, names.len());
        }
        runs.truncate(700);
        now = match g.below(120) {
            0 => now.saturating_sub(g.below(H as u64) as i64),
            1 => now.saturating_add(g.below(30 * 24 * H as u64) as i64),
            2 => g.pick(&[i64::MIN, i64::MIN + 1, -1, 0, i64::MAX - 1, i64::MAX]),
            3 => 1_700_000_000_000 + g.below(H as u64) as i64,
            _ => now.saturating_add(g.below(10 * 60_000) as i64),
        };
        if g.below(100) == 0 {
            let years = 3_650 * 24 * H;
            half_life = g.pick(&[1, 7, 60_000, H, 24 * H, 24 * H, years, i64::MAX]);
        }
        let copies: Vec<Option<String>> = (runs.iter())
            .map(|r| r.own.then(|| names[r.project].clone()))
            .collect();
        let s = snapshot(now, &runs, &names, &copies);
        let (computed, ended) = check(
            &mut feed,
            half_life,
            &s,
            &format!("pass {pass} at {now}, half-life {half_life}"),
        );
        // Some runs kept, some weighed again.
        mixed += usize::from(computed > 0 && computed < ended);
        // Asked again at once: the same, every run kept.
        let (again, _) = check(&mut feed, half_life, &s, &format!("pass {pass} again"));
        assert_eq!(again, 0, "pass {pass}");
    }
    assert!(mixed > 600, "{mixed} passes both kept and weighed runs");
}

#[test]
fn times_and_gpus_at_the_ends_of_their_range_neither_panic_nor_drift() {
    let mut feed = Feed::default();
    let ends = [
        i64::MIN,
        i64::MIN + 1,
        -3 * H,
        -1,
        0,
        1,
        5 * H,
        i64::MAX - 1,
        i64::MAX,
    ];
    for half_life in [1, 7, H, 24 * H, 100 * 365 * 24 * H, i64::MAX] {
        for now in ends {
            let mut b = SnapshotBuilder::at(now);
            for (k, &a) in ends.iter().enumerate() {
                for &z in &ends {
                    let gpus = [0, 1, u32::MAX][k % 3];
                    let project = ["", "x", "y"][(k + 1) % 3];
                    b = b
                        .usage(project, gpus, a, Some(z))
                        .usage(project, gpus, a, None);
                    let near = Some(now.saturating_sub(z.unsigned_abs().min(1 << 40) as i64));
                    b = b.usage(project, gpus, a.min(now), near);
                }
            }
            let mut s = b.build();
            let what = format!("now {now}, half-life {half_life}");
            check(&mut feed, half_life, &s, &what);
            s.usage.reverse();
            check(&mut feed, half_life, &s, &what);
            s.usage.truncate(40);
            check(&mut feed, half_life, &s, &what);
        }
    }
}

#[test]
fn thousands_of_the_largest_runs_sum_past_a_u128() {
    let mut feed = Feed::default();
    // 2^64 ms on 2^32 GPUs: about 2^127 units each.
    let now = i64::MAX;
    let mut b = SnapshotBuilder::at(now);
    for k in 0..3_000 {
        b = b.usage(
            ["a", "b"][k % 2],
            u32::MAX,
            i64::MIN,
            Some(now - (k % 3) as i64),
        );
    }
    let mut s = b.build();
    for half_life in [H, i64::MAX] {
        check(&mut feed, half_life, &s, "all");
        s.usage.drain(..1_001);
        check(&mut feed, half_life, &s, "fewer");
    }
}

#[test]
fn more_projects_than_the_memo_keeps_then_few_again() {
    let mut feed = Feed::default();
    let now = 900 * H;
    let few = |b: SnapshotBuilder| {
        b.usage("vision", 1, now - 5 * H, Some(now - 4 * H))
            .usage("bio", 2, now - 3 * H, None)
    };
    let s = few(SnapshotBuilder::at(now)).build();
    check(&mut feed, 24 * H, &s, "few");
    let mut b = few(SnapshotBuilder::at(now + 1));
    for k in 0..(MAX_PROJECTS + 500) {
        b = b.usage(
            &format!("q{}", k % (MAX_PROJECTS + 300)),
            1,
            now - 3 * H,
            Some(now),
        );
    }
    let many = b.build();
    check(&mut feed, 24 * H, &many, "many");
    check(&mut feed, 24 * H, &many, "many again");
    let s = few(SnapshotBuilder::at(now + 2)).build();
    check(&mut feed, 24 * H, &s, "few again");
    MEMO.with(|m| assert!(m.borrow().names.len() <= 2, "started afresh"));
}

#[test]
fn a_cluster_idle_for_many_half_lives_keeps_its_proportions() {
    let mut feed = Feed::default();
    // 60 half-lives after the last run: 2^-60 of a GPU-hour is far below
    // one unit of any fixed scale, yet the projects' shares of it are
    // what fair-share compares.
    let now = 2_000 * H;
    for idle in [10, 45, 60, 300, 1_000] {
        let end = now - idle * H;
        let s = SnapshotBuilder::at(now)
            .usage("vision", 1, end - 9 * H, Some(end))
            .usage("bio", 1, end - H, Some(end))
            .build();
        check(&mut feed, H, &s, &format!("idle {idle}h"));
        let u = usage(H, &s, None);
        let share = u["bio"] / (u["vision"] + u["bio"]);
        assert!((share - 0.1).abs() < 1e-12, "idle {idle}h: {u:?}");
    }
}
