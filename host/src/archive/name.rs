//! Archive names: each part made from user text (project, task name) is
//! one safe path component, so nothing a task is called can reach outside
//! the archive root or hide under a dot.

use std::path::PathBuf;

/// Longest component, in bytes (file systems allow 255).
const MAX_COMPONENT: usize = 100;

/// `text` as one path component: `/`, NUL, control characters and
/// backslashes become `_`, leading dots are dropped (no `.`, `..` or hidden
/// names), and it is cut at [`MAX_COMPONENT`] bytes on a character boundary.
pub fn component(text: &str) -> String {
    let mut out: String = text
        .chars()
        .map(|c| {
            if c == '/' || c == '\\' || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .collect();
    out = out.trim_start_matches('.').trim().to_string();
    if out.len() > MAX_COMPONENT {
        let mut cut = MAX_COMPONENT;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
    }
    if out.is_empty() { "_".into() } else { out }
}

/// The final name of a run's archive, relative to the root:
/// `<project>/<task-name>/<date>_<task id>_<run id>`, with `_<n>` added for
/// the `n`-th candidate (n >= 2) when an earlier one is someone else's.
pub fn final_rel(project: &str, name: &str, date: &str, task: i64, run: i64, n: u32) -> PathBuf {
    let leaf = if n <= 1 {
        format!("{}_{task}_{run}", component(date))
    } else {
        format!("{}_{task}_{run}_{n}", component(date))
    };
    PathBuf::from(component(project))
        .join(component(name))
        .join(leaf)
}

/// The folder under `<root>/.partial` a run's archive is built in: unique
/// per daemon (host and state dir) and run, so two machines sharing one
/// root never build in the same place.
pub fn partial_name(host: &str, state_dir: &str, run: i64) -> String {
    use sha2::{Digest, Sha256};
    let h = format!("{:x}", Sha256::digest(state_dir.as_bytes()));
    let host: String = component(host).chars().take(60).collect();
    format!("{host}_{}_{run}", &h[..12])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_names_stay_one_component_inside_the_root() {
        for (text, want) in [
            ("../../etc", "_.._etc"),
            ("..", "_"),
            (".hidden", "hidden"),
            ("a/b", "a_b"),
            ("line\nbreak", "line_break"),
            ("", "_"),
            ("  ", "_"),
            ("训练", "训练"),
        ] {
            assert_eq!(component(text), want, "{text:?}");
        }
        let long = "é".repeat(200);
        let c = component(&long);
        assert!(c.len() <= MAX_COMPONENT && c.chars().all(|ch| ch == 'é'));
    }

    #[test]
    fn the_final_name_has_project_task_name_date_and_ids() {
        assert_eq!(
            final_rel("vision", "train", "2026-11-30", 4, 9, 1),
            PathBuf::from("vision/train/2026-11-30_4_9")
        );
        assert_eq!(
            final_rel("../x", "a/b", "2026-11-30", 4, 9, 3),
            PathBuf::from("_x/a_b/2026-11-30_4_9_3")
        );
    }

    #[test]
    fn partial_names_differ_by_state_dir_and_run() {
        let a = partial_name("gpu1", "/var/lib/nightjar", 7);
        let b = partial_name("gpu1", "/home/x/.local/state/nightjar", 7);
        let c = partial_name("gpu1", "/var/lib/nightjar", 8);
        assert!(a != b && a != c, "{a} {b} {c}");
        assert!(a.starts_with("gpu1_") && a.ends_with("_7"), "{a}");
    }
}
