//! Fitting text into a message service's byte limits.

use crate::http::floor_char_boundary;

/// The ellipsis [`truncate`] ends a cut text with (3 bytes in UTF-8).
pub const ELLIPSIS: &str = "…";

/// `text` if it is at most `max_bytes` long; otherwise its longest prefix
/// that ends at a character boundary and leaves room for [`ELLIPSIS`],
/// followed by the ellipsis, so the result is at most `max_bytes` bytes and
/// valid UTF-8 (Chinese text is 3 bytes a character). Below 3 bytes there is
/// no room for the ellipsis, and the text is only cut.
///
/// ```
/// use nightjar_sdk::notifier::truncate;
///
/// assert_eq!(truncate("训练完成", 12), "训练完成");
/// assert_eq!(truncate("训练完成", 11), "训练…");
/// assert_eq!(truncate("abcdef", 5), "ab…");
/// ```
pub fn truncate(text: &str, max_bytes: usize) -> String {
    if text.len() <= max_bytes {
        return text.to_string();
    }
    if max_bytes < ELLIPSIS.len() {
        return text[..floor_char_boundary(text, max_bytes)].to_string();
    }
    let end = floor_char_boundary(text, max_bytes - ELLIPSIS.len());
    let mut out = String::with_capacity(end + ELLIPSIS.len());
    out.push_str(&text[..end]);
    out.push_str(ELLIPSIS);
    out
}
