//! Serde adapter for durations written as `30s`, `5m`, `2h`.

use serde::{Deserialize, Deserializer, Serializer};
use std::time::Duration;

/// Writes a duration as `30s`.
pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&humantime::format_duration(*d).to_string())
}

/// Reads a duration such as `30s` or `1h 30m`.
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let s = String::deserialize(d)?;
    humantime::parse_duration(&s).map_err(|e| {
        serde::de::Error::custom(format!("`{s}` is not a duration like `30s` or `2h`: {e}"))
    })
}

/// The same for `Option<Duration>`.
pub mod option {
    use super::*;
    /// Writes an optional duration.
    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => super::serialize(d, s),
            None => s.serialize_none(),
        }
    }
    /// Reads an optional duration.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        super::deserialize(d).map(Some)
    }
}

/// The same for a list of durations (`["5s", "5m"]`).
pub mod list {
    use super::*;
    use serde::ser::SerializeSeq;
    /// Writes each as `30s`.
    pub fn serialize<S: Serializer>(v: &[Duration], s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(v.len()))?;
        for d in v {
            seq.serialize_element(&humantime::format_duration(*d).to_string())?;
        }
        seq.end()
    }
    /// Reads each like `30s`.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Duration>, D::Error> {
        Vec::<String>::deserialize(d)?
            .into_iter()
            .map(|s| {
                humantime::parse_duration(&s).map_err(|e| {
                    serde::de::Error::custom(format!(
                        "`{s}` is not a duration like `30s` or `2h`: {e}"
                    ))
                })
            })
            .collect()
    }
}
