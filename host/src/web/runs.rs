//! `/runs`: the runs that ended since a moment (the `runs` verb; by default 18:00 yesterday
//! in the daemon's time zone: last night), with outcome, class, duration,
//! energy and cost.

use std::fmt::Write as _;

use axum::Extension;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use chrono::{Duration, NaiveDate, NaiveTime, TimeZone};
use chrono_tz::Tz;
use serde::Deserialize;

use super::auth::{Session, to_login};
use super::layout::{Page, escape, num, when};
use crate::access::Caller;
use crate::api::Api;
use crate::api::FinishedRun;
use crate::time::now_ms;

/// Most runs listed.
const LIMIT: u32 = 1000;

/// `?since=&fragment=1`.
#[derive(Debug, Default, Deserialize)]
pub struct Params {
    /// RFC 3339, `YYYY-MM-DD` (local midnight) or a span back from now (`12h`).
    pub since: Option<String>,
    /// Only the table.
    pub fragment: Option<u8>,
}

/// `GET /runs`.
pub async fn page(
    State(d): State<Api>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    Query(q): Query<Params>,
) -> Response {
    let Some(s) = Session::of(caller.map(|Extension(c)| c), &headers) else {
        return to_login();
    };

    let tz = d.config().tz();
    let now = now_ms();
    let since = match q.since.as_deref().filter(|s| !s.is_empty()) {
        None => last_evening(now, tz),
        Some(text) => match parse_since(text, now, tz) {
            Some(t) => t,
            None => {
                return super::layout::error(
                    StatusCode::BAD_REQUEST,
                    &format!("since={text}: give RFC 3339, YYYY-MM-DD or a span such as 12h"),
                );
            }
        },
    };
    let req = crate::api::Runs {
        since,
        limit: Some(LIMIT),
    };
    let runs = match super::call::call(&d, &s.caller, req).await {
        Ok(r) => r,
        Err(e) => return super::call::error_page(&e),
    };
    let body = render(&runs, since, tz);
    Page::new("Runs", "/runs", body).render(Some(&s.caller), q.fragment == Some(1))
}

/// 18:00 of the day before `now`'s day in `tz` (Unix ms).
pub fn last_evening(now: i64, tz: Tz) -> i64 {
    let today = crate::time::to_utc(now).with_timezone(&tz).date_naive();
    let evening =
        (today - Duration::days(1)).and_time(NaiveTime::from_hms_opt(18, 0, 0).unwrap_or_default());
    tz.from_local_datetime(&evening)
        .earliest()
        .map_or(now - 30 * 3_600_000, |t| t.timestamp_millis())
}

/// `text` as a moment: RFC 3339, a local date, or a span before `now`.
pub fn parse_since(text: &str, now: i64, tz: Tz) -> Option<i64> {
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(text) {
        return Some(t.timestamp_millis());
    }
    if let Ok(day) = NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        return tz
            .from_local_datetime(&day.and_time(NaiveTime::MIN))
            .earliest()
            .map(|t| t.timestamp_millis());
    }
    let span = humantime::parse_duration(text).ok()?;
    Some(now - i64::try_from(span.as_millis()).ok()?)
}

/// The table of `runs`.
pub fn render(runs: &[FinishedRun], since: i64, tz: Tz) -> String {
    let mut o = format!(
        "<p class=\"meta\">{} runs ended since {} ({}).</p>",
        runs.len(),
        when(since, tz),
        escape(tz.name())
    );
    if runs.is_empty() {
        o.push_str("<p class=\"none\">no runs ended in this period</p>");
        return o;
    }
    o.push_str(
        "<div class=\"scroll\"><table id=\"finished\"><thead><tr><th class=\"num\">Task</th><th>Name</th>\
         <th>Project</th><th>Owner</th><th>Outcome</th><th>Class</th><th>Ended</th>\
         <th class=\"num\">Took</th><th class=\"num\">Energy (kWh)</th><th class=\"num\">Cost</th></tr></thead><tbody>",
    );
    for r in runs {
        let ok = r.class.as_deref() == Some("ok");
        let outcome = match r.class.as_deref() {
            Some("ok") => "succeeded",
            Some("killed") => "cancelled",
            Some(_) => "failed",
            None => "–",
        };
        let _ = write!(
            o,
            "<tr><td class=\"num\"><a href=\"/task/{t}\">{t}</a>{}</td><td class=\"text\">{}</td><td>{}</td>\
             <td>{}</td><td class=\"state state-{}\">{outcome}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{} {}</td></tr>",
            if r.attempt > 1 {
                format!(" #{}", r.attempt)
            } else {
                String::new()
            },
            escape(&r.name),
            escape(&r.project),
            escape(r.owner.as_deref().unwrap_or("–")),
            if ok { "succeeded" } else { "failed" },
            escape(r.class.as_deref().unwrap_or("–")),
            when(r.finished_at, tz),
            crate::report::render::duration(Some(r.finished_at - r.started_at)),
            num(r.energy_j.map(|j| j / 3.6e6), 4),
            num(r.cost, 2),
            escape(r.currency.as_deref().unwrap_or("")),
            t = r.task,
        );
    }
    o.push_str("</tbody></table></div>");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_night_starts_at_six_yesterday_in_the_daemons_zone() {
        let tz: Tz = "Europe/Berlin".parse().unwrap();
        // 2024-06-02 09:00 in Berlin (UTC+2) = 07:00 UTC.
        let now = chrono::Utc
            .with_ymd_and_hms(2024, 6, 2, 7, 0, 0)
            .unwrap()
            .timestamp_millis();
        let start = chrono::Utc
            .with_ymd_and_hms(2024, 6, 1, 16, 0, 0)
            .unwrap()
            .timestamp_millis();
        assert_eq!(last_evening(now, tz), start);
        assert_eq!(parse_since("12h", now, tz), Some(now - 12 * 3_600_000));
        assert_eq!(
            parse_since("2024-06-01", now, tz),
            Some(
                chrono::Utc
                    .with_ymd_and_hms(2024, 5, 31, 22, 0, 0)
                    .unwrap()
                    .timestamp_millis()
            )
        );
        assert_eq!(parse_since("yesterday-ish", now, tz), None);
    }

    #[test]
    fn user_text_is_escaped() {
        let r = FinishedRun {
            task: 3,
            attempt: 1,
            name: "<script>x</script>".into(),
            project: "p&q".into(),
            owner: None,
            started_at: 0,
            finished_at: 60_000,
            class: Some("ok".into()),
            exit_code: Some(0),
            energy_j: Some(3.6e6),
            cost: Some(0.5),
            currency: Some("EUR".into()),
        };
        let html = render(&[r], 0, Tz::UTC);
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("&lt;script&gt;") && html.contains("p&amp;q"));
        assert!(html.contains("1.0000") && html.contains("0.50 EUR"));
    }
}
