use super::*;

fn sdk_in(dir: &Path) -> PathBuf {
    let sdk = dir.join("sdk");
    std::fs::create_dir_all(&sdk).unwrap();
    std::fs::write(
        sdk.join("Cargo.toml"),
        "[package]\nname = \"nightjar-sdk\"\nversion = \"0.2.0\"\n",
    )
    .unwrap();
    sdk
}

fn tmp() -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "nightjar-plugin-new-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn names_that_are_not_crate_names_are_refused_saying_why() {
    for ok in ["night-hold", "a", "x_1", "Weekends2", &"a".repeat(64)] {
        assert!(check_name(ok).is_ok(), "{ok}");
    }
    let cases: &[(&str, &str)] = &[
        ("", "empty"),
        ("1st", "start with a letter"),
        ("-x", "start with a letter"),
        ("my plugin", "' '"),
        ("../escape", "'.'"),
        ("a/b", "'/'"),
        ("caf\u{e9}", "'\u{e9}'"),
        ("fn", "reserved"),
        ("std", "reserved"),
        ("nightjar-sdk", "reserved"),
        ("serde", "reserved"),
        ("CON", "reserved"),
    ];
    for (bad, why) in cases {
        let e = check_name(bad).unwrap_err().to_string();
        assert!(e.contains(why), "{bad:?}: {e}");
    }
    let long = "a".repeat(65);
    assert!(
        check_name(&long)
            .unwrap_err()
            .to_string()
            .contains("at most 64")
    );
    let huge = "a".repeat(1 << 20);
    let e = check_name(&huge).unwrap_err().to_string();
    assert!(
        e.len() < 200,
        "the error does not echo a megabyte: {}",
        e.len()
    );
}

#[test]
fn type_names_are_camel_case_and_never_an_imported_name() {
    assert_eq!(type_name("night-hold", Kind::Policy), "NightHold");
    assert_eq!(type_name("a__b", Kind::Validator), "AB");
    assert_eq!(type_name("policy", Kind::Policy), "PolicyPolicy");
    assert_eq!(type_name("snapshot", Kind::Policy), "SnapshotPolicy");
    assert_eq!(type_name("event", Kind::Notifier), "EventNotifier");
    assert_eq!(type_name("run", Kind::Validator), "RunValidator");
    assert_eq!(type_name("config", Kind::Validator), "ConfigValidator");
    assert_eq!(type_name("p", Kind::Policy), "PPolicy");
}

#[test]
fn the_sdk_is_the_flag_then_the_package_copy_then_the_source_tree() {
    let d = tmp();
    let given = sdk_in(&d.join("given"));
    let source = sdk_in(&d.join("checkout"));
    // A package layout: <prefix>/bin/nightjar and <prefix>/share/nightjar/sdk.
    let prefix = d.join("usr");
    std::fs::create_dir_all(prefix.join("bin")).unwrap();
    let packaged = sdk_in(&prefix.join("share/nightjar"));
    let exe = prefix.join("bin/nightjar");

    let s = find_sdk(Some(&given), Some(&exe), &source).unwrap();
    assert_eq!(s.path, given.canonicalize().unwrap());
    let s = find_sdk(None, Some(&exe), &source).unwrap();
    assert_eq!(s.path, packaged.canonicalize().unwrap());
    assert_eq!(s.from, "installed with nightjar");
    std::fs::remove_dir_all(&packaged).unwrap();
    let s = find_sdk(None, Some(&exe), &source).unwrap();
    assert_eq!(s.path, source.canonicalize().unwrap());
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn no_sdk_anywhere_says_where_it_looked_and_what_to_do() {
    let d = tmp();
    let exe = d.join("bin/nightjar");
    let e = find_sdk(None, Some(&exe), &d.join("gone/sdk"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("share/nightjar/sdk") && e.contains("gone/sdk"),
        "{e}"
    );
    assert!(e.contains("--sdk") && e.contains("NIGHTJAR_SDK"), "{e}");
    // A folder that is not the SDK (another crate) is refused by name.
    let other = d.join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("Cargo.toml"), "[package]\nname = \"serde\"\n").unwrap();
    let e = find_sdk(Some(&other), None, &d).unwrap_err().to_string();
    assert!(
        e.contains("is not the nightjar SDK") && e.contains("other"),
        "{e}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn an_sdk_path_with_quotes_is_written_as_valid_toml() {
    let sdk = Sdk {
        path: PathBuf::from("/opt/a \"b\"\\c/sdk"),
        from: "test".into(),
    };
    let files = files("hold", Kind::Policy, &sdk).unwrap();
    let cargo = &files.iter().find(|(p, _)| *p == "Cargo.toml").unwrap().1;
    let table: toml::Table = toml::from_str(cargo).unwrap();
    assert_eq!(
        table["dependencies"]["nightjar-sdk"]["path"].as_str(),
        Some("/opt/a \"b\"\\c/sdk")
    );
    assert_eq!(table["package"]["name"].as_str(), Some("hold"));
    assert!(table.contains_key("workspace"), "a workspace of its own");
}

#[test]
fn every_kind_fills_every_placeholder() {
    let sdk = Sdk {
        path: PathBuf::from("/sdk"),
        from: "test".into(),
    };
    for kind in [Kind::Policy, Kind::Notifier, Kind::Validator] {
        for (path, text) in files("night-hold", kind, &sdk).unwrap() {
            assert!(!text.contains("{{"), "{kind:?} {path}: {text}");
        }
    }
}

#[test]
fn an_existing_folder_file_or_symlink_is_never_written_into() {
    let d = tmp();
    let files = vec![("src/lib.rs", "// new".to_string())];
    let existing = d.join("existing");
    std::fs::create_dir_all(existing.join("src")).unwrap();
    std::fs::write(existing.join("src/lib.rs"), "// mine").unwrap();
    let e = write(&existing, &files).unwrap_err().to_string();
    assert!(e.contains("already exists"), "{e}");
    assert_eq!(
        std::fs::read_to_string(existing.join("src/lib.rs")).unwrap(),
        "// mine"
    );
    let file = d.join("file");
    std::fs::write(&file, "x").unwrap();
    assert!(write(&file, &files).is_err());
    let link = d.join("link");
    std::os::unix::fs::symlink(d.join("nowhere"), &link).unwrap();
    let e = write(&link, &files).unwrap_err().to_string();
    assert!(e.contains("already exists"), "{e}");
    assert!(!d.join("nowhere").exists(), "the symlink was not followed");
    let fresh = d.join("fresh");
    write(&fresh, &files).unwrap();
    assert_eq!(
        std::fs::read_to_string(fresh.join("src/lib.rs")).unwrap(),
        "// new"
    );
    std::fs::remove_dir_all(&d).unwrap();
}
