//! Plugin compiles run in a child process of the daemon's own binary,
//! under `[plugins] compile_memory`, off the start path.

use crate::harness::*;
use std::time::{Duration, Instant};

const HOSTILE: &str = env!("NIGHTJAR_TEST_PLUGIN_HOSTILE");

/// A valid component whose core module has `funcs` functions of `ops`
/// arithmetic steps each: big functions are slow and memory-hungry to
/// compile (2 × 100,000 steps: 2 MB, seconds and hundreds of MB).
/// Each is unique (an export named by the time), so no compile cache holds it.
pub fn big_component(funcs: usize, ops: usize) -> Vec<u8> {
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let mut wat = format!("(component (core module (func (export \"n{nonce}\"))\n");
    let body = "local.get 0 i32.const 7 i32.mul i32.const 3 i32.add local.set 0\n".repeat(ops);
    for i in 0..funcs {
        wat.push_str(&format!(
            "(func (export \"f{i}\") (param i32) (result i32)\n{body}local.get 0)\n"
        ));
    }
    wat.push_str("))");
    wat::parse_str(&wat).expect("the generated component parses")
}

/// The daemon's compile children (`nightjard compile`) alive now.
fn compile_children(daemon: u32) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let parent = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok());
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            parent == Some(daemon) && cmd.ends_with(b"\0compile\0")
        })
        .collect()
}

#[test]
fn a_compile_past_compile_memory_is_refused_naming_the_key_and_the_daemon_goes_on() {
    let mut nj = Nj::new("[plugins]\nchain = [\"big\"]\ncompile_memory = \"64MiB\"\n");
    let dir = nj.state.join("plugins");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("big.wasm"), big_component(4, 30_000)).unwrap();
    nj.start();
    let log = nj.daemon_log();
    assert!(
        log.contains("cannot be compiled: compiling it needed more memory than [plugins] compile_memory (64.0M)"),
        "{log}"
    );
    let ls = nj.ok(&["plugins", "ls"]);
    assert!(ls.contains("compile_memory"), "{ls}");
    // The daemon itself is whole: a policy that failed is open by default.
    let id = nj.submit(&["--", "true"]);
    assert_eq!(nj.wait(id), 0);
}

#[test]
fn a_compile_memory_below_64_mib_is_refused_at_start_naming_the_key() {
    let mut nj = Nj::new("[plugins]\ncompile_memory = \"1MiB\"\n");
    let (code, log) = nj.start_refused();
    assert_ne!(code, 0);
    assert!(log.contains("plugins.compile_memory"), "{log}");
}

#[test]
fn starts_go_on_while_a_big_component_compiles_in_a_process_of_its_own() {
    let mut nj = Nj::new("[plugins]\nchain = [\"hostile\"]\n");
    let dir = nj.state.join("plugins");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(HOSTILE, dir.join("hostile.wasm")).unwrap();
    nj.start();
    let daemon = nj.daemon_pid().expect("the daemon's pid");
    let first = nj.submit(&["--", "true"]);
    assert_eq!(nj.wait(first), 0);
    // The policy's file is replaced by a component that takes seconds to compile.
    std::fs::write(dir.join("hostile.wasm.new"), big_component(2, 100_000)).unwrap();
    std::fs::rename(dir.join("hostile.wasm.new"), dir.join("hostile.wasm")).unwrap();
    let reload = std::process::Command::new(BIN)
        .args(["--config", nj.config.to_str().unwrap(), "plugins", "reload"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while compile_children(daemon).is_empty() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "no compile child of the daemon appeared"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // While it compiles, tasks are taken and run.
    let mut ran = 0;
    for _ in 0..3 {
        let id = nj.submit(&["--", "true"]);
        assert_eq!(nj.wait(id), 0);
        ran += 1;
    }
    let still = !compile_children(daemon).is_empty();
    let out = reload.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        still,
        "the compile ended before {ran} tasks ran; make the component bigger ({said})"
    );
    // It is no policy: the reload is refused and the old chain goes on.
    assert!(said.contains("hostile"), "{said}");
    let after = nj.submit(&["--", "true"]);
    assert_eq!(nj.wait(after), 0);
    assert!(compile_children(daemon).is_empty(), "the child is gone");
}
