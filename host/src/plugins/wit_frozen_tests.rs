//! Released contract folders are frozen byte for byte (`wit/README.md`):
//! each file of each folder under `wit/` has its sha256 here, and a folder
//! or file without one, a file that is gone, or a byte that changed fails.
//! A change to the contract is a new folder with the next version, and its
//! hashes are added below; these lines are never edited.

use std::collections::BTreeMap;
use std::path::Path;

/// (folder, file, sha256) of every released file.
const RELEASED: &[(&str, &str, &str)] = &[
    (
        "nightjar-plugin@0.1.0",
        "nightjar-plugin.wit",
        "a3c3b51ed2c319a34addcfc1dbf6e1bf3a6d363ea8e149772cdac21ddb25c8f6",
    ),
    // As first released (commit 3b5472e): the scheduling-policy world only.
    (
        "nightjar-plugin@0.2.0",
        "nightjar-plugin.wit",
        "22d0cda06a5e0065e840d04560b8e7ce9699fbfcde59484639aa494842cde25a",
    ),
    (
        "nightjar-plugin@0.2.1",
        "nightjar-plugin.wit",
        "416d1d4ee9f97f708bae7050324f2e4541bf46f1fe2a819e2348f40c8a2fd401",
    ),
    // 0.2.1 and the incremental policy.
    (
        "nightjar-plugin@0.2.2",
        "nightjar-plugin.wit",
        "61c78f8123d3274c356ab14bb64033b3009c149382da131ece20e4f423a91146",
    ),
    // 0.2.2 and the delta policy.
    (
        "nightjar-plugin@0.2.3",
        "nightjar-plugin.wit",
        "f1afc7133cad3f1a7decd74b9c378eedb79b335058ebe6c72d65477752d0e9dc",
    ),
];

/// Every file under `wit/` (but its README), by (folder, file).
fn on_disk(wit: &Path) -> BTreeMap<(String, String), Vec<u8>> {
    let mut files = BTreeMap::new();
    for folder in std::fs::read_dir(wit).unwrap() {
        let folder = folder.unwrap();
        if !folder.file_type().unwrap().is_dir() {
            continue;
        }
        let name = folder.file_name().to_string_lossy().into_owned();
        for file in std::fs::read_dir(folder.path()).unwrap() {
            let file = file.unwrap();
            let bytes = std::fs::read(file.path()).unwrap();
            let fname = file.file_name().to_string_lossy().into_owned();
            files.insert((name.clone(), fname), bytes);
        }
    }
    files
}

#[test]
fn every_released_contract_folder_is_byte_for_byte_as_released() {
    let wit = Path::new(env!("CARGO_MANIFEST_DIR")).join("../wit");
    let files = on_disk(&wit);
    let mut faults = Vec::new();
    for (key, bytes) in &files {
        let want = RELEASED
            .iter()
            .find(|(folder, file, _)| (*folder, *file) == (key.0.as_str(), key.1.as_str()));
        match want {
            None => faults.push(format!(
                "wit/{}/{} has no hash: a new version's folder is released with its hashes in this test",
                key.0, key.1
            )),
            Some((_, _, hash)) if super::sha256(bytes) != *hash => faults.push(format!(
                "wit/{}/{} changed (sha256 {}, released as {hash}): a released contract never changes; put the change in a new version's folder",
                key.0,
                key.1,
                super::sha256(bytes)
            )),
            Some(_) => {}
        }
    }
    for (folder, file, _) in RELEASED {
        if !files.contains_key(&(folder.to_string(), file.to_string())) {
            faults.push(format!("wit/{folder}/{file} is gone: released files stay"));
        }
    }
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}

#[test]
fn each_folder_declares_the_package_version_its_name_says() {
    let wit = Path::new(env!("CARGO_MANIFEST_DIR")).join("../wit");
    for ((folder, _), bytes) in on_disk(&wit) {
        let version = folder
            .strip_prefix("nightjar-plugin@")
            .unwrap_or_else(|| panic!("wit/{folder}: folders are named nightjar-plugin@VERSION"));
        let text = String::from_utf8(bytes).unwrap();
        let line = format!("package nightjar:plugin@{version};");
        assert!(
            text.lines().any(|l| l.trim() == line),
            "wit/{folder} lacks `{line}`"
        );
    }
}

#[test]
fn the_host_loads_every_released_version() {
    let released: std::collections::BTreeSet<&str> = RELEASED
        .iter()
        .filter_map(|(folder, _, _)| folder.strip_prefix("nightjar-plugin@"))
        .collect();
    let loaded: std::collections::BTreeSet<&str> = super::version::ApiVersion::ALL
        .iter()
        .map(|v| v.as_str())
        .collect();
    assert_eq!(released, loaded);
}
