//! Which job array element runs which run: a batch's index (the daemon's,
//! in its folder under `batches/`) lists its elements' run folders, element
//! `i` on line `i + 1`. A restarted daemon reads every index once to find
//! the element of each run it adopts; nothing in a run folder (which may
//! be its task's owner's) says it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::folder::INDEX;

/// The largest index read (a `MaxArraySize` of run folders' paths).
const INDEX_MAX: u64 = 64 << 20;

/// Each run folder the batches' indexes in `batches` list, with its batch
/// and index there. A folder listed twice (a stale batch of an earlier
/// database whose run ids a fresh one used again) keeps the batch whose
/// index was written last: a batch id says nothing of when.
pub(super) fn elements(batches: &Path) -> HashMap<PathBuf, (i64, u32)> {
    let mut out = HashMap::new();
    let Ok(dir) = std::fs::read_dir(batches) else {
        return out;
    };
    let written = |p: &Path| {
        std::fs::symlink_metadata(p.join(INDEX))
            .and_then(|m| m.modified())
            .ok()
    };
    let mut listed: Vec<(Option<std::time::SystemTime>, i64, PathBuf)> = dir
        .flatten()
        .filter_map(|e| {
            let batch = e.file_name().to_str()?.parse::<i64>().ok()?;
            Some((written(&e.path()), batch, e.path()))
        })
        .collect();
    listed.sort();
    for (_, batch, path) in listed {
        let Ok(text) = nightjar_core::plain_file::read(&path.join(INDEX), INDEX_MAX) else {
            continue;
        };
        let text = String::from_utf8_lossy(&text);
        for (i, line) in text.lines().enumerate() {
            if let Ok(i) = u32::try_from(i) {
                out.insert(PathBuf::from(line), (batch, i));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_run_folder_a_batchs_index_lists_is_that_batchs_element_and_nothing_else_says() {
        let batches = tempfile::tempdir().unwrap();
        let index = |b: &str, lines: &str| {
            std::fs::create_dir_all(batches.path().join(b)).unwrap();
            std::fs::write(batches.path().join(b).join(INDEX), lines).unwrap();
        };
        index("7", "/s/runs/7\n/s/runs/8\n/s/runs/9\n");
        index("12", "/s/runs/12\n/s/runs/13\n");
        // Not a batch's folder: its name is no batch id.
        index("junk", "/s/runs/40\n");
        let e = elements(batches.path());
        assert_eq!(e.get(Path::new("/s/runs/8")), Some(&(7, 1)));
        assert_eq!(e.get(Path::new("/s/runs/13")), Some(&(12, 1)));
        assert_eq!(e.get(Path::new("/s/runs/40")), None);
        assert_eq!(e.len(), 5);
        // An index that is a link is not followed.
        std::fs::create_dir_all(batches.path().join("20")).unwrap();
        std::os::unix::fs::symlink(
            batches.path().join("7").join(INDEX),
            batches.path().join("20").join(INDEX),
        )
        .unwrap();
        assert_eq!(
            elements(batches.path()).get(Path::new("/s/runs/7")),
            Some(&(7, 0))
        );
        assert!(elements(tempfile::tempdir().unwrap().path().join("none").as_path()).is_empty());
        // A stale batch of an earlier database (a higher id, written
        // before) and the batch written since that lists the same folder:
        // the later one's.
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        index("30", "/s/runs/31\n");
        std::fs::File::options()
            .write(true)
            .open(batches.path().join("30").join(INDEX))
            .unwrap()
            .set_modified(old)
            .unwrap();
        index("29", "/s/runs/29\n/s/runs/30\n/s/runs/31\n");
        assert_eq!(
            elements(batches.path()).get(Path::new("/s/runs/31")),
            Some(&(29, 2))
        );
    }
}
