//! The rules about the file list: `required`, `count` and `size`. They judge
//! the list the host sent and read no file.

use nightjar_sdk::{Finding, OutputFile, Run, Severity};

use crate::config::{Config, CountRule, Pattern, SizeRule};

/// At most this many file names in one finding's message.
const NAMED: usize = 5;

/// `required`: each glob matches at least one file, and no match is empty.
/// One finding per glob at most.
pub fn required(config: &Config, run: &Run, out: &mut Vec<Finding>) {
    let severity = config.severity_of(None);
    for pattern in &config.required {
        let matches = matching(pattern, run);
        if matches.is_empty() {
            out.push(Finding::new(
                severity,
                pattern.as_str(),
                format!(
                    "{}: no file matches, wanted at least one (required){}",
                    pattern.as_str(),
                    omitted(run)
                ),
            ));
            continue;
        }
        let empty: Vec<&OutputFile> = matches.iter().copied().filter(|f| f.size == 0).collect();
        if let Some(first) = empty.first() {
            let message = if matches.len() == 1 {
                format!(
                    "{}: is empty (0 bytes), wanted a non-empty file (required)",
                    first.path
                )
            } else {
                format!(
                    "{}: {} of the {} matching files are empty (0 bytes), wanted none empty (required): {}",
                    pattern.as_str(),
                    empty.len(),
                    matches.len(),
                    names(&empty)
                )
            };
            out.push(Finding::new(severity, first.path.as_str(), message));
        }
    }
}

/// `[[validate.count]]`: how many files the glob matches.
pub fn count(rule: &CountRule, severity: Severity, run: &Run, out: &mut Vec<Finding>) {
    let n = matching(&rule.glob, run).len() as u64;
    let glob = rule.glob.as_str();
    let files = |n: u64| if n == 1 { "file" } else { "files" };
    if let Some(min) = rule.min
        && n < min
    {
        out.push(Finding::new(
            severity,
            glob,
            format!(
                "{glob}: {n} {} match, wanted at least {min}{}",
                files(n),
                omitted(run)
            ),
        ));
    }
    if let Some(max) = rule.max
        && n > max
    {
        out.push(Finding::new(
            severity,
            glob,
            format!("{glob}: {n} {} match, wanted at most {max}", files(n)),
        ));
    }
}

/// `[[validate.size]]`: the size of each file the glob matches. One finding
/// per bound at most, naming the first files out of it.
pub fn size(rule: &SizeRule, severity: Severity, run: &Run, out: &mut Vec<Finding>) {
    let matches = matching(&rule.glob, run);
    let bounds = [
        (rule.min.map(|s| s.bytes()), "at least", true),
        (rule.max.map(|s| s.bytes()), "at most", false),
    ];
    for (bound, words, is_min) in bounds {
        let Some(bound) = bound else { continue };
        let bad: Vec<&OutputFile> = matches
            .iter()
            .copied()
            .filter(|f| {
                if is_min {
                    f.size < bound
                } else {
                    f.size > bound
                }
            })
            .collect();
        let Some(first) = bad.first() else { continue };
        let wanted = format!("wanted {words} {}", human(bound));
        let message = if bad.len() == 1 {
            format!("{}: {}, {wanted}", first.path, human_exact(first.size))
        } else {
            format!(
                "{}: {} matching files out of bounds, {wanted}: {}",
                rule.glob.as_str(),
                bad.len(),
                bad.iter()
                    .take(NAMED)
                    .map(|f| format!("{} ({})", f.path, human(f.size)))
                    .collect::<Vec<_>>()
                    .join(", ")
                    + &more(bad.len())
            )
        };
        out.push(Finding::new(severity, first.path.as_str(), message));
    }
}

/// The listed files `pattern` matches.
fn matching<'r>(pattern: &Pattern, run: &'r Run) -> Vec<&'r OutputFile> {
    run.files
        .iter()
        .filter(|f| pattern.is_match(&f.path))
        .collect()
}

/// A note for counts that the host's list may have cut short.
fn omitted(run: &Run) -> String {
    if run.files_omitted == 0 {
        String::new()
    } else {
        format!(
            " (the host listed {} files and left {} out)",
            run.files.len(),
            run.files_omitted
        )
    }
}

/// The first few paths, and how many more.
fn names(files: &[&OutputFile]) -> String {
    let listed: Vec<&str> = files.iter().take(NAMED).map(|f| f.path.as_str()).collect();
    listed.join(", ") + &more(files.len())
}

fn more(n: usize) -> String {
    if n > NAMED {
        format!(" and {} more", n - NAMED)
    } else {
        String::new()
    }
}

/// `1.5 MB`, `812 bytes`: decimal units, as `min = "1 MB"` is written.
pub fn human(bytes: u64) -> String {
    const UNITS: [(u64, &str); 4] = [
        (1_000_000_000_000, "TB"),
        (1_000_000_000, "GB"),
        (1_000_000, "MB"),
        (1_000, "KB"),
    ];
    for (scale, unit) in UNITS {
        if bytes >= scale {
            let tenths = (bytes as u128 * 10 / scale as u128) as u64;
            return if tenths.is_multiple_of(10) {
                format!("{} {unit}", tenths / 10)
            } else {
                format!("{}.{} {unit}", tenths / 10, tenths % 10)
            };
        }
    }
    if bytes == 1 {
        "1 byte".into()
    } else {
        format!("{bytes} bytes")
    }
}

/// [`human`], with the exact count when it rounds.
fn human_exact(bytes: u64) -> String {
    let h = human(bytes);
    if bytes >= 1_000 {
        format!("{h} ({bytes} bytes)")
    } else {
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_like_people_write_them() {
        assert_eq!(human(0), "0 bytes");
        assert_eq!(human(1), "1 byte");
        assert_eq!(human(999), "999 bytes");
        assert_eq!(human(1_000_000), "1 MB");
        assert_eq!(human(1_550_000), "1.5 MB");
        assert_eq!(human(10_000_000_000), "10 GB");
        assert_eq!(human(u64::MAX), "18446744 TB");
        assert_eq!(human_exact(512_000), "512 KB (512000 bytes)");
    }
}
