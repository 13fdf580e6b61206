//! Faults in the plugin config stop the daemon at start with the file, line
//! and key, before it serves anything; nothing is changed by the attempt.

use std::process::Command;

use crate::harness::{BIN, Nj};

const HOSTILE: &str = env!("NIGHTJAR_TEST_PLUGIN_HOSTILE");

/// Runs `nightjar daemon` on `nj`'s config and returns its failure text.
pub(crate) fn start_fails(nj: &Nj) -> String {
    let out = Command::new(BIN)
        .args(["--config", nj.config.to_str().unwrap(), "daemon"])
        .env(
            "NIGHTJAR_PLUGIN_CACHE",
            concat!(env!("CARGO_TARGET_TMPDIR"), "/plugin-cache"),
        )
        .output()
        .unwrap();
    assert!(!out.status.success(), "the daemon must not start");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn an_unknown_chain_name_is_a_start_up_error_with_its_line() {
    let nj = Nj::new("[plugins]\nchain = [\"priority\", \"no-such-policy\"]\n");
    let err = start_fails(&nj);
    assert!(err.contains("`no-such-policy`"), "{err}");
    assert!(err.contains("plugins.chain"), "{err}");
    assert!(
        err.contains(&format!("{}, line 3", nj.config.display())),
        "names the file and line: {err}"
    );
    assert!(
        !nj.state.join("nightjar.sock").exists(),
        "no socket was opened"
    );
}

#[test]
fn a_config_the_plugin_rejects_is_a_start_up_error_naming_the_key() {
    let nj = Nj::new(
        "[plugins]\nchain = [\"priority\"]\n[plugin.priority.config]\naging_per_hour = \"fast\"\n",
    );
    let err = start_fails(&nj);
    assert!(err.contains("[plugin.priority.config]"), "{err}");
    assert!(err.contains("aging_per_hour"), "{err}");
    assert!(err.contains("line 5"), "names the line: {err}");
}

#[test]
fn the_hostile_plugins_rejected_config_stops_the_start() {
    let nj = Nj::new(
        "[plugins]\nchain = [\"hostile\"]\n[plugin.hostile.config]\nmode = \"reject-config\"\n",
    );
    let dir = nj.state.join("plugins");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(HOSTILE, dir.join("hostile.wasm")).unwrap();
    let err = start_fails(&nj);
    assert!(
        err.contains("key `mode`") && err.contains("this plugin refuses every config"),
        "{err}"
    );
}
