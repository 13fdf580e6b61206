use super::*;

#[test]
fn unknown_key_is_named_with_its_line() {
    let err = Config::parse("slots = 2\nslotz = 3\n", Path::new("/etc/nj.toml"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("/etc/nj.toml"), "{err}");
    assert!(err.contains("line 2"), "{err}");
    assert!(err.contains("slotz"), "{err}");
}

#[test]
fn bad_timezone_is_rejected_with_its_value() {
    let err = format!(
        "{:#}",
        Config::parse("timezone = \"Mars/Olympus\"\n", Path::new("c.toml")).unwrap_err()
    );
    assert!(err.contains("Mars/Olympus"), "{err}");
}

#[test]
fn state_dir_in_file_moves_the_socket() {
    let cfg = Config::parse("state_dir = \"/srv/nj\"\n", Path::new("c.toml")).unwrap();
    assert_eq!(cfg.socket, PathBuf::from("/srv/nj/nightjar.sock"));
}

#[test]
fn relative_paths_in_the_file_start_at_its_folder_as_the_client_reads_them() {
    let text =
        "state_dir = \"state\"\n[plugins]\ndir = \"policies\"\n[gpu]\nsim_script = \"sim.toml\"\n";
    let file = Path::new("/srv/lab/nightjar.toml");
    let cfg = Config::parse(text, file).unwrap();
    assert_eq!(cfg.state_dir, Path::new("/srv/lab/state"));
    assert_eq!(cfg.plugins.dir, Path::new("/srv/lab/policies"));
    assert_eq!(cfg.gpu.sim_script, Path::new("/srv/lab/sim.toml"));
    // The client finds the same socket from any working directory.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("nightjar.toml");
    std::fs::write(&file, text).unwrap();
    let cfg = Config::load(Some(&file), None).unwrap();
    assert_eq!(cfg.socket, dir.path().join("state/nightjar.sock"));
    assert_eq!(
        nightjar_core::paths::socket_of(Some(&file), None).unwrap(),
        cfg.socket
    );
    // Defaults (empty) stay defaults.
    let cfg = Config::parse("", file.as_path()).unwrap();
    assert!(cfg.plugins.dir.as_os_str().is_empty());
}

#[test]
fn the_example_config_holds_the_embedded_defaults() {
    let text = include_str!("../../../examples/nightjar.toml");
    let cfg = Config::parse(text, Path::new("examples/nightjar.toml")).unwrap();
    // The machine-derived keys are commented out in the file; the rest must
    // be exactly the defaults.
    let defaults = Config::default();
    let as_toml = |c: &Config| {
        let mut t: toml::Table = toml::from_str(&toml::to_string(c).unwrap()).unwrap();
        for k in ["state_dir", "socket", "timezone", "slots"] {
            t.remove(k);
        }
        t
    };
    assert_eq!(as_toml(&cfg), as_toml(&defaults));
    // That every key is in the file, in its own table, is checked by
    // `docs_tests::the_config_reference_has_every_key_of_the_configuration_in_its_own_table`.
}

#[test]
fn the_lab_example_config_is_valid_and_runs_the_four_policies() {
    let text = include_str!("../../../examples/lab.toml");
    let cfg = Config::parse(text, Path::new("examples/lab.toml")).unwrap();
    assert_eq!(
        cfg.plugins.chain,
        vec!["priority", "offpeak-tariff", "fair-share", "thermal"]
    );
    let tariff = cfg.tariff();
    assert_eq!(
        (tariff.currency.as_str(), tariff.windows.len()),
        ("CNY", 2),
        "the lab's tariff is the host's, which offpeak-tariff reads"
    );
}

#[test]
fn gpu_backend_is_validated() {
    let err = format!(
        "{:#}",
        Config::parse("[gpu]\nbackend = \"cuda\"\n", Path::new("c.toml")).unwrap_err()
    );
    assert!(
        err.contains("gpu.backend") && err.contains("sim:2xA100-80GB"),
        "{err}"
    );
    let ok = Config::parse(
        "[gpu]\nbackend = \"sim:2xA100-80GB\"\nshare = true\n",
        Path::new("c.toml"),
    )
    .unwrap();
    assert!(ok.gpu.share);
}

#[test]
fn durations_and_sizes_parse() {
    let cfg = Config::parse(
        "[sandbox]\ngrace = \"5s\"\nlog_cap = \"1 MiB\"\n",
        Path::new("c.toml"),
    )
    .unwrap();
    assert_eq!(cfg.sandbox.grace, Duration::from_secs(5));
    assert_eq!(cfg.sandbox.log_cap, ByteSize::mib(1));
}

#[test]
fn a_notifier_allow_list_entry_that_never_matches_is_refused_naming_the_key() {
    for bad in ["https://hooks.example.com/x", "*.example.com", "[::1:8080"] {
        let text = format!("[notifier.ops]\nplugin = \"webhook\"\nallow = [\"{bad}\"]\n");
        let err = format!(
            "{:#}",
            Config::parse(&text, Path::new("c.toml")).unwrap_err()
        );
        assert!(
            err.contains("[notifier.ops]") && err.contains("`allow`") && err.contains(":port"),
            "{bad}: {err}"
        );
    }
    let ok =
        "[notifier.ops]\nplugin = \"webhook\"\nallow = [\"[::1]:8080\", \"Hooks.example.com\"]\n";
    assert!(Config::parse(ok, Path::new("c.toml")).is_ok());
}

#[test]
fn disk_low_and_stop_flush_parse_and_zero_turns_the_disk_check_off() {
    let defaults = Config::default();
    assert_eq!(defaults.notify.disk_low, ByteSize::gib(5));
    assert_eq!(defaults.notify.stop_flush, Duration::from_secs(5));
    for (text, want) in [
        ("\"0\"", 0),
        ("\"0B\"", 0),
        ("0", 0),
        ("\"20GiB\"", 20 << 30),
        ("\"1EiB\"", 1 << 60),
    ] {
        let cfg = Config::parse(
            &format!("[notify]\ndisk_low = {text}\nstop_flush = \"2s\"\n"),
            Path::new("c.toml"),
        )
        .unwrap_or_else(|e| panic!("{text}: {e:#}"));
        assert_eq!(cfg.notify.disk_low.as_u64(), want, "{text}");
        assert_eq!(cfg.notify.stop_flush, Duration::from_secs(2));
    }
    let err = format!(
        "{:#}",
        Config::parse("[notify]\ndisk_low = \"lots\"\n", Path::new("c.toml")).unwrap_err()
    );
    assert!(err.contains("disk_low"), "{err}");
    let err = format!(
        "{:#}",
        Config::parse("[notify]\nstop_flush = \"1h\"\n", Path::new("c.toml")).unwrap_err()
    );
    assert!(err.contains("notify.stop_flush"), "{err}");
}

#[test]
fn a_digest_schedule_that_never_fires_is_refused_naming_the_key() {
    for never in ["0 0 30 2 *", "0 8 31 4 *"] {
        let err = format!(
            "{:#}",
            Config::parse(
                &format!("[notify]\ndigest = \"{never}\"\n"),
                Path::new("c.toml")
            )
            .unwrap_err()
        );
        assert!(
            err.contains("notify.digest") && err.contains("never"),
            "{never}: {err}"
        );
    }
    for fires in ["daily@08:00", "0 8 29 2 *", "weekly@mon07:30"] {
        let cfg = Config::parse(
            &format!("[notify]\ndigest = \"{fires}\"\n"),
            Path::new("c.toml"),
        );
        assert!(cfg.is_ok(), "{fires}: {:#}", cfg.unwrap_err());
    }
}
