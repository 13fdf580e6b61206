//! `/report`: the last 7 days' accounting and charts, drawn by the same
//! functions as `nightjar report --html`.

use std::sync::Arc;

use axum::Extension;
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use chrono_tz::Tz;

use super::auth::{Session, to_login};
use super::call::{call, error_page};
use super::layout::{Page, escape};
use super::queue::Params;
use crate::api::Report;
use crate::api::access::Caller;
use crate::api::report::Accounting;
use crate::daemon::Daemon;
use crate::report::render::{figure, summary};
use crate::report::{bars, charts};
use crate::time::now_ms;

/// The period: 7 days back from now.
const WEEK_MS: i64 = 7 * 86_400_000;

/// `GET /report`.
pub async fn page(
    State(d): State<Arc<Daemon>>,
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
    p.push_str("<h2>Use of the machine</h2>");
    figure(
        &mut p,
        "gpu-util",
        charts::gpu_util(acc, tz),
        "no GPU samples in this period",
    );
    figure(
        &mut p,
        "queue",
        charts::queue(acc, tz),
        "no queue samples in this period",
    );
    p.push_str("<h2>Cost and energy</h2>");
    figure(
        &mut p,
        "cost",
        bars::cost_by_project(acc),
        "no runs in this period",
    );
    figure(
        &mut p,
        "energy",
        bars::energy_by_hour(acc),
        "no energy or price in this period",
    );
    p.push_str("<h2>Failures</h2>");
    figure(
        &mut p,
        "failures",
        bars::failures(acc),
        "no failures in this period",
    );
    p
}
