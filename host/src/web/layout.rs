//! The page shell every dashboard page shares: head (viewport, the
//! stylesheet), the navigation, the swappable main fragment, the script.

use std::fmt::Write as _;

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono_tz::Tz;

use crate::access::Caller;
pub use crate::report::render::escape;

/// The stylesheet, embedded.
pub const STYLE: &str = include_str!("assets/style.css");
/// The page script, embedded.
pub const SCRIPT: &str = include_str!("assets/app.js");

/// The pages in the navigation: path and label.
const NAV: [(&str, &str); 6] = [
    ("/", "Queue"),
    ("/runs", "Runs"),
    ("/gpus", "GPUs"),
    ("/plugins", "Plugins"),
    ("/report", "Report"),
    ("/logout", "Log out"),
];

/// What a page handler produced: a full page, or only its main fragment
/// when the script asks for it (`?fragment=1`) to swap it in.
pub struct Page {
    /// The title (plain text; escaped here).
    pub title: String,
    /// The navigation entry to mark.
    pub active: &'static str,
    /// The fragment's HTML (already escaped where it holds user text).
    pub body: String,
    /// HTML after the fragment that a refresh must not replace (a live log).
    pub tail: String,
    /// Whether the page fetches its fragment again on each change (the
    /// report does not: it is a week's figures, costly to compute).
    pub live: bool,
}

impl Page {
    /// A page with `body` as its fragment.
    pub fn new(title: impl Into<String>, active: &'static str, body: String) -> Page {
        Page {
            title: title.into(),
            active,
            body,
            tail: String::new(),
            live: true,
        }
    }

    /// The response: the whole page, or the fragment alone.
    pub fn render(self, caller: Option<&Caller>, fragment: bool) -> Response {
        if fragment {
            return html(StatusCode::OK, self.body);
        }
        let mut p = String::with_capacity(self.body.len() + 4096);
        let _ = write!(
            p,
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
             <title>{} · nightjar</title><link rel=\"stylesheet\" href=\"/assets/style.css\">\
             </head><body><header><a class=\"brand\" href=\"/\">nightjar</a><nav>",
            escape(&self.title)
        );
        if let Some(c) = caller {
            for (path, label) in NAV {
                let cur = if path == self.active {
                    " aria-current=\"page\""
                } else {
                    ""
                };
                let _ = write!(p, "<a href=\"{path}\"{cur}>{label}</a>");
            }
            let _ = write!(
                p,
                "<span class=\"who\">{}{}</span>",
                escape(&c.name),
                if c.admin { " (admin)" } else { "" }
            );
        }
        let _ = writeln!(
            p,
            "</nav></header><main><h1>{}</h1><div id=\"frag\"{}>{}</div>{}</main>\
             <script src=\"/assets/app.js\"></script></body></html>",
            escape(&self.title),
            // Live only for a caller: a page without one (the login form)
            // opens no event stream, which would be refused.
            if self.live && caller.is_some() {
                " data-live=\"1\""
            } else {
                ""
            },
            self.body,
            self.tail
        );
        html(StatusCode::OK, p)
    }
}

/// What a page may load and who may frame it: scripts only from this
/// origin (no inline script, so injected markup cannot run any), forms
/// only to it, and no framing (no clickjacking of the buttons).
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
                   img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// An HTML response with `status`; never cached (it shows live state).
pub fn html(status: StatusCode, body: String) -> Response {
    (
        status,
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
            (header::CONTENT_SECURITY_POLICY, CSP),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::X_FRAME_OPTIONS, "DENY"),
            (header::REFERRER_POLICY, "same-origin"),
        ],
        body,
    )
        .into_response()
}

/// A short error page (`message` is plain text).
pub fn error(status: StatusCode, message: &str) -> Response {
    html(
        status,
        format!(
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
             <title>{code}</title><link rel=\"stylesheet\" href=\"/assets/style.css\"></head>\
             <body><main><h1>{code}</h1><p class=\"error\">{}</p><p><a href=\"/\">Back to the queue</a></p>\
             </main></body></html>\n",
            escape(message),
            code = status
        ),
    )
}

/// A moment for a person in the daemon's time zone.
pub fn when(ms: i64, tz: Tz) -> String {
    crate::report::charts::local(ms, tz, "%Y-%m-%d %H:%M:%S")
}

/// An optional number with `digits` decimals, `–` for none.
pub fn num(x: Option<f64>, digits: usize) -> String {
    match x {
        Some(x) if x.is_finite() => format!("{x:.digits$}"),
        _ => "–".into(),
    }
}

/// Bytes as GiB with one decimal, `–` for none.
pub fn gib(b: Option<u64>) -> String {
    b.map_or_else(
        || "–".into(),
        |b| format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64),
    )
}

/// The embedded assets.
pub async fn style() -> Response {
    asset("text/css; charset=utf-8", STYLE)
}

/// The embedded script.
pub async fn script() -> Response {
    asset("text/javascript; charset=utf-8", SCRIPT)
}

fn asset(kind: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, kind),
            (header::CACHE_CONTROL, "max-age=300"),
        ],
        body,
    )
        .into_response()
}
