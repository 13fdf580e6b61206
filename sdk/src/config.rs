//! A policy's configuration: the TOML text the host hands `configure` (the
//! `[plugin.NAME.config]` table) in, the policy's typed `Config` out, and
//! errors that name the key at fault.
//!
//! The SDK does the parsing for a [`Policy`](crate::Policy); a policy only
//! declares its `Config` with serde. The types here are for fields a lab
//! writes as text: [`Duration`] (`30m`), [`TimeOfDay`] (`23:00`), [`Size`]
//! (`80GiB`), and [`string_list`] for `["a", "b"]` or `"a,b"`.
//!
//! ```
//! use nightjar_sdk::config::{self, Duration};
//!
//! #[derive(serde::Deserialize, Debug)]
//! #[serde(default, deny_unknown_fields)]
//! struct Config { margin: Duration, price: f64 }
//!
//! impl Default for Config {
//!     fn default() -> Self { Config { margin: Duration::from_ms(0), price: 1.0 } }
//! }
//!
//! let c: Config = config::from_toml("margin = \"30m\"").unwrap();
//! assert_eq!(c.margin.ms(), 30 * 60_000);
//! let e = config::from_toml::<Config>("price = \"cheap\"").unwrap_err();
//! assert_eq!(e.key.as_deref(), Some("price"));
//! ```

use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{self, DeserializeOwned, Deserializer, SeqAccess, Visitor};

use crate::ConfigError;
use crate::time::{parse_duration_ms, parse_hhmm, parse_size};

mod key;

impl ConfigError {
    /// An error about one key (`weights.low`, `windows[0].start`): what is
    /// wrong and what to do.
    pub fn at(key: impl Into<String>, message: impl Into<String>) -> ConfigError {
        ConfigError {
            key: Some(key.into()),
            message: message.into(),
        }
    }

    /// An error about the configuration as a whole.
    pub fn whole(message: impl Into<String>) -> ConfigError {
        ConfigError {
            key: None,
            message: message.into(),
        }
    }
}

/// Parses a policy's TOML configuration into `T`. A wrong type, an unknown
/// key, a missing key or a bad value comes back as a [`ConfigError`] whose
/// `key` is the dotted path of the key at fault (`aging_per_hour`,
/// `weights.low`, `windows[1].start`).
pub fn from_toml<T: DeserializeOwned>(text: &str) -> Result<T, ConfigError> {
    toml::from_str(text).map_err(|e| key::error(text, &e))
}

/// Implements `Deserialize` for a type written as one TOML string.
pub(crate) fn text_value<'de, D, T>(
    d: D,
    expecting: &'static str,
    parse: fn(&str) -> Option<T>,
) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
{
    struct Text<T>(&'static str, fn(&str) -> Option<T>);
    impl<T> Visitor<'_> for Text<T> {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str(self.0)
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
            (self.1)(v).ok_or_else(|| E::custom(format!("`{v}` is not {}", self.0)))
        }
    }
    d.deserialize_str(Text(expecting, parse))
}

/// A span of time written `250ms`, `30s`, `5m`, `2h` or `1d`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Duration(i64);

impl Duration {
    /// A duration of `ms` milliseconds.
    pub const fn from_ms(ms: i64) -> Duration {
        Duration(ms)
    }

    /// The duration in milliseconds (the snapshot's unit).
    pub const fn ms(self) -> i64 {
        self.0
    }
}

impl<'de> Deserialize<'de> for Duration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        text_value(
            d,
            "a duration like \"30s\", \"5m\", \"2h\" or \"1d\"",
            |t| parse_duration_ms(t).map(Duration),
        )
    }
}

/// A local time of day written `HH:MM` (24-hour clock).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct TimeOfDay(u32);

impl TimeOfDay {
    /// `hour:minute`, or `None` past 23:59.
    pub const fn new(hour: u32, minute: u32) -> Option<TimeOfDay> {
        if hour < 24 && minute < 60 {
            Some(TimeOfDay(hour * 60 + minute))
        } else {
            None
        }
    }

    /// Minutes after midnight (as [`time::minute_of_day`](crate::time::minute_of_day) counts).
    pub const fn minute(self) -> u32 {
        self.0
    }
}

impl<'de> Deserialize<'de> for TimeOfDay {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        text_value(d, "a time of day like \"23:00\"", |t| {
            parse_hhmm(t).map(TimeOfDay)
        })
    }
}

/// An amount of memory written `512MiB`, `80GiB`, `16GB` (or plain bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Size(u64);

impl Size {
    /// `bytes` bytes.
    pub const fn from_bytes(bytes: u64) -> Size {
        Size(bytes)
    }

    /// The size in bytes (the snapshot's unit).
    pub const fn bytes(self) -> u64 {
        self.0
    }
}

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        text_value(d, "a size like \"512MiB\" or \"80GiB\"", |t| {
            parse_size(t).map(Size)
        })
    }
}

/// For `#[serde(deserialize_with = "nightjar_sdk::config::string_list")]`: a
/// list of names written as a TOML array (`["render", "archive"]`) or as one
/// comma-separated string (`"render,archive"`); blanks are dropped.
pub fn string_list<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    struct List(PhantomData<Vec<String>>);
    impl<'de> Visitor<'de> for List {
        type Value = Vec<String>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a list of names like [\"a\", \"b\"] or \"a,b\"")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Vec<String>, E> {
            Ok(v.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect())
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<String>, A::Error> {
            let mut out = Vec::new();
            while let Some(s) = seq.next_element::<String>()? {
                out.push(s);
            }
            Ok(out)
        }
    }
    d.deserialize_any(List(PhantomData))
}

#[cfg(test)]
mod tests;
