//! `/gpus`: each GPU's readings, memory (used, reserved by nightjar,
//! free), temperature, health, and the policy that closed it.

use std::fmt::Write as _;

use axum::Extension;
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::Response;

use super::layout::{escape, gib};
use super::queue::Params;
use crate::access::Caller;
use crate::api::Api;
use crate::api::GpuList;
use crate::api::views::GpuView;

/// `GET /gpus`.
pub async fn page(
    State(d): State<Api>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    Query(q): Query<Params>,
) -> Response {
    super::call::reply_page(
        &d,
        caller,
        &headers,
        q.fragment == Some(1),
        GpuList {},
        ("GPUs", "/gpus"),
        |views| render(views),
    )
    .await
}

/// The table of `views`.
pub fn render(views: &[GpuView]) -> String {
    if views.is_empty() {
        return "<p class=\"none\">no GPUs: this daemon runs CPU tasks only</p>".into();
    }
    let mut o = String::from(
        "<div class=\"scroll\"><table id=\"gpus\"><thead><tr><th class=\"num\">GPU</th><th>Model</th>\
         <th class=\"num\">Util</th><th class=\"num\">Used</th><th class=\"num\">Reserved</th>\
         <th class=\"num\">Free</th><th class=\"num\">Temp</th><th>Health</th><th>Open</th>\
         <th>Tasks</th></tr></thead><tbody>",
    );
    for g in views {
        let free = g
            .mem_total
            .map(|t| t.saturating_sub(g.mem_reserved.max(g.mem_used.unwrap_or(0))));
        let open = if g.open {
            "<span class=\"gpu-open\">open</span>".to_string()
        } else {
            format!(
                "<span class=\"gpu-closed\">closed</span>: {}",
                escape(g.reason.as_deref().unwrap_or("no reason given"))
            )
        };
        let tasks = g
            .tasks
            .iter()
            .map(|t| format!("<a href=\"/task/{t}\">{t}</a>"))
            .collect::<Vec<_>>()
            .join(" ");
        let _ = write!(
            o,
            "<tr id=\"gpu-{i}\"><td class=\"num\">{i}</td><td class=\"text\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td>{}</td><td class=\"text\">{open}</td><td>{tasks}</td></tr>",
            escape(&g.name),
            g.util.map_or_else(|| "–".into(), |u| format!("{u}%")),
            gib(g.mem_used),
            gib(Some(g.mem_reserved)),
            gib(free),
            g.temp_c.map_or_else(|| "–".into(), |t| format!("{t} °C")),
            match (g.monitored, g.healthy) {
                (false, _) => "unmonitored",
                (true, true) => "healthy",
                (true, false) => "failing reads",
            },
            i = g.index,
        );
    }
    o.push_str("</tbody></table></div>");
    o
}
