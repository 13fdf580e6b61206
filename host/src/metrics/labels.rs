//! The metrics' labels: values escaped as the OpenMetrics text asks (a
//! project named `a"} 1` stays one label value), and the cap on how many
//! values a user-named label takes.

use std::collections::HashSet;
use std::fmt::Write;

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};

/// The value a capped label takes past its cap.
pub const OTHER: &str = "(other)";

/// Longest label value kept, in bytes (a longer one is cut at a character).
const MAX_VALUE: usize = 128;

/// A label value, written escaped: `\` as `\\`, `"` as `\"`, a line feed as
/// `\n` (the OpenMetrics text's rules), other control characters dropped.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct Value(String);

impl Value {
    /// `s`, cut to [`MAX_VALUE`] bytes.
    pub fn of(s: &str) -> Value {
        let mut end = s.len().min(MAX_VALUE);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        Value(s[..end].to_string())
    }
}

impl EncodeLabelValue for Value {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        for c in self.0.chars() {
            match c {
                '\\' => encoder.write_str("\\\\")?,
                '"' => encoder.write_str("\\\"")?,
                '\n' => encoder.write_str("\\n")?,
                c if c.is_control() => {}
                c => encoder.write_char(c)?,
            }
        }
        Ok(())
    }
}

/// The values a label has taken, at most `max`; past it, [`OTHER`].
#[derive(Debug)]
pub struct Cap {
    seen: HashSet<String>,
    max: usize,
}

impl Cap {
    /// A cap of `max` values.
    pub fn new(max: usize) -> Cap {
        Cap {
            seen: HashSet::new(),
            max,
        }
    }

    /// `value`'s label: itself while there is room (or it has one already), else `(other)`.
    pub fn admit(&mut self, value: &str) -> Value {
        let v = Value::of(value);
        if self.seen.contains(&v.0) {
            return v;
        }
        if self.seen.len() < self.max {
            self.seen.insert(v.0.clone());
            return v;
        }
        Value(OTHER.into())
    }
}

/// `nightjar_runs_ended_total`'s labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RunLabels {
    pub class: Value,
    pub project: Value,
}

/// `nightjar_tasks`' labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TaskLabels {
    pub state: Value,
    pub project: Value,
}

/// `nightjar_plugin_call_duration_seconds`' labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PluginLabels {
    pub plugin: Value,
}

/// A GPU's labels: its index, UUID and model.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct GpuLabels {
    pub gpu: Value,
    pub uuid: Value,
    pub name: Value,
}

impl GpuLabels {
    /// GPU `index`'s labels.
    pub fn of(index: u32, uuid: &str, name: &str) -> GpuLabels {
        GpuLabels {
            gpu: Value(index.to_string()),
            uuid: Value::of(uuid),
            name: Value::of(name),
        }
    }
}
