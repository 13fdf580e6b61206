//! `[[validate.csv]]`: a CSV table's header and row count, streamed from the
//! file (never read whole), with a cap on the length of one line.

use std::io::{self, ErrorKind, Read};

use nightjar_sdk::{Finding, Run, Severity};

use crate::config::CsvRule;

/// The longest line read: a file with a longer one is refused rather than
/// held in memory.
pub const MAX_LINE: usize = 1 << 20;

/// Streams the rule's file: its header must name every column of the rule,
/// its data rows must number within the bounds. Counting stops once `min_rows`
/// is reached when there is no `max_rows`.
pub fn check(rule: &CsvRule, severity: Severity, run: &Run, out: &mut Vec<Finding>) {
    let file = rule.file.as_str();
    let finding = |message: String| Finding::new(severity, file, format!("{file}: {message}"));
    let opened = match run.open(file) {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            out.push(finding("missing, wanted a CSV file".into()));
            return;
        }
        Err(e) => {
            out.push(finding(format!("cannot be read ({e})")));
            return;
        }
    };
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(false)
        .delimiter(rule.delimiter.map_or(b',', |d| d.0))
        .from_reader(LineCap::new(io::BufReader::new(opened)));
    let header = match reader.headers() {
        Ok(h) => h.clone(),
        Err(e) => {
            out.push(finding(format!("the header cannot be read ({})", why(&e))));
            return;
        }
    };
    let missing: Vec<&str> = rule
        .columns
        .iter()
        .map(String::as_str)
        .filter(|c| !header.iter().any(|h| h.trim() == *c))
        .collect();
    if !missing.is_empty() {
        let found: Vec<&str> = header.iter().take(20).collect();
        out.push(finding(format!(
            "no column {} in the header, wanted {}; the header is: {}",
            quoted(&missing),
            quoted(&rule.columns.iter().map(String::as_str).collect::<Vec<_>>()),
            if found.is_empty() {
                "empty".to_string()
            } else {
                found.join(", ")
            }
        )));
    }
    let enough = match (rule.min_rows, rule.max_rows) {
        (_, Some(_)) => u64::MAX,
        (Some(min), None) => min,
        (None, None) => u64::MAX,
    };
    let mut rows: u64 = 0;
    let mut record = csv::ByteRecord::new();
    while rows < enough {
        match reader.read_byte_record(&mut record) {
            Ok(true) => rows += 1,
            Ok(false) => break,
            Err(e) => {
                out.push(finding(format!("not valid CSV: {}", why(&e))));
                return;
            }
        }
    }
    let plural = |n: u64| if n == 1 { "data row" } else { "data rows" };
    if let Some(min) = rule.min_rows
        && rows < min
    {
        out.push(finding(format!(
            "{rows} {}, wanted at least {min}",
            plural(rows)
        )));
    }
    if let Some(max) = rule.max_rows
        && rows > max
    {
        out.push(finding(format!(
            "{rows} {}, wanted at most {max}",
            plural(rows)
        )));
    }
}

/// `` `a`, `b` ``
fn quoted(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A CSV error in a person's words, with its line.
fn why(e: &csv::Error) -> String {
    let line = e.position().map(|p| format!("line {}: ", p.line()));
    match e.kind() {
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => format!(
            "{}{len} fields where the header has {expected_len}",
            line.unwrap_or_default()
        ),
        csv::ErrorKind::Io(io) => io.to_string(),
        csv::ErrorKind::Utf8 { err, .. } => {
            format!("{}not UTF-8 text ({err})", line.unwrap_or_default())
        }
        _ => format!("{}{e}", line.unwrap_or_default()),
    }
}

/// A reader that fails once [`MAX_LINE`] bytes pass without a newline, so a
/// file that is one endless line cannot fill the memory cap.
struct LineCap<R> {
    inner: R,
    since_newline: usize,
}

impl<R> LineCap<R> {
    fn new(inner: R) -> Self {
        LineCap {
            inner,
            since_newline: 0,
        }
    }
}

impl<R: Read> Read for LineCap<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        match buf[..n].iter().rposition(|&b| b == b'\n') {
            Some(at) => self.since_newline = n - at - 1,
            None => self.since_newline += n,
        }
        if self.since_newline > MAX_LINE {
            return Err(io::Error::other(format!(
                "a line is longer than {} bytes, over what this validator reads",
                MAX_LINE
            )));
        }
        Ok(n)
    }
}
