//! `wecom`: a WeChat Work (企业微信, WeCom) group bot. Each delivery is ONE
//! message: one event as itself, several (a rate-limited notifier's events
//! that waited) as one summary.
//!
//! ```toml
//! [notifier.lab-group]
//! plugin = "wecom"                         # the host's keys (plugin, events, allow,
//! allow = ["qyapi.weixin.qq.com"]          # rate_per_minute, ...) are the host's;
//! rate_per_minute = 15                     # the rest is this plugin's:
//! secrets = { key = "env:WECOM_BOT_KEY" }  # required: the bot's key
//! format = "markdown"                      # or "text"; default "markdown"
//! url = "https://qyapi.weixin.qq.com/cgi-bin/webhook/send"   # the default
//!
//! [notifier.lab-group.mention]             # optional: who each message mentions
//! default = ["zhangsan"]                   # events of other projects, or of none
//! projects = { vision = ["lisi", "wangwu"] }   # events of these projects, instead
//! ```
//!
//! The host resolves `secrets.key` before the plugin sees it; the plugin
//! POSTs to `url?key=<key>` (`&key=` when `url` has a query) and never
//! writes the key into a message or an error.
//!
//! # Mentions
//!
//! An entry is `@all`, a mobile number (digits, an optional leading `+`) or
//! a userid. `text` messages mention userids and `@all` through
//! `mentioned_list` and mobile numbers through `mentioned_mobile_list`.
//! `markdown` messages mention userids only, as `<@userid>` at the end of
//! the content (WeCom ignores `@all` and mobile numbers there, so the
//! configuration refuses them with `format = "markdown"`). A summary
//! mentions everyone any of its events would.
//!
//! # The message
//!
//! One event: its title (in markdown, bold and coloured: green for info,
//! orange-red for warnings and errors), then its text. Several: `nightjar
//! (N)`, the count of each kind (`task-failed ×3 · task-succeeded ×9`), then
//! one line per event (its title, cut to 240 bytes), oldest first, as many
//! as fit; a last line `… +K` counts the events that did not, so none goes
//! unmentioned. Titles and texts are the host's, in its configured
//! language. WeCom takes at most 2048 bytes of text content and 4096 of
//! markdown: longer content is cut at a UTF-8 character boundary and ends
//! with `…` (mentions are kept). In markdown a title takes at most 1024
//! bytes, so its bold and colour are never cut.
//!
//! # Escaping
//!
//! Titles, texts and kinds are the host's, and carry what users wrote (task
//! names, sweep values in a member's name, stderr lines): in markdown they
//! are made inert, so `**x**`, `[a](http://evil)`, `<font color="warning">`
//! or `<@all>` in them shows as text and neither formats, links, colours
//! nor mentions anyone. WeCom documents no escape syntax (a backslash may show as
//! itself), so each character that could start markup is replaced by its
//! full-width look-alike (`*` → `＊`, `<` → `＜`, a line's first `#` → `＃`,
//! ...; the table is in `escape.rs`), which every client shows as text;
//! `snake_case` names and a sweep member's `name[i=3]` are kept as they are.
//! The byte limits hold after the replacement (a look-alike takes 3 bytes).
//! Only the plugin's own markup (the bold, colour, summary quote and the
//! configured `<@userid>` mentions) is markup. `text` messages are plain
//! text and sent as the host wrote them.
//!
//! # Outcomes
//!
//! WeCom answers `{"errcode": N, "errmsg": "..."}`: 0 is delivered; 45009
//! (the bot's rate limit, 20 messages a minute) and -1 (busy) are
//! transient; any other code is permanent and the error quotes `errmsg`
//! (93000: the key is wrong or the bot was removed). HTTP 408, 429 and 5xx,
//! a timeout and an unreachable server are transient; other HTTP errors,
//! an answer that is not WeCom's, and a request the host refuses (not
//! allow-listed) are permanent.

use nightjar_sdk::{ConfigError, DeliveryError, Event, Notifier, export_notifier, http};
use serde::Deserialize;

mod config;
mod escape;
mod message;

pub use config::{Config, DEFAULT_URL, Format, Mention, Secrets, Who};
pub use message::{SUMMARY_TITLE_BYTES, TITLE_BYTES, body};

/// The `wecom` notifier.
pub struct Wecom;

impl Notifier for Wecom {
    type Config = Config;

    fn deliver(config: &Config, events: &[Event]) -> Result<(), DeliveryError> {
        let key = &config.secrets.key;
        send(config, events)
            .map_err(|e| e.map_message(|m| format!("wecom: {}", m.replace(key.as_str(), "<key>"))))
    }

    fn check_config(config: &Config) -> Result<(), ConfigError> {
        config.check()
    }
}

export_notifier!(Wecom);

/// WeCom's answer.
#[derive(Deserialize)]
struct Answer {
    errcode: i64,
    #[serde(default)]
    errmsg: String,
}

/// Sends the one message for `events` and reads WeCom's answer.
fn send(config: &Config, events: &[Event]) -> Result<(), DeliveryError> {
    let body = body(config, events).to_string();
    let no_headers: [(&str, &str); 0] = [];
    let response = http::post_json(&endpoint(config), no_headers, body)?;
    response.check()?;
    let Ok(answer) = serde_json::from_slice::<Answer>(&response.body) else {
        return Err(DeliveryError::permanent(format!(
            "not a WeCom answer (is `url` the bot endpoint?): {}",
            response.describe()
        )));
    };
    match answer.errcode {
        0 => Ok(()),
        45009 => Err(DeliveryError::transient(format!(
            "errcode 45009, the bot's rate limit (20 messages a minute): {}",
            answer.errmsg
        ))),
        -1 => Err(DeliveryError::transient(format!(
            "errcode -1, WeCom is busy: {}",
            answer.errmsg
        ))),
        93000 => Err(DeliveryError::permanent(format!(
            "errcode 93000, the bot key is wrong or the bot was removed from the group: {}",
            answer.errmsg
        ))),
        code => Err(DeliveryError::permanent(format!(
            "errcode {code}: {}",
            answer.errmsg
        ))),
    }
}

/// `url?key=<key>` (`&key=` when `url` has a query), the key
/// percent-encoded.
pub fn endpoint(config: &Config) -> String {
    let sep = if config.url.contains('?') { '&' } else { '?' };
    let mut out = format!("{}{sep}key=", config.url);
    for b in config.secrets.key.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests;
