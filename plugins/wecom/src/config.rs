//! The `wecom` notifier's configuration, its checks, and who to mention.

use std::collections::BTreeMap;

use nightjar_sdk::{ConfigError, Event};
use serde::Deserialize;

/// The group-bot endpoint; the plugin appends `?key=<key>`.
pub const DEFAULT_URL: &str = "https://qyapi.weixin.qq.com/cgi-bin/webhook/send";

/// The plugin's table (the host's own keys removed, secrets resolved).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The bot endpoint, without the key.
    #[serde(default = "default_url")]
    pub url: String,
    /// `markdown` (the default) or `text`.
    #[serde(default)]
    pub format: Format,
    /// Who each message mentions.
    #[serde(default)]
    pub mention: Mention,
    /// What the host resolved from the notifier's `secrets`.
    pub secrets: Secrets,
}

fn default_url() -> String {
    DEFAULT_URL.to_string()
}

/// The resolved secrets.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Secrets {
    /// The bot's key (the `key=` of its webhook URL).
    pub key: String,
}

/// The message type sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// `msgtype: markdown`, content at most 4096 bytes; mentions by userid
    /// only (`<@userid>` in the content).
    #[default]
    Markdown,
    /// `msgtype: text`, content at most 2048 bytes; mentions by userid,
    /// mobile number or `@all`.
    Text,
}

impl Format {
    /// The most bytes of content WeCom takes for this type.
    pub fn limit(self) -> usize {
        match self {
            Format::Markdown => 4096,
            Format::Text => 2048,
        }
    }
}

/// `mention = { default = [...], projects = { NAME = [...] } }`: each entry
/// is `@all`, a mobile number (digits, an optional leading `+`) or a
/// userid.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mention {
    /// For events of a project not in `projects`, and events of no project.
    #[serde(default, deserialize_with = "nightjar_sdk::config::string_list")]
    pub default: Vec<String>,
    /// For events of these projects, instead of `default`.
    #[serde(default)]
    pub projects: BTreeMap<String, Vec<String>>,
}

/// One entry of a mention list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Who<'a> {
    /// `@all`.
    All,
    /// A mobile number.
    Mobile(&'a str),
    /// A userid.
    User(&'a str),
}

impl<'a> Who<'a> {
    /// What `entry` names.
    pub fn of(entry: &'a str) -> Who<'a> {
        let digits = entry.strip_prefix('+').unwrap_or(entry);
        if entry == "@all" {
            Who::All
        } else if digits.len() >= 5 && digits.bytes().all(|b| b.is_ascii_digit()) {
            Who::Mobile(entry)
        } else {
            Who::User(entry)
        }
    }
}

impl Config {
    /// Checks the key, the URL and the mentions; errors name the key.
    pub fn check(&self) -> Result<(), ConfigError> {
        let key = &self.secrets.key;
        if key.is_empty() || key.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(ConfigError::at(
                "secrets.key",
                "is empty or holds a space; give the bot's key (the `key=` of its webhook URL)",
            ));
        }
        let rest = self
            .url
            .strip_prefix("https://")
            .or_else(|| self.url.strip_prefix("http://"));
        if !rest.is_some_and(|r| !r.is_empty() && !r.starts_with('/'))
            || self.url.chars().any(char::is_whitespace)
        {
            return Err(ConfigError::at(
                "url",
                format!("is not an absolute https:// URL; the default is {DEFAULT_URL}"),
            ));
        }
        self.check_list("mention.default", &self.mention.default)?;
        for (project, list) in &self.mention.projects {
            self.check_list(&format!("mention.projects.{}", segment(project)), list)?;
        }
        Ok(())
    }

    fn check_list(&self, key: &str, list: &[String]) -> Result<(), ConfigError> {
        for (i, entry) in list.iter().enumerate() {
            let at = format!("{key}[{i}]");
            if entry.trim().is_empty()
                || entry
                    .chars()
                    .any(|c| c.is_whitespace() || c == '<' || c == '>')
            {
                return Err(ConfigError::at(
                    at,
                    "is not a userid or mobile number (empty, or holds a space, `<` or `>`)",
                ));
            }
            if self.format == Format::Markdown && Who::of(entry) != Who::User(entry) {
                return Err(ConfigError::at(
                    at,
                    format!(
                        "`{entry}`: WeCom markdown messages mention by userid only (`<@userid>`) and ignore @all and mobile numbers; write userids, or set format = \"text\""
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Who a message carrying `events` mentions: each event's project list
    /// (its `projects` entry, else `default`), in order, each name once.
    pub fn mentions<'a>(&'a self, events: &[Event]) -> Vec<Who<'a>> {
        let mut out: Vec<Who<'a>> = Vec::new();
        for e in events {
            let list = e
                .project
                .as_deref()
                .and_then(|p| self.mention.projects.get(p))
                .unwrap_or(&self.mention.default);
            for entry in list {
                let who = Who::of(entry);
                if !out.contains(&who) {
                    out.push(who);
                }
            }
        }
        out
    }
}

/// A project name as one step of a dotted key, quoted when TOML needs it.
fn segment(name: &str) -> String {
    if !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        name.to_string()
    } else {
        format!("{name:?}")
    }
}
