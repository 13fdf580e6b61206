//! `/`: the waiting and running tasks, a page at a time (the `queue` verb),
//! each with its waiting reason, a link to the full `why`, and the actions
//! its caller may take.

use std::fmt::Write as _;

use axum::Extension;
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use serde::Deserialize;

use super::auth::{Session, to_login};
use super::layout::{Page, escape, html};
use crate::access::{Access, Caller};
use crate::api::Api;
use crate::api::QueuePage;
use crate::api::wire::{TaskRow, TaskState};

/// Rows on one page.
pub const PER_PAGE: u32 = crate::api::handlers::queue::PER_PAGE;

/// `?page=N&fragment=1`.
#[derive(Debug, Default, Deserialize)]
pub struct Params {
    /// 1-based page number.
    pub page: Option<u64>,
    /// Only the table (the script swaps it in).
    pub fragment: Option<u8>,
}

/// `GET /`.
pub async fn page(
    State(d): State<Api>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    Query(q): Query<Params>,
) -> Response {
    let Some(s) = Session::of(caller.map(|Extension(c)| c), &headers) else {
        return to_login();
    };

    let page = q.page.unwrap_or(1).max(1);
    let offset = (page - 1).saturating_mul(PER_PAGE as u64);
    let req = crate::api::Queue {
        limit: Some(PER_PAGE),
        offset,
    };
    let p = match super::call::call(&d, &s.caller, req).await {
        Ok(p) => p,
        Err(e) => return super::call::error_page(&e),
    };
    let body = render(d.access(), &s, &p, page);
    if q.fragment == Some(1) {
        return html(axum::http::StatusCode::OK, body);
    }
    Page::new("Queue", "/", body).render(Some(&s.caller), false)
}

/// The fragment: counts, pager, table.
pub fn render(d: &Access, s: &Session, p: &QueuePage, page: u64) -> String {
    let mut o = String::with_capacity(400 * p.rows.len() + 1024);
    let pages = p.total().div_ceil(PER_PAGE as u64).max(1);
    let _ = write!(
        o,
        "<p class=\"meta\" id=\"counts\">{} running, {} waiting · page {page} of {pages}</p>",
        p.running, p.waiting
    );
    pager(&mut o, page, pages);
    if p.rows.is_empty() {
        o.push_str("<p class=\"none\">nothing waits or runs</p>");
        return o;
    }
    o.push_str(
        "<div class=\"scroll\"><table id=\"queue\" class=\"cards\"><thead><tr><th class=\"num\">ID</th><th>Name</th>\
         <th>Project</th><th>Owner</th><th class=\"hide-narrow\">Priority</th><th>State</th>\
         <th>Why</th><th>Actions</th></tr></thead><tbody>",
    );
    for t in &p.rows {
        row(&mut o, d, s, t);
    }
    o.push_str("</tbody></table></div>");
    pager(&mut o, page, pages);
    o
}

fn row(o: &mut String, d: &Access, s: &Session, t: &TaskRow) {
    let state = t.state.as_str();
    let why = match (&t.reason, t.state) {
        (Some(r), _) => escape(r),
        (None, TaskState::Running) => "running".into(),
        (None, _) => "–".into(),
    };
    let _ = write!(
        o,
        "<tr id=\"task-{id}\" data-state=\"{state}\"><td class=\"num\"><a href=\"/task/{id}\">{id}</a></td>\
         <td class=\"text\">{}</td><td data-label=\"project\">{}</td><td data-label=\"owner\">{}</td>\
         <td class=\"hide-narrow\">{}</td><td class=\"state state-{state}\">{state}</td>\
         <td class=\"text why\">{why} <a class=\"why-link\" href=\"/task/{id}#why\">why?</a></td><td>",
        escape(&t.name),
        escape(&t.project),
        escape(t.owner.as_deref().unwrap_or("–")),
        escape(&t.priority),
        id = t.id,
    );
    actions(o, d, s, t);
    o.push_str("</td></tr>");
}

/// The action forms `s` may use on `t` (none where the rules say no).
pub fn actions(o: &mut String, d: &Access, s: &Session, t: &TaskRow) {
    if d.may_change(&s.caller, t.id, t.owner_uid).is_err() {
        return;
    }
    let verbs: &[&str] = match t.state {
        TaskState::Queued => &["hold", "cancel"],
        TaskState::Held => &["release", "cancel"],
        TaskState::Running => &["cancel"],
        TaskState::Failed | TaskState::Cancelled | TaskState::Blocked => &["retry"],
        _ => &[],
    };
    for v in verbs {
        let class = if *v == "cancel" {
            " class=\"danger\""
        } else {
            ""
        };
        let _ = write!(
            o,
            "<form class=\"act\" method=\"post\" action=\"/task/{id}/{v}\">{}\
             <button type=\"submit\" name=\"do\" value=\"{v}\" id=\"{v}-{id}\"{class}>{v}</button></form>",
            s.csrf_field(),
            id = t.id
        );
    }
}

fn pager(o: &mut String, page: u64, pages: u64) {
    if pages <= 1 {
        return;
    }
    o.push_str("<nav class=\"pager\">");
    if page > 1 {
        let _ = write!(
            o,
            "<a href=\"/?page={}\" rel=\"prev\">← previous</a>",
            page - 1
        );
    }
    if page < pages {
        let _ = write!(o, "<a href=\"/?page={}\" rel=\"next\">next →</a>", page + 1);
    }
    o.push_str("</nav>");
}

#[cfg(test)]
#[path = "queue_tests.rs"]
mod tests;
