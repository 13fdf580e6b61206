//! `/report`: the last 7 days' accounting and charts, drawn by the same
//! functions as `nightjar report --html`.

use axum::Extension;
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use chrono_tz::Tz;

use super::auth::{Session, to_login};
use super::call::{call, error_page};
use super::layout::{Page, escape};
use super::queue::Params;
use crate::access::Caller;
use crate::api::Api;
use crate::api::Report;
use crate::api::report::Accounting;
use crate::report::render::{chart_groups, summary};
use crate::time::now_ms;

/// The period: 7 days back from now.
const WEEK_MS: i64 = 7 * 86_400_000;

/// `GET /report`.
pub async fn page(
    State(d): State<Api>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    Query(q): Query<Params>,
) -> Response {
    let Some(s) = Session::of(caller.map(|Extension(c)| c), &headers) else {
        return to_login();
    };
    let now = now_ms();
    let req = Report {
        from: now - WEEK_MS,
        to: now,
        html: false,
    };
    let acc = match call(&d, &s.caller, req).await {
        Ok(a) => a,
        Err(e) => return error_page(&e),
    };
    let fragment = q.fragment == Some(1);
    let mut page = Page::new("Report: the last 7 days", "/report", render(&acc));
    page.live = false;
    page.render(Some(&s.caller), fragment)
}

/// The summary and the charts of `acc`.
pub fn render(acc: &Accounting) -> String {
    let tz: Tz = acc.time_zone.parse().unwrap_or(Tz::UTC);
    let mut p = format!(
        "<p class=\"meta\">Times in {}; costs in {}. The whole page: \
         <code>nightjar report --since 7d --html week.html</code>.</p>",
        escape(&acc.time_zone),
        escape(&acc.currency)
    );
    summary(&mut p, acc);
    let [machine, money, failures] = chart_groups(acc, tz);
    p.push_str("<h2>Use of the machine</h2>");
    p.push_str(&machine);
    p.push_str("<h2>Cost and energy</h2>");
    p.push_str(&money);
    p.push_str("<h2>Failures</h2>");
    p.push_str(&failures);
    p
}
