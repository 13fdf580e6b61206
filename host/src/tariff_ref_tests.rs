//! `Tariff::spans` and `KeptSpans::spans` against the first `spans` (every
//! cut of the range collected, sorted, priced at its start), kept here as
//! the reference: random windows, some at the wall times a zone skips or
//! repeats, asked over ranges that move forward, back and far, whose ends
//! are often an edge exactly, around every kind of offset change (30- and
//! 45-minute offsets and DST, DST at midnight, whole days skipped and
//! repeated), at the ends of time, and with a tariff replaced by an equal
//! one in another allocation.

use std::sync::Arc;

use chrono::{Offset, TimeZone};

use super::{KeptSpans, Tariff, Window};

const H: i64 = 3_600_000;
const DAY: i64 = 24 * H;

/// The first `spans`, as it was before the edges were kept.
fn reference(t: &Tariff, from_ms: i64, to_ms: i64) -> Vec<(i64, i64, f64)> {
    if to_ms <= from_ms {
        return Vec::new();
    }
    let mut cuts = vec![from_ms, to_ms];
    let day = |ms: i64| t.local(ms).map(|l| l.date_naive());
    if let (Some(first), Some(last)) = (day(from_ms), day(to_ms)) {
        let one = chrono::Days::new(1);
        let mut d = first.checked_sub_days(one).unwrap_or(first);
        let end = last.checked_add_days(one).unwrap_or(last);
        while d <= end {
            for w in &t.windows {
                for sec in [w.from_s, w.to_s] {
                    if let Some(at) = t.instant(d, sec)
                        && from_ms < at
                        && at < to_ms
                    {
                        cuts.push(at);
                    }
                }
            }
            match d.checked_add_days(one) {
                Some(next) => d = next,
                None => break,
            }
        }
    }
    cuts.sort_unstable();
    cuts.dedup();
    let mut out: Vec<(i64, i64, f64)> = Vec::new();
    for pair in cuts.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        let price = t.price_at(a);
        match out.last_mut() {
            Some(last) if last.2 == price => last.1 = b,
            _ => out.push((a, b, price)),
        }
    }
    out
}

/// A small deterministic generator (the same series every run).
pub(super) struct Lcg(pub(super) u64);

impl Lcg {
    pub(super) fn below(&mut self, n: u64) -> u64 {
        self.0 = (self.0)
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n.max(1)
    }

    fn span(&mut self, most: i64) -> i64 {
        self.below(most as u64) as i64
    }
}

fn offset(tz: chrono_tz::Tz, ms: i64) -> i64 {
    let o = tz.timestamp_millis_opt(ms).unwrap().offset().fix();
    i64::from(o.local_minus_utc()) * 1000
}

/// The zone's offset changes from 1860 to 2040 (to the second), each with
/// the offsets before and after it.
fn changes(tz: chrono_tz::Tz) -> Vec<(i64, i64, i64)> {
    let mut out = Vec::new();
    let (mut t, end) = (-3_471_292_800_000i64, 2_208_988_800_000i64);
    let mut before = offset(tz, t);
    while t < end {
        let after = offset(tz, t + 12 * H);
        if after != before {
            let (mut a, mut b) = (t, t + 12 * H);
            while b - a > 1000 {
                let m = a + (b - a) / 2;
                if offset(tz, m) == before {
                    a = m
                } else {
                    b = m
                }
            }
            out.push((b, before, after));
            before = after;
        }
        t += 12 * H;
    }
    out
}

/// Random windows (perhaps none), their edges at midnight, at the end of
/// the day, on the half hour, anywhere, or at one of the `hints`.
fn tariff(g: &mut Lcg, tz: chrono_tz::Tz, hints: &[u32]) -> Option<Tariff> {
    let mut windows = Vec::new();
    for i in 0..g.below(4) {
        let mut time = || match g.below(6) {
            0 => 0,
            1 => 86_400,
            2 => hints[g.below(hints.len() as u64) as usize],
            3 => g.below(48) as u32 * 1800,
            _ => g.below(86_400) as u32,
        };
        let (from_s, to_s) = (time() % 86_400, time());
        let mut days = [false; 7];
        days.iter_mut().for_each(|d| *d = g.below(3) > 0);
        days[g.below(7) as usize] = true;
        let price = [0.1, 0.25, 1.0, 0.4][(i + g.below(2)) as usize % 4];
        let label = format!("{from_s}-{to_s}");
        windows.push(Window {
            from_s,
            to_s,
            price,
            days,
            label,
        });
    }
    Tariff::new("X".into(), 1.0, windows, tz).ok()
}

/// The three answers to one range, compared.
fn ask(t: &Arc<Tariff>, kept: &mut KeptSpans, from: i64, to: i64, what: &str) {
    let want = reference(t, from, to);
    assert_eq!(t.spans(from, to), want, "spans, {what}: {from}..{to}");
    assert_eq!(kept.spans(t, from, to), want, "kept, {what}: {from}..{to}");
}

#[test]
fn spans_kept_or_not_answer_as_the_first_spans_around_every_kind_of_offset_change() {
    let zones = [
        "Asia/Kathmandu",
        "Pacific/Chatham",
        "Australia/Lord_Howe",
        "Pacific/Apia",
        "Pacific/Kwajalein",
        "America/Juneau",
        "America/Sao_Paulo",
        "America/Havana",
        "America/St_Johns",
        "Europe/Dublin",
        "Antarctica/Troll",
        "Europe/Berlin",
    ];
    let mut g = Lcg(11);
    let (lo, hi) = (
        chrono::DateTime::<chrono::Utc>::MIN_UTC.timestamp_millis(),
        chrono::DateTime::<chrono::Utc>::MAX_UTC.timestamp_millis(),
    );
    let mut asked = 0;
    for name in zones {
        let tz: chrono_tz::Tz = name.parse().unwrap();
        let all = changes(tz);
        assert!(!all.is_empty(), "{name}: no offset change found");
        // Every change of an odd size or over an hour, and a few others.
        let mut some: Vec<_> = (all.iter().copied())
            .filter(|&(_, a, b)| (a - b).abs() > H || (a - b) % H != 0)
            .collect();
        some.extend((0..6).map(|_| all[g.below(all.len() as u64) as usize]));
        for (at, before, after) in some {
            // The wall times either side of the change, and a second off.
            let wall = |off: i64| ((at + off).rem_euclid(DAY) / 1000) as u32;
            let hints = [wall(before), wall(after), wall(before) ^ 1, wall(after) ^ 1];
            // Changes over an hour are few and far between: more tariffs.
            let tries = if (before - after).abs() > H { 12 } else { 3 };
            for _ in 0..tries {
                let Some(t) = tariff(&mut g, tz, &hints) else {
                    continue;
                };
                let mut t = Arc::new(t);
                let mut kept = KeptSpans::default();
                let mut now = at - g.span(6 * DAY);
                for step in 0..40 {
                    let what = format!("{name}, change at {at}, step {step}");
                    now = match g.below(24) {
                        0 => now.saturating_sub(g.span(4 * DAY)),
                        1 => now.saturating_add(g.span(20 * DAY)),
                        2 => [lo, hi, i64::MIN, i64::MAX][g.below(4) as usize],
                        // Mostly a range across the change.
                        3..=10 => at - g.span(DAY),
                        // The same tariff in another allocation.
                        11 => {
                            t = Arc::new(Tariff::clone(&t));
                            now
                        }
                        _ => now.saturating_add(g.span(6 * H)),
                    };
                    let from = now.saturating_sub(g.span(2) * g.span(DAY));
                    let long = [
                        1 + g.span(1000),
                        1 + g.span(DAY),
                        1 + g.span(2 * DAY),
                        14 * DAY,
                    ];
                    let mut to = from.saturating_add(long[g.below(4) as usize]);
                    if g.below(4) == 0 && (at - 7 * DAY..at).contains(&from) {
                        // Across the change, to up to a day after it.
                        to = at + g.span(DAY);
                    }
                    // Either end an edge exactly, now and then.
                    let near = reference(&t, from.saturating_sub(DAY), to.saturating_add(DAY));
                    let edge = |g: &mut Lcg| near.get(1 + g.below(near.len() as u64) as usize);
                    let from = match (g.below(3), edge(&mut g)) {
                        (0, Some(e)) => e.0,
                        _ => from,
                    };
                    if let (0, Some(e)) = (g.below(3), edge(&mut g)) {
                        to = e.0;
                    }
                    ask(&t, &mut kept, from, to, &what);
                    asked += 1;
                }
            }
        }
    }
    assert!(asked > 5_000, "{asked} ranges asked");
}
