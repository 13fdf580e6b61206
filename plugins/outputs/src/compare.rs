//! A JSON rule, `KEY OP NUMBER` (`eval.f1 > 0.5`): reading it, and judging
//! a parsed JSON document by it.

use std::fmt;

use serde::Deserialize;
use serde_json::Value;

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    Eq,
    /// `!=`
    Ne,
}

impl Op {
    fn parse(text: &str) -> Option<Op> {
        Some(match text {
            "<" => Op::Lt,
            "<=" => Op::Le,
            ">" => Op::Gt,
            ">=" => Op::Ge,
            "==" => Op::Eq,
            "!=" => Op::Ne,
            _ => return None,
        })
    }

    /// Whether `found OP wanted` holds.
    pub fn holds(self, found: f64, wanted: f64) -> bool {
        match self {
            Op::Lt => found < wanted,
            Op::Le => found <= wanted,
            Op::Gt => found > wanted,
            Op::Ge => found >= wanted,
            Op::Eq => found == wanted,
            Op::Ne => found != wanted,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Eq => "==",
            Op::Ne => "!=",
        }
    }
}

/// One rule: a dotted key path, an operator and a finite number.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// The key path as written (`eval.f1`).
    pub key: String,
    /// The operator.
    pub op: Op,
    /// The number to compare with.
    pub value: f64,
    /// The number as written, for messages.
    value_text: String,
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.key, self.op.as_str(), self.value_text)
    }
}

const OP_CHARS: &[char] = &['<', '>', '=', '!'];

impl Comparison {
    /// Reads `KEY OP NUMBER`; the error says what is wrong, for a person.
    pub fn parse(text: &str) -> Result<Comparison, String> {
        let form = "write a rule like \"loss < 1.0\" (operators <, <=, >, >=, ==, !=)";
        let Some(at) = text.find(OP_CHARS) else {
            return Err(format!("`{text}` has no operator; {form}"));
        };
        let key = text[..at].trim();
        let rest = &text[at..];
        let op_end = rest.find(|c| !OP_CHARS.contains(&c)).unwrap_or(rest.len());
        let op_text = &rest[..op_end];
        let Some(op) = Op::parse(op_text) else {
            return Err(format!(
                "`{op_text}` in `{text}` is not an operator; {form}"
            ));
        };
        if key.is_empty() {
            return Err(format!("`{text}` has no key before `{op_text}`; {form}"));
        }
        if key
            .split('.')
            .any(|s| s.is_empty() || s.contains(char::is_whitespace))
        {
            return Err(format!(
                "`{key}` in `{text}` is not a key path: write keys joined by dots, like eval.f1"
            ));
        }
        let value_text = rest[op_end..].trim();
        if value_text.is_empty() {
            return Err(format!("`{text}` has no number after `{op_text}`; {form}"));
        }
        let value: f64 = match value_text.parse() {
            Ok(v) if f64::is_finite(v) => v,
            _ => {
                return Err(format!(
                    "`{value_text}` in `{text}` is not a finite number; {form}"
                ));
            }
        };
        Ok(Comparison {
            key: key.to_string(),
            op,
            value,
            value_text: value_text.to_string(),
        })
    }

    /// Judges `doc`: `None` when the rule holds, else what was found, for a
    /// person (`accuracy is 0.62, wanted >= 0.8`).
    pub fn judge(&self, doc: &Value) -> Option<String> {
        let wanted = format!("wanted {} {}", self.op.as_str(), self.value_text);
        let Some(found) = lookup(doc, &self.key) else {
            return Some(format!("{} is missing, {wanted}", self.key));
        };
        let number = match found {
            Value::Number(n) => n.as_f64(),
            Value::String(s) if matches!(s.as_str(), "NaN" | "Infinity" | "-Infinity") => {
                return Some(format!("{} is {s}, {wanted}", self.key));
            }
            _ => None,
        };
        let Some(number) = number else {
            return Some(format!(
                "{} is {}, not a number; {wanted}",
                self.key,
                shorten(&found.to_string())
            ));
        };
        if !number.is_finite() {
            return Some(format!("{} is {number}, {wanted}", self.key));
        }
        if self.op.holds(number, self.value) {
            None
        } else {
            Some(format!("{} is {found}, {wanted}", self.key))
        }
    }
}

impl<'de> Deserialize<'de> for Comparison {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        crate::config::from_text(d, "a rule like \"loss < 1.0\"", Comparison::parse)
    }
}

/// The value at a dotted key path: object keys, and array indices for
/// segments that are numbers.
fn lookup<'a>(doc: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(doc, |v, seg| match v {
        Value::Object(m) => m.get(seg),
        Value::Array(a) => seg.parse::<usize>().ok().and_then(|i| a.get(i)),
        _ => None,
    })
}

/// At most 60 characters of `text`, for a message.
fn shorten(text: &str) -> String {
    match text.char_indices().nth(60) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text.to_string(),
    }
}

/// `text` with the bare `NaN`, `Infinity` and `-Infinity` that Python's
/// `json.dump` writes (outside strings) turned into the strings `"NaN"`,
/// `"Infinity"`, `"-Infinity"`, so such a file parses and its rules can say
/// which value is not finite. `None` when there is none.
pub fn quote_non_finite(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len() + 16);
    let mut in_string = false;
    let mut escaped = false;
    let mut changed = false;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
        } else if let Some(word) = ["-Infinity", "Infinity", "NaN"]
            .into_iter()
            .find(|w| rest.starts_with(w))
        {
            out.push('"');
            out.push_str(word);
            out.push('"');
            rest = &rest[word.len()..];
            changed = true;
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judge(rule: &str, doc: &str) -> Option<String> {
        let doc: Value = serde_json::from_str(doc).unwrap();
        Comparison::parse(rule).unwrap().judge(&doc)
    }

    #[test]
    fn rules_read_and_refuse() {
        let c = Comparison::parse("eval.f1>=0.5").unwrap();
        assert_eq!((c.key.as_str(), c.op, c.value), ("eval.f1", Op::Ge, 0.5));
        assert_eq!(c.to_string(), "eval.f1 >= 0.5");
        for (bad, says) in [
            ("loss <", "no number"),
            ("loss => 1", "`=>`"),
            ("loss = 1", "`=`"),
            ("loss 1", "no operator"),
            ("< 1", "no key"),
            ("loss < abc", "not a finite number"),
            ("loss < NaN", "not a finite number"),
            ("loss < inf", "not a finite number"),
            ("eval..f1 < 1", "key path"),
            ("my loss < 1", "key path"),
        ] {
            let e = Comparison::parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn every_operator_holds_and_fails() {
        let doc = r#"{"x": 2}"#;
        for (rule, holds) in [
            ("x < 3", true),
            ("x < 2", false),
            ("x <= 2", true),
            ("x > 2", false),
            ("x >= 2", true),
            ("x == 2", true),
            ("x != 2", false),
            ("x != 1", true),
        ] {
            assert_eq!(judge(rule, doc).is_none(), holds, "{rule}");
        }
    }

    #[test]
    fn messages_say_what_was_found_and_wanted() {
        let doc = r#"{"accuracy": 0.62, "eval": {"f1": "n/a"}, "h": [{"loss": 3}]}"#;
        assert_eq!(
            judge("accuracy >= 0.8", doc).unwrap(),
            "accuracy is 0.62, wanted >= 0.8"
        );
        assert_eq!(
            judge("eval.f1 > 0.5", doc).unwrap(),
            "eval.f1 is \"n/a\", not a number; wanted > 0.5"
        );
        assert_eq!(
            judge("loss < 1.0", doc).unwrap(),
            "loss is missing, wanted < 1.0"
        );
        assert_eq!(
            judge("h.0.loss < 1", doc).unwrap(),
            "h.0.loss is 3, wanted < 1"
        );
        assert!(judge("h.1.loss < 1", doc).unwrap().contains("missing"));
        assert!(judge("eval < 1", doc).unwrap().contains("not a number"));
    }

    #[test]
    fn python_nan_and_infinity_are_findings_not_parse_errors() {
        let text = r#"{"loss": NaN, "s": "NaN \" Infinity", "hi": Infinity, "lo": -Infinity}"#;
        assert!(serde_json::from_str::<Value>(text).is_err());
        let fixed = quote_non_finite(text).unwrap();
        let doc: Value = serde_json::from_str(&fixed).unwrap();
        assert_eq!(doc["s"], "NaN \" Infinity", "strings are left alone");
        let c = |r: &str| Comparison::parse(r).unwrap().judge(&doc);
        assert_eq!(c("loss < 1").unwrap(), "loss is NaN, wanted < 1");
        assert_eq!(c("hi > 0").unwrap(), "hi is Infinity, wanted > 0");
        assert_eq!(c("lo < 0").unwrap(), "lo is -Infinity, wanted < 0");
        assert_eq!(quote_non_finite(r#"{"a": 1}"#), None);
    }
}
