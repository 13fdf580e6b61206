use std::fs::File;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use super::*;

/// A cache in memory that counts what it was asked.
#[derive(Default)]
struct Mem {
    map: HashMap<Key, String>,
    lookups: usize,
}

impl HashCache for Mem {
    fn lookup(&mut self, keys: &[Key]) -> HashMap<Key, String> {
        self.lookups += 1;
        keys.iter()
            .filter_map(|k| self.map.get(k).map(|s| (*k, s.clone())))
            .collect()
    }
    fn remember(&mut self, fresh: &[(Key, String, String)]) {
        for (k, s, _) in fresh {
            self.map.insert(*k, s.clone());
        }
    }
}

/// A file with `body`, settled: its times an hour back, and the status
/// change (which setting the time moves) more than the racy window ago.
fn settled_file(dir: &Path, name: &str, body: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    let f = File::options().write(true).open(&p).unwrap();
    f.set_modified(SystemTime::now() - Duration::from_secs(3600))
        .unwrap();
    p
}

fn wait_out_racy_window() {
    std::thread::sleep(Duration::from_nanos(RACY_NS as u64 + 100_000_000));
}

const ABC: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

#[test]
fn a_settled_file_is_hashed_once_then_served_from_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let p = settled_file(dir.path(), "a.csv", b"abc");
    wait_out_racy_window();
    let mut cache = Mem::default();
    let mut stats = CaptureStats::default();
    let first = record_all(
        std::slice::from_ref(&p),
        None,
        &mut cache,
        false,
        &mut stats,
    );
    assert_eq!(first[0].sha256.as_deref(), Some(ABC));
    assert!(first[0].hashed_now);
    assert_eq!((stats.hashed, stats.hashed_bytes, stats.cached), (1, 3, 0));
    let mut stats = CaptureStats::default();
    let again = record_all(
        std::slice::from_ref(&p),
        None,
        &mut cache,
        false,
        &mut stats,
    );
    assert!(!again[0].hashed_now);
    assert_eq!(again[0].sha256.as_deref(), Some(ABC));
    assert_eq!((stats.hashed, stats.cached), (0, 1));
    // With the earlier capture's records, not even the cache is asked.
    let lookups = cache.lookups;
    let mut stats = CaptureStats::default();
    let earlier = Earlier {
        inputs: &first,
        at_ms: crate::time::now_ms(),
    };
    let start = record_all(
        std::slice::from_ref(&p),
        Some(earlier),
        &mut cache,
        false,
        &mut stats,
    );
    assert_eq!(start[0].sha256.as_deref(), Some(ABC));
    assert_eq!((stats.hashed, stats.cached, cache.lookups), (0, 1, lookups));
    // --verify reads it again, whatever the cache holds.
    let mut stats = CaptureStats::default();
    let verified = record_all(std::slice::from_ref(&p), None, &mut cache, true, &mut stats);
    assert!(verified[0].hashed_now);
    assert_eq!(stats.hashed, 1);
}

#[test]
fn a_file_modified_moments_ago_is_hashed_but_not_cached() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("fresh");
    std::fs::write(&p, b"abc").unwrap();
    let mut cache = Mem::default();
    let mut stats = CaptureStats::default();
    record_all(
        std::slice::from_ref(&p),
        None,
        &mut cache,
        false,
        &mut stats,
    );
    record_all(
        std::slice::from_ref(&p),
        None,
        &mut cache,
        false,
        &mut stats,
    );
    assert_eq!(stats.hashed, 2, "a write in the same tick could follow");
    assert!(cache.map.is_empty());
}

#[test]
fn a_changed_file_is_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let p = settled_file(dir.path(), "x", b"abc");
    wait_out_racy_window();
    let mut cache = Mem::default();
    let mut stats = CaptureStats::default();
    let first = record_all(
        std::slice::from_ref(&p),
        None,
        &mut cache,
        false,
        &mut stats,
    );
    std::fs::write(&p, b"abd").unwrap();
    let earlier = Earlier {
        inputs: &first,
        at_ms: crate::time::now_ms(),
    };
    let now = record_all(
        std::slice::from_ref(&p),
        Some(earlier),
        &mut cache,
        false,
        &mut stats,
    );
    assert!(now[0].hashed_now);
    assert_ne!(now[0].sha256, first[0].sha256);
}

#[test]
fn fifos_devices_folders_loops_and_missing_files_are_named_never_read() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo on a path we own.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let a = dir.path().join("loop-a");
    let b = dir.path().join("loop-b");
    std::os::unix::fs::symlink(&b, &a).unwrap();
    std::os::unix::fs::symlink(&a, &b).unwrap();
    let paths = vec![
        fifo,
        PathBuf::from("/dev/zero"),
        dir.path().to_path_buf(),
        a,
        dir.path().join("gone"),
    ];
    let t0 = std::time::Instant::now();
    let mut stats = CaptureStats::default();
    let recs = record_all(&paths, None, &mut Mem::default(), false, &mut stats);
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    let kinds: Vec<&str> = recs.iter().map(|r| r.kind.as_str()).collect();
    assert_eq!(
        kinds,
        ["fifo", "char-device", "folder", "unreadable", "missing"]
    );
    assert!(recs.iter().all(|r| r.sha256.is_none() && r.note.is_some()));
    assert!(
        recs[3].note.as_deref().unwrap().contains("symlink loop"),
        "{:?}",
        recs[3].note
    );
    assert_eq!(stats.hashed, 0);
}

#[test]
fn many_inputs_cost_one_cache_lookup() {
    let dir = tempfile::tempdir().unwrap();
    let paths: Vec<PathBuf> = (0..2000)
        .map(|i| settled_file(dir.path(), &format!("f{i}"), format!("{i}").as_bytes()))
        .collect();
    wait_out_racy_window();
    let mut cache = Mem::default();
    let mut stats = CaptureStats::default();
    record_all(&paths, None, &mut cache, false, &mut stats);
    assert_eq!((stats.hashed, cache.map.len()), (2000, 2000));
    let mut stats = CaptureStats::default();
    let lookups = cache.lookups;
    record_all(&paths, None, &mut cache, false, &mut stats);
    assert_eq!((stats.hashed, stats.cached), (0, 2000));
    assert_eq!(cache.lookups, lookups + 1);
}

#[test]
fn hashing_streams_and_matches_a_known_hash() {
    let (sha, n) = hash_reader(&mut std::io::repeat(b'a').take(3 * CHUNK as u64 + 7)).unwrap();
    assert_eq!(n, 3 * CHUNK as u64 + 7);
    let mut h = Sha256::new();
    h.update(vec![b'a'; 3 * CHUNK + 7]);
    assert_eq!(sha, hex(&h.finalize()));
}
