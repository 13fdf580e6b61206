//! Manifests against hostile surroundings: a `git` that hangs, inputs that
//! are a FIFO, /dev/zero or a symlink loop, thousands of inputs, a Python
//! environment, and GPUs through the stand-in NVML.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness::Nj;
use crate::manifest::{let_settle, settled};

fn script(path: &Path, body: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, body).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Processes whose command line is exactly `cmdline` (NUL-separated).
fn processes_running(cmdline: &[u8]) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| std::fs::read(e.path().join("cmdline")).is_ok_and(|c| c == cmdline))
        .count()
}

#[test]
fn a_git_that_hangs_costs_the_submit_and_the_start_no_more_than_git_timeout() {
    let mut nj = Nj::new("[manifest]\ngit_timeout = \"1s\"\n");
    let bin = nj.path("fakebin");
    // A git that never answers, with a child holding its output open.
    script(&bin.join("git"), "#!/bin/sh\nsleep 317 &\nsleep 317\n");
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    nj.env.push(("PATH".into(), path));
    let repo = nj.path("repo");
    std::fs::create_dir(repo.join(".git")).unwrap();
    nj.start();
    let t0 = Instant::now();
    let id = nj.submit(&["--workdir", repo.to_str().unwrap(), "--", "true"]);
    // Bounded by git_timeout, not by the git (317 s): 30 s tells the two
    // apart on a loaded machine too.
    assert!(
        t0.elapsed() < Duration::from_secs(30),
        "submit took {:?}",
        t0.elapsed()
    );
    assert_eq!(nj.wait(id), 0);
    let d = nj.show(id);
    for m in [&d["manifests"]["submit"], &d["manifests"]["runs"][0]] {
        let note = m["git"]["note"].as_str().unwrap();
        assert!(note.contains("did not answer within 1s"), "{note}");
        assert!(m["capture_ms"].as_u64().unwrap() < 5_000, "{m}");
    }
    // Killed with its whole process group.
    nj.until("the fake git's children to be gone", || {
        processes_running(b"sleep\x00317\x00") == 0
    });
}

#[test]
fn fifos_devices_and_symlink_loops_are_recorded_never_read() {
    let mut nj = Nj::new("");
    let work = nj.path("w");
    let fifo = work.join("pipe");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo on a path this test owns.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    settled(&work.join("later-a-loop"), b"data\n");
    std::fs::write(
        work.join("t.toml"),
        "command = \"true\"\ninputs = [\"pipe\", \"/dev/zero\", \"later-a-loop\"]\nhold = true\n",
    )
    .unwrap();
    nj.start();
    let t0 = Instant::now();
    let id = nj.submit(&[work.join("t.toml").to_str().unwrap()]);
    // Not blocked on the FIFO (that would be for ever).
    assert!(t0.elapsed() < Duration::from_secs(30), "{:?}", t0.elapsed());
    // Before the start the file becomes a symlink loop.
    std::fs::remove_file(work.join("later-a-loop")).unwrap();
    std::os::unix::fs::symlink(work.join("loop-b"), work.join("later-a-loop")).unwrap();
    std::os::unix::fs::symlink(work.join("later-a-loop"), work.join("loop-b")).unwrap();
    nj.ok(&["release", &id.to_string()]);
    assert_eq!(nj.wait(id), 0);
    let d = nj.show(id);
    let kinds = |m: &Value| -> Vec<String> {
        m["inputs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["kind"].as_str().unwrap().to_string())
            .collect()
    };
    let sub = &d["manifests"]["submit"];
    assert_eq!(kinds(sub), ["fifo", "char-device", "file"]);
    assert_eq!(sub["inputs"][0]["sha256"], Value::Null);
    assert!(
        sub["inputs"][1]["note"]
            .as_str()
            .unwrap()
            .contains("not read")
    );
    let run = &d["manifests"]["runs"][0];
    assert_eq!(kinds(run), ["fifo", "char-device", "unreadable"]);
    assert!(
        run["inputs"][2]["note"]
            .as_str()
            .unwrap()
            .contains("symlink loop"),
        "{run}"
    );
    let c = &run["inputs_changed"][0];
    assert_eq!(c["what"], "was a file, now unreadable");
}

#[test]
fn thousands_of_inputs_are_stat_only_at_start() {
    let mut nj = Nj::new("");
    let work = nj.path("w");
    let names: Vec<String> = (0..3000).map(|i| format!("d/in-{i:04}.csv")).collect();
    for (i, n) in names.iter().enumerate() {
        settled(&work.join(n), format!("{i}\n").as_bytes());
    }
    let list: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    std::fs::write(
        work.join("t.toml"),
        format!("command = \"true\"\ninputs = [{}]\n", list.join(", ")),
    )
    .unwrap();
    let_settle();
    nj.start();
    let id = nj.submit(&[work.join("t.toml").to_str().unwrap()]);
    assert_eq!(nj.wait(id), 0);
    let d = nj.show(id);
    let sub = &d["manifests"]["submit"]["stats"];
    assert_eq!(sub["hashed"], 3000);
    let run = &d["manifests"]["runs"][0];
    assert_eq!(run["inputs"].as_array().unwrap().len(), 3000);
    assert_eq!(
        (&run["stats"]["hashed"], &run["stats"]["cached"]),
        (&Value::from(0), &Value::from(3000))
    );
    // The same files for another task: one cache lookup, no read.
    let id2 = nj.submit(&[work.join("t.toml").to_str().unwrap()]);
    let again = &nj.show(id2)["manifests"]["submit"]["stats"];
    assert_eq!(
        (&again["hashed"], &again["cached"]),
        (&Value::from(0), &Value::from(3000))
    );
}

#[test]
fn the_python_environment_of_the_tasks_env_is_listed() {
    let mut nj = Nj::new("");
    let venv = nj.path("venv");
    script(
        &venv.join("bin/python"),
        "#!/bin/sh\n[ \"$1 $2 $3\" = \"-m pip freeze\" ] || exit 9\nprintf 'numpy==1.26.4\\ntorch==2.3.0\\n'\n",
    );
    std::fs::create_dir_all(venv.join("lib/python3.11/site-packages")).unwrap();
    let conda = nj.path("conda");
    std::fs::create_dir_all(conda.join("conda-meta")).unwrap();
    std::fs::write(
        conda.join("conda-meta/numpy-1.26.4-py311h64a7726_0.json"),
        "{}",
    )
    .unwrap();
    nj.start();
    let v = format!("VIRTUAL_ENV={}", venv.display());
    let c = format!("CONDA_PREFIX={}", conda.display());
    let in_venv = nj.submit(&["-e", &v, "--", "true"]);
    let in_conda = nj.submit(&["-e", &c, "--", "true"]);
    assert_eq!(nj.wait(in_venv), 0);
    assert_eq!(nj.wait(in_conda), 0);
    let p = &nj.show(in_venv)["manifests"]["runs"][0]["python"];
    assert_eq!(p["kind"], "venv");
    assert_eq!(
        p["packages"],
        serde_json::json!(["numpy==1.26.4", "torch==2.3.0"])
    );
    let p = &nj.show(in_conda)["manifests"]["runs"][0]["python"];
    assert_eq!(p["source"], "conda-meta");
    assert_eq!(
        p["packages"],
        serde_json::json!(["numpy=1.26.4=py311h64a7726_0"])
    );
}

#[test]
fn a_gpu_runs_manifest_names_the_model_driver_and_cuda_from_nvml() {
    use crate::gpus::{GpuWorld, two_gpus};
    let w = GpuWorld::new("", &two_gpus("", ""));
    let id = w.nj.submit(&["--gpus", "1", "--", "true"]);
    assert_eq!(w.nj.wait(id), 0);
    let g = &w.nj.show(id)["manifests"]["runs"][0]["gpus"];
    assert_eq!(g["driver"], "standin-1.0");
    assert_eq!(g["cuda"], "12.4");
    let dev = &g["devices"][0];
    assert!(dev["name"].as_str().unwrap().starts_with("NVIDIA "), "{g}");
    assert!(dev["uuid"].as_str().unwrap().starts_with("GPU-"), "{g}");
}
