//! Plain aligned tables for human output, and the escaping of text that
//! came from users or plugins (names, reasons) before it reaches a terminal.

use std::borrow::Cow;
use std::io::Write;

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
/// column is not padded. One write for the whole table (10,000 rows were
/// 10,000 writes); a reader that went away (`| head`) ends it quietly, and a
/// failed write ends the command with status 1.
pub fn print(headers: &[&str], rows: &[Vec<String>]) {
    let text = render(headers, rows);
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush())
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        eprintln!("nightjar: cannot write to stdout: {e}");
        // The table is lost (a full disk under `> file`): a failure (status 1;
        // before, `println!` panicked).
        std::process::exit(1);
    }
}

/// The table `print` prints.
fn render(headers: &[&str], rows: &[Vec<String>]) -> String {
    let rows: Vec<Vec<std::borrow::Cow<'_, str>>> = rows
        .iter()
        .map(|r| r.iter().map(|c| clean(c)).collect())
        .collect();
    let mut widths: Vec<usize> = headers.iter().map(|h| h.len()).collect();
    for row in &rows {
        for (i, cell) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(cell.chars().count());
            }
        }
    }
    let mut text = String::with_capacity((rows.len() + 1) * (widths.iter().sum::<usize>() + 16));
    let mut line = |cells: &mut dyn Iterator<Item = &str>| {
        let start = text.len();
        let mut cells = cells.enumerate().peekable();
        while let Some((i, c)) = cells.next() {
            text.push_str(c);
            if cells.peek().is_some() {
                let pad = widths
                    .get(i)
                    .map_or(0, |w| w.saturating_sub(c.chars().count()));
                text.extend(std::iter::repeat_n(' ', pad + 2));
            }
        }
        let end = text[start..].trim_end().len() + start;
        text.truncate(end);
        text.push('\n');
    };
    line(&mut headers.iter().copied());
    for row in &rows {
        line(&mut row.iter().map(|c| c.as_ref()));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_padded_to_their_widest_cell_and_the_last_is_not() {
        let rows = vec![
            vec!["1".to_string(), "añb".to_string(), "x".to_string()],
            vec!["22".to_string(), "b".to_string(), String::new()],
        ];
        assert_eq!(
            render(&["ID", "NAME", "INFO"], &rows),
            "ID  NAME  INFO\n1   añb   x\n22  b\n"
        );
        assert_eq!(
            render(&["ID"], &[vec!["a\u{1b}[31m".to_string()]]),
            "ID\na\\u{1b}[31m\n",
            "cells are cleaned"
        );
    }

    #[test]
    fn ansi_escapes_and_newlines_are_escaped_and_plain_text_is_kept() {
        assert_eq!(clean("train-1"), "train-1");
        assert_eq!(clean("a\u{1b}[31mred\nb"), "a\\u{1b}[31mred\\u{a}b");
        assert_eq!(clean("x\u{202e}y"), "x\\u{202e}y");
        assert_eq!(clean_text("line 1\nline\u{7} 2"), "line 1\nline\\u{7} 2");
    }
}
