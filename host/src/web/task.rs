//! `/task/{id}`: one task, its runs, why it waits or started, and its log
//! followed live; the details and log only for who may read them.

use std::fmt::Write as _;

use axum::Extension;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use super::auth::{Session, to_login};
use super::call::{call, error_page};
use super::layout::{Page, escape, html, num, when};
use super::queue::{Params, actions};
use super::task_more;
use crate::access::Caller;
use crate::api::Api;
use crate::api::wire::TaskDetail;
use crate::api::{Show, Why};
use crate::time::now_ms;

/// `GET /task/{id}`.
pub async fn page(
    State(d): State<Api>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(q): Query<Params>,
) -> Response {
    let Some(s) = Session::of(caller.map(|Extension(c)| c), &headers) else {
        return to_login();
    };
    let Ok(id) = id.parse::<i64>() else {
        return super::layout::error(StatusCode::NOT_FOUND, "no such task: ids are numbers");
    };
    let fragment = q.fragment == Some(1);
    let detail = match call(&d, &s.caller, Show { id }).await {
        Ok(t) => t,
        Err(e) => return error_page(&e),
    };
    let title = format!("Task {id}: {}", detail.task.name);
    let readable = d
        .access()
        .may_read_private(&s.caller, detail.task.owner_uid);
    let mut body = String::new();
    summary(&mut body, &d, &s, &detail);
    let mut tail = String::new();
    if !readable {
        body.push_str(
            "<p class=\"none\" id=\"private\">This task is private: its runs, reasons and log \
             are for its owner and administrators.</p>",
        );
    } else {
        let why = call(&d, &s.caller, Why { id }).await;
        body.push_str("<h2 id=\"why\">Why</h2>");
        match why {
            Ok(w) => {
                body.push_str("<pre class=\"why\" id=\"why-text\">");
                for line in w.lines(now_ms()) {
                    let _ = writeln!(body, "{}", escape(&line));
                }
                body.push_str("</pre>");
            }
            Err(e) => {
                let _ = write!(body, "<p class=\"error\">{}</p>", escape(&e.message));
            }
        }
        runs(&mut body, &d, &detail);
        task_more::timeline(&mut body, &d, &detail);
        task_more::folders(&mut body, &detail);
        task_more::outputs(&mut body, &detail);
        task_more::manifest(&mut body, &detail);
        task_more::stderr(&mut body, &d, &s.caller, &detail).await;
        if detail.runs.is_empty() {
            tail.push_str(
                "<h2>Log</h2><p class=\"none\" id=\"no-log\">no output yet: the log \
                 follows here once the task has started (reload then)</p>",
            );
        } else {
            let _ = write!(
                tail,
                "<h2>Log (stdout)</h2><pre class=\"log\" id=\"log\" data-empty=\"1\" \
             data-src=\"/api/v2/logs/{id}?follow=1\">(waiting for output)</pre>"
            );
        }
    }
    if fragment {
        return html(StatusCode::OK, body);
    }
    let mut page = Page::new(title, "/", body);
    page.tail = tail;
    page.render(Some(&s.caller), false)
}

fn summary(o: &mut String, d: &Api, s: &Session, t: &TaskDetail) {
    let tz = d.config().tz();
    let row = &t.task;
    let state = row.state.as_str();
    let _ = write!(
        o,
        "<dl class=\"kv\" id=\"task\"><dt>State</dt><dd class=\"state state-{state}\" id=\"task-state\">{state}</dd>\
         <dt>Name</dt><dd>{}</dd><dt>Project</dt><dd>{}</dd><dt>Owner</dt><dd>{}</dd>\
         <dt>Priority</dt><dd>{}</dd><dt>Submitted</dt><dd>{}</dd><dt>Command</dt><dd><code>{}</code></dd>",
        escape(&row.name),
        escape(&row.project),
        escape(row.owner.as_deref().unwrap_or("–")),
        escape(&row.priority),
        when(row.submitted_at, tz),
        escape(&row.command),
    );
    if let Some(r) = &row.reason {
        let _ = write!(
            o,
            "<dt>Reason</dt><dd id=\"task-reason\">{}</dd>",
            escape(r)
        );
    }
    o.push_str("</dl><p>");
    actions(o, d.access(), s, row);
    o.push_str("</p>");
}

fn runs(o: &mut String, d: &Api, t: &TaskDetail) {
    o.push_str("<h2>Runs</h2>");
    if t.runs.is_empty() {
        o.push_str("<p class=\"none\">no runs yet</p>");
        return;
    }
    let tz = d.config().tz();
    o.push_str(
        "<div class=\"scroll\"><table id=\"runs\"><thead><tr><th class=\"num\">#</th><th>Started</th>\
         <th>Ended</th><th>Class</th><th class=\"num\">Exit</th><th class=\"num\">Took</th>\
         <th class=\"num\">Energy (kJ)</th><th class=\"num\">Cost</th><th>Note</th></tr></thead><tbody>",
    );
    for r in &t.runs {
        let took = r
            .finished_at
            .map(|f| f - r.started_at)
            .or_else(|| Some(now_ms() - r.started_at));
        let _ = write!(
            o,
            "<tr><td class=\"num\">{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"text\">{}</td></tr>",
            r.attempt,
            when(r.started_at, tz),
            r.finished_at
                .map_or_else(|| "running".into(), |f| when(f, tz)),
            r.class.map_or("–", |c| c.as_str()),
            r.exit_code.map_or_else(|| "–".into(), |c| c.to_string()),
            crate::report::render::duration(took),
            num(r.energy.as_ref().map(|e| e.energy_j / 1000.0), 1),
            num(r.energy.as_ref().and_then(|e| e.cost), 2),
            escape(r.message.as_deref().unwrap_or("")),
        );
    }
    o.push_str("</tbody></table></div>");
}
