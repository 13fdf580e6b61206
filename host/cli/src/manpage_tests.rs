use super::*;

/// Every verb, sub-verb and flag a person can see, with its path.
fn walk(cmd: &Command, path: &str, out: &mut Vec<String>) {
    if cmd.is_hide_set() {
        return;
    }
    if cmd
        .get_about()
        .is_none_or(|a| a.to_string().trim().len() < 10)
    {
        out.push(format!("{path}: no help text (about)"));
    }
    for a in cmd.get_arguments() {
        let id = a.get_id().as_str();
        if a.is_hide_set() || id == "help" || id == "version" {
            continue;
        }
        if a.get_help().is_none_or(|h| h.to_string().trim().is_empty()) {
            out.push(format!("{path} {id}: no help text"));
        }
    }
    for s in cmd.get_subcommands() {
        if s.get_name() != "help" {
            walk(s, &format!("{path} {}", s.get_name()), out);
        }
    }
}

#[test]
fn every_verb_and_flag_has_help_text_for_the_man_pages() {
    let mut missing = Vec::new();
    walk(&Cli::command(), "nightjar", &mut missing);
    walk(&daemon_command(), "nightjard", &mut missing);
    assert!(missing.is_empty(), "{missing:#?}");
}

#[test]
fn the_daemon_page_has_the_daemon_verbs_and_the_shared_flags_only() {
    let cmd = daemon_command();
    cmd.clone().debug_assert();
    let verbs: Vec<_> = cmd.get_subcommands().map(|s| s.get_name()).collect();
    assert_eq!(verbs, ["daemon", "plugins"]);
    let plugins: Vec<_> = cmd
        .find_subcommand("plugins")
        .unwrap()
        .get_subcommands()
        .map(|s| s.get_name())
        .collect();
    assert_eq!(plugins, ["check", "test"]);
    // What systemd runs parses as the same flags the client takes.
    let m = cmd
        .clone()
        .try_get_matches_from([
            "nightjard",
            "--config",
            "/etc/nightjar/nightjar.toml",
            "daemon",
        ])
        .unwrap();
    assert_eq!(
        m.get_one::<std::path::PathBuf>("config").unwrap(),
        std::path::Path::new("/etc/nightjar/nightjar.toml")
    );
    assert!(cmd.try_get_matches_from(["nightjard", "submit"]).is_err());
}
