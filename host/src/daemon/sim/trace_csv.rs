//! The bytes under a trace's CSV: capped at [`MAX_BYTES`], counted into
//! lines (the CSV reader's own line numbers skip comment and empty lines,
//! and a CR LF file's), and CSV errors said in a trace's words.

use std::io::Read;

use super::{KNOWN, MAX_BYTES};

/// A reader that fails once more than [`MAX_BYTES`] have been read; it
/// keeps where the line ends are ([`Capped::line_at`]) and the last byte
/// read that is not white space (a quoted value left open runs to the end
/// of the file, which then does not end in `"`).
pub(super) struct Capped<R> {
    inner: R,
    /// Bytes read.
    pub(super) read: u64,
    /// The last byte read that is not white space.
    pub(super) last: u8,
    /// Line ends in the chunks read before the last one.
    ends_before: u64,
    /// Where the last chunk read starts.
    chunk: u64,
    /// Where the line ends in the last chunk are, from its start.
    ends: Vec<usize>,
    /// The last chunk ended in a CR: a line end unless a LF comes next.
    cr: bool,
}

impl<R> Capped<R> {
    pub(super) fn new(inner: R) -> Self {
        Capped {
            inner,
            read: 0,
            last: 0,
            ends_before: 0,
            chunk: 0,
            ends: Vec::new(),
            cr: false,
        }
    }

    /// The line (from 1) that byte `at` is on. The CSV reader reads a
    /// chunk only once it has parsed the one before (it is buffered), so
    /// `at`, a place it has reached, is in the last chunk or at its end.
    pub(super) fn line_at(&self, at: u64) -> u64 {
        let within = at.saturating_sub(self.chunk);
        let ends = self.ends.iter().filter(|&&e| (e as u64) < within).count();
        1 + self.ends_before + ends as u64
    }

    /// The line being read (after every line end read so far).
    pub(super) fn line_now(&self) -> u64 {
        1 + self.ends_before + self.ends.len() as u64
    }
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let mut n = self.inner.read(buf)?;
        // The CSV reader drops a UTF-8 BOM only when its first read holds
        // it and more (it takes a read of nothing but the BOM for the end).
        while self.read == 0 && (1..4).contains(&n) && n < buf.len() {
            match self.inner.read(&mut buf[n..])? {
                0 => break,
                more => n += more,
            }
        }
        if n > 0 {
            // A line end is a LF, or a CR not followed by one.
            let cr_ended = self.cr && buf[0] != b'\n';
            self.ends_before += self.ends.len() as u64 + u64::from(cr_ended);
            self.chunk = self.read;
            self.ends.clear();
            let chunk = &buf[..n];
            let ends = chunk.iter().enumerate().filter(|&(i, &b)| {
                b == b'\n' || (b == b'\r' && chunk.get(i + 1).is_some_and(|&c| c != b'\n'))
            });
            self.ends.extend(ends.map(|(i, _)| i));
            self.cr = chunk[n - 1] == b'\r';
            if let Some(&b) = buf[..n].iter().rev().find(|b| !b.is_ascii_whitespace()) {
                self.last = b;
            }
        }
        self.read += n as u64;
        if self.read > MAX_BYTES {
            return Err(std::io::Error::other(format!(
                "more than {} MiB of text; split the trace into shorter periods",
                MAX_BYTES >> 20
            )));
        }
        Ok(n)
    }
}

/// The line a record starts on: it ended at byte `end` (just past its
/// line end, or at the file's end) and holds `inner` line ends of its own
/// (in quoted values).
pub(super) fn start_line<R>(bytes: &Capped<R>, end: u64, inner: u64) -> u64 {
    // Its own line end, at `end - 1`, is not counted.
    bytes
        .line_at(end.saturating_sub(1))
        .saturating_sub(inner)
        .max(1)
}

/// Line ends (LF, or CR not followed by LF) held in `record`'s values.
pub(super) fn inner_ends(record: &csv::StringRecord) -> u64 {
    let ends = |v: &[u8]| {
        (v.iter().enumerate())
            .filter(|&(i, &b)| b == b'\n' || (b == b'\r' && v.get(i + 1) != Some(&b'\n')))
            .count() as u64
    };
    record.as_byte_record().iter().map(ends).sum()
}

/// What a CSV error means in a trace whose header names `cols` (none: in
/// the header): the column it is in, if known, and what to do.
pub(super) fn problem(e: &csv::Error, cols: &[&str]) -> (Option<&'static str>, String) {
    let col = |i: usize| {
        cols.get(i)
            .and_then(|c| KNOWN.iter().find(|k| *k == c).copied())
    };
    match e.kind() {
        csv::ErrorKind::Utf8 { err, .. } if cols.is_empty() => (
            None,
            format!(
                "the header's value {} is not UTF-8 text; save the trace as UTF-8",
                err.field() + 1
            ),
        ),
        csv::ErrorKind::Utf8 { err, .. } => (
            col(err.field()),
            "is not UTF-8 text; save the trace as UTF-8".into(),
        ),
        csv::ErrorKind::UnequalLengths { len, .. } => (
            None,
            format!(
                "{len} values, but the header names {} columns ({}): give one value per column (empty for none), and quote a value that holds a comma",
                cols.len(),
                cols.join(",")
            ),
        ),
        csv::ErrorKind::Io(e) => (None, e.to_string()),
        _ => (None, format!("{e}")),
    }
}
