//! What `nightjar logs` prints of a log that is not raw: every control
//! character but newline and tab shown as `\xNN` (C0, DEL, and the C1
//! controls U+0080-U+009F as UTF-8 encodes them), so a task's output cannot
//! set the reader's terminal title, links, clipboard or colours, or move
//! the cursor over what was printed. Bytes arrive in chunks: a C1 control's
//! first byte at a chunk's end waits for the next.

/// Escapes a byte stream chunk by chunk.
#[derive(Debug, Default)]
pub struct Escaper {
    /// A 0xC2 that ended the last chunk (maybe the start of a C1 control).
    pending: bool,
}

impl Escaper {
    /// `bytes` as printed.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        if std::mem::take(&mut self.pending) {
            match bytes.first() {
                Some(&b) if (0x80..=0x9f).contains(&b) => {
                    push_hex(&mut out, 0xc2);
                    push_hex(&mut out, b);
                    i = 1;
                }
                Some(_) => out.push(0xc2),
                None => {
                    self.pending = true;
                    return out;
                }
            }
        }
        while i < bytes.len() {
            let b = bytes[i];
            match b {
                b'\n' | b'\t' => out.push(b),
                0x00..=0x1f | 0x7f => push_hex(&mut out, b),
                0xc2 => match bytes.get(i + 1) {
                    Some(&n) if (0x80..=0x9f).contains(&n) => {
                        push_hex(&mut out, 0xc2);
                        push_hex(&mut out, n);
                        i += 1;
                    }
                    Some(_) => out.push(b),
                    None => self.pending = true,
                },
                _ => out.push(b),
            }
            i += 1;
        }
        out
    }

    /// What is still held at the end of the stream.
    pub fn finish(&mut self) -> Vec<u8> {
        if std::mem::take(&mut self.pending) {
            vec![0xc2]
        } else {
            Vec::new()
        }
    }
}

fn push_hex(out: &mut Vec<u8>, b: u8) {
    out.extend_from_slice(format!("\\x{b:02x}").as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_c0_del_and_c1_but_keeps_newlines_tabs_and_text() {
        let mut e = Escaper::default();
        let text = "a\tb\n\x1b]0;pwned\x07\x1b[2J\u{9b}31m é ✓\r\x7f\n";
        let out = e.feed(text.as_bytes());
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "a\tb\n\\x1b]0;pwned\\x07\\x1b[2J\\xc2\\x9b31m é ✓\\x0d\\x7f\n"
        );
    }

    #[test]
    fn a_c1_control_split_across_chunks_is_still_escaped() {
        let mut e = Escaper::default();
        let mut out = e.feed(b"x\xc2");
        out.extend(e.feed(b"\x9by"));
        out.extend(e.feed(b"\xc2"));
        out.extend(e.feed(b"\xa9"));
        out.extend(e.finish());
        assert_eq!(out, b"x\\xc2\\x9by\xc2\xa9");
        let mut e = Escaper::default();
        let mut out = e.feed(b"\xc2");
        out.extend(e.finish());
        assert_eq!(out, b"\xc2");
    }
}
