//! `report`'s flags and its CSV, without a daemon.

use super::*;
use nightjar_core::api::report::Series;

fn group(key: &str, runs: u64, outcomes: &[(&str, u64)]) -> Group {
    Group {
        key: key.into(),
        runs,
        outcomes: outcomes.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        gpu_hours: 1.5,
        wait_p50_ms: Some(1000),
        wait_p95_ms: None,
        energy_kwh: 0.25,
        estimated_kwh: 0.0,
        cost: 0.5,
        cost_at_submit: 0.75,
        savings: 0.25,
    }
}

fn accounting(by_project: Vec<Group>) -> Accounting {
    Accounting {
        from: 0,
        to: 1,
        generated_at: 1,
        time_zone: "UTC".into(),
        currency: "EUR".into(),
        total: group("all", 3, &[("ok", 2), ("app-error", 1)]),
        by_project,
        by_user: Vec::new(),
        by_task: Vec::new(),
        series: Series::default(),
        longest_waits: Vec::new(),
        html: None,
    }
}

#[test]
fn csv_quotes_commas_quotes_and_newlines_and_has_a_column_per_class() {
    let acc = accounting(vec![
        group("a,b \"c\"\nd", 2, &[("ok", 2)]),
        group("plain", 1, &[("weird-class", 1)]),
    ]);
    let text = csv(&acc, By::Project);
    let lines: Vec<&str> = text.split_terminator("\r\n").collect();
    assert_eq!(lines.len(), 3, "{text}");
    let head: Vec<&str> = lines[0].split(',').collect();
    assert_eq!(head[..3], ["project", "runs", "outcome_ok"]);
    assert!(head.contains(&"outcome_app-error") && head.contains(&"outcome_weird-class"));
    assert_eq!(head.last(), Some(&"currency"));
    assert!(
        lines[1].starts_with("\"a,b \"\"c\"\"\nd\",2,2,"),
        "{}",
        lines[1]
    );
    // A missing percentile is an empty field, not "None" or NaN.
    assert!(lines[2].contains(",1000,,0.25,"), "{}", lines[2]);
    assert!(text.ends_with("\r\n"));
    assert_eq!(csv(&acc, By::All).split_terminator("\r\n").count(), 2);
    assert_eq!(csv(&acc, By::User).split_terminator("\r\n").count(), 1);
}

#[test]
fn times_are_rfc3339_or_a_local_day_and_durations_name_their_mistake() {
    assert_eq!(parse_time("2024-01-01T00:00:00Z"), Ok(1_704_067_200_000));
    assert_eq!(
        parse_time("2024-01-01T02:00:00+02:00"),
        Ok(1_704_067_200_000)
    );
    let day = parse_time("2024-01-01").unwrap();
    let local = Local
        .from_local_datetime(
            &NaiveDate::from_ymd_opt(2024, 1, 1)
                .unwrap()
                .and_hms_opt(0, 0, 0)
                .unwrap(),
        )
        .earliest()
        .unwrap();
    assert_eq!(day, local.timestamp_millis());
    assert!(parse_time("tomorrow").unwrap_err().contains("RFC 3339"));
    assert_eq!(parse_since("7d"), Ok(7 * 86_400_000));
    assert!(parse_since("100y").is_ok());
    assert!(parse_since("soon").unwrap_err().contains("not a duration"));
    assert!(parse_since("2000y").unwrap_err().contains("1000 years"));
}

#[test]
fn the_period_defaults_to_seven_days_and_refuses_to_end_before_it_starts() {
    let args = |since, from, to| Args {
        since,
        from,
        to,
        by: By::Project,
        csv: false,
        html: None,
        pdf: None,
        trace: false,
    };
    let now = 1_000_000_000_000;
    assert_eq!(
        args(None, None, None).period(now),
        Ok((now - 7 * 86_400_000, now))
    );
    assert_eq!(args(Some(5), None, None).period(now), Ok((now - 5, now)));
    assert_eq!(args(None, Some(3), Some(3)).period(now), Ok((3, 3)));
    let err = args(None, Some(4), Some(3)).period(now).unwrap_err();
    assert!(err.contains("--from") && err.contains("--to"), "{err}");
}
