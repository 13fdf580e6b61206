//! `/plugins`: the policy chain's members and their states.

use std::fmt::Write as _;

use axum::Extension;
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::Response;

use super::layout::escape;
use super::queue::Params;
use crate::access::Caller;
use crate::api::Api;
use crate::api::PluginList;
use crate::api::views::MemberView;

/// `GET /plugins`.
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
        PluginList {},
        ("Plugins", "/plugins"),
        |views| render(views),
    )
    .await
}

/// The table of the chain.
pub fn render(views: &[MemberView]) -> String {
    if views.is_empty() {
        return "<p class=\"none\">no policy plugins: tasks start in submission order</p>".into();
    }
    let mut o = String::from(
        "<div class=\"scroll\"><table id=\"plugins\"><thead><tr><th>Plugin</th><th>State</th>\
         <th>Source</th><th>Contract</th><th class=\"num\">Failures</th><th>On failure</th>\
         <th class=\"num\">CPU</th><th>Last failure</th></tr></thead><tbody>",
    );
    for m in views {
        let _ = write!(
            o,
            "<tr><td>{}</td><td class=\"state\">{}</td><td class=\"text\">{}</td><td>{}</td>\
             <td class=\"num\">{}</td><td>{}</td><td class=\"num\">{:.1}%</td><td class=\"text\">{}</td></tr>",
            escape(&m.name),
            escape(&m.state),
            escape(&m.source),
            escape(m.api_version.as_deref().unwrap_or("–")),
            escape(&m.failure_rate),
            escape(&m.on_failure),
            if m.cpu_percent.is_finite() {
                m.cpu_percent
            } else {
                0.0
            },
            escape(m.last_error.as_deref().unwrap_or("–")),
        );
    }
    o.push_str("</tbody></table></div>");
    o
}
