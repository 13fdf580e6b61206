//! `nightjar simulate` keeps the chain's compiled components in the
//! caller's own cache (`$XDG_CACHE_HOME/nightjar/plugins`), so the next
//! run loads them instead of compiling; never in a folder anyone else
//! could write (native code is loaded from it).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use crate::harness::BIN;

const TRACE: &str = "id,arrival_s,gpus,duration_s\n1,0,1,10\n2,1,2,4\n3,2,1,5\n";

/// `nightjar --json simulate t.csv` on embedded defaults (the default
/// chain), its cache under `cache`: stdout.
fn simulate(dir: &Path, cache: &Path) -> String {
    let out = Command::new(BIN)
        .args(["--json", "simulate", "t.csv", "--gpus", "2"])
        .env_remove("NIGHTJAR_CONFIG")
        .env("XDG_CACHE_HOME", cache)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The compiled components in `cache`, with their modification times.
fn compiled(cache: &Path) -> Vec<(std::ffi::OsString, std::time::SystemTime)> {
    let Ok(entries) = std::fs::read_dir(cache.join("nightjar/plugins")) else {
        return Vec::new();
    };
    let mut files: Vec<_> = entries
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "cwasm"))
        .map(|e| (e.file_name(), e.metadata().unwrap().modified().unwrap()))
        .collect();
    files.sort();
    files
}

#[test]
fn simulate_compiles_the_chain_once_into_the_callers_cache_and_never_into_one_others_could_write() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("t.csv"), TRACE).unwrap();
    let cache = dir.path().join("cache");
    let first = simulate(dir.path(), &cache);
    let kept = compiled(&cache);
    assert!(!kept.is_empty(), "the chain's components are kept");
    let mode = std::fs::metadata(cache.join("nightjar/plugins"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(
        mode & 0o777,
        0o700,
        "the cache folder is the caller's alone"
    );
    let second = simulate(dir.path(), &cache);
    assert_eq!(second, first, "loaded from the cache: the same figures");
    let again = compiled(&cache);
    assert_eq!(
        again.iter().map(|f| &f.0).collect::<Vec<_>>(),
        kept.iter().map(|f| &f.0).collect::<Vec<_>>(),
        "nothing compiled anew"
    );
    // A cache folder anyone may write into: compiled afresh, nothing kept.
    let open = dir.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    assert_eq!(simulate(dir.path(), &open), first);
    assert!(
        !open.join("nightjar").exists(),
        "nothing made in a folder others may write"
    );
}
