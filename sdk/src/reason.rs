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
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Reason(Arc<str>);

impl Reason {
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `a` and `b` are the same text, checked by identity first (a
    /// clone) and by content only if not.
    pub(crate) fn same(a: &Reason, b: &Reason) -> bool {
        Arc::ptr_eq(&a.0, &b.0) || a.0 == b.0
    }
}

impl Deref for Reason {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Reason {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl From<&str> for Reason {
    fn from(text: &str) -> Reason {
        Reason(text.into())
    }
}

impl From<String> for Reason {
    fn from(text: String) -> Reason {
        Reason(text.into())
    }
}

impl From<&String> for Reason {
    fn from(text: &String) -> Reason {
        Reason(text.as_str().into())
    }
}

impl From<&Reason> for Reason {
    fn from(reason: &Reason) -> Reason {
        reason.clone()
    }
}

impl PartialEq<str> for Reason {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for Reason {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl PartialEq<String> for Reason {
    fn eq(&self, other: &String) -> bool {
        *self.0 == **other
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
}
