//! [`Reason`]: why a task waits or fails, a GPU closes or a task is
//! preempted; text for people that is cheap to clone.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// A reason, for people. Cloning one copies no text, so a policy that gives
/// ten thousand tasks one reason makes it once and clones it:
///
/// ```
/// use nightjar_sdk::{Evaluation, Reason};
///
/// let mut e = Evaluation::default();
/// let why = Reason::from(format!("price {:.2}/kWh until 23:00", 1.2));
/// for id in 1..=3 {
///     e.defer(id, why.clone(), None);
/// }
/// e.reject(4, "needs 9 GPUs; this machine has 8");
/// assert_eq!(why, "price 1.20/kWh until 23:00");
/// ```
///
/// The SDK sends each reason to the host once however many verdicts give
/// it. It reads as a `&str` (`reason.len()`, `reason.contains(..)`) and
/// compares with strings.
///
/// A reason made from a `String` keeps that very text (no copy), and the SDK
/// hands it to the host without another when no clone of it is left.
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Reason(Arc<String>);

impl Reason {
    /// The text.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    /// Whether `a` and `b` are the same text, checked by identity first (a
    /// clone) and by content only if not.
    pub(crate) fn same(a: &Reason, b: &Reason) -> bool {
        Arc::ptr_eq(&a.0, &b.0) || a.0 == b.0
    }

    /// The text, taken without a copy when this is the last clone.
    pub(crate) fn into_string(self) -> String {
        Arc::try_unwrap(self.0).unwrap_or_else(|shared| String::clone(&shared))
    }
}

impl Deref for Reason {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Reason {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl From<&str> for Reason {
    fn from(text: &str) -> Reason {
        Reason(Arc::new(text.to_string()))
    }
}

impl From<String> for Reason {
    fn from(text: String) -> Reason {
        Reason(Arc::new(text))
    }
}

impl From<&String> for Reason {
    fn from(text: &String) -> Reason {
        Reason(Arc::new(text.clone()))
    }
}

impl From<&Reason> for Reason {
    fn from(reason: &Reason) -> Reason {
        reason.clone()
    }
}

impl PartialEq<str> for Reason {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Reason {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for Reason {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other.as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clone_is_the_same_text_without_a_copy() {
        let a = Reason::from(String::from("later"));
        let b = a.clone();
        assert!(Arc::ptr_eq(&a.0, &b.0));
        assert!(Reason::same(&a, &b));
        assert!(Reason::same(&a, &Reason::from("later")), "equal text");
        assert!(!Reason::same(&a, &Reason::from("sooner")));
        assert_eq!(a, "later");
        assert_eq!(format!("{a} / {a:?}"), "later / \"later\"");
        assert!(a.starts_with("lat"));
    }

    #[test]
    fn the_last_clone_gives_its_text_up_without_a_copy_and_a_shared_one_copies() {
        let text = String::from("would run 1h05m past the window");
        let at = text.as_ptr();
        let a = Reason::from(text);
        assert_eq!(a.as_str().as_ptr(), at, "made from a String: no copy");
        let b = a.clone();
        let copied = b.into_string();
        assert_ne!(copied.as_ptr(), at, "another clone was left: copied");
        assert_eq!(copied, "would run 1h05m past the window");
        let given_up = a.into_string();
        assert_eq!(given_up.as_ptr(), at, "the last clone: the text itself");
        assert_eq!(Reason::default().into_string(), "");
    }
}
