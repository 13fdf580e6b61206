//! Plain aligned tables for human output, and the escaping of text that
//! came from users or plugins (names, reasons) before it reaches a terminal.

use std::borrow::Cow;

/// `s` with control characters (ANSI escapes, newlines, carriage returns)
/// and bidirectional overrides written as `\u{1b}`-style escapes, so a task
/// name cannot repaint or hide parts of the terminal.
pub fn clean(s: &str) -> Cow<'_, str> {
    escape(s, false)
}

/// Like [`clean`], but keeps newlines and tabs (multi-line error messages).
pub fn clean_text(s: &str) -> Cow<'_, str> {
    escape(s, true)
}

fn escape(s: &str, keep_lines: bool) -> Cow<'_, str> {
    let bad = |c: char| {
        (c.is_control() && !(keep_lines && (c == '\n' || c == '\t')))
            || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    };
    if !s.chars().any(bad) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if bad(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Prints rows under headers, columns padded to their widest cell; the last
/// column is not padded.
pub fn print(headers: &[&str], rows: &[Vec<String>]) {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| clean(c).into_owned()).collect())
        .collect();
    let mut widths: Vec<usize> = headers.iter().map(|h| h.len()).collect();
    for row in &rows {
        for (i, cell) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(cell.chars().count());
            }
        }
    }
    let line = |cells: Vec<&str>| {
        let last = cells.len().saturating_sub(1);
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i == last {
                s.push_str(c);
            } else {
                s.push_str(&format!("{c:<w$}  ", w = widths[i]));
            }
        }
        println!("{}", s.trim_end());
    };
    line(headers.to_vec());
    for row in &rows {
        line(row.iter().map(String::as_str).collect());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ansi_escapes_and_newlines_are_escaped_and_plain_text_is_kept() {
        assert_eq!(clean("train-1"), "train-1");
        assert_eq!(clean("a\u{1b}[31mred\nb"), "a\\u{1b}[31mred\\u{a}b");
        assert_eq!(clean("x\u{202e}y"), "x\\u{202e}y");
        assert_eq!(clean_text("line 1\nline\u{7} 2"), "line 1\nline\\u{7} 2");
    }
}
