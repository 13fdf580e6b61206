//! A real podman container: an image imported from a rootfs of Debian's
//! busybox-static (no network), run through the daemon with the podman
//! settings this machine needs (found by trying, and written into the
//! daemon's `[containers]` config as a lab would).

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;

use super::{refused, stdout_of};
use crate::harness::{Nj, alive};

/// The image, and the `[containers]` table that runs it here; `Err`: why
/// podman cannot run a container on this machine.
static SETUP: Mutex<Option<Result<(String, String), String>>> = Mutex::new(None);

const IMAGE: &str = "localhost/njtest-busybox:1";

fn podman(global: &[String], args: &[&str]) -> Result<String, String> {
    let out = Command::new("podman")
        .args(global)
        .args(args)
        .output()
        .map_err(|e| format!("podman: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        Err(format!(
            "`podman {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn nofile() -> String {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap_or("");
    let w: Vec<&str> = line.split_whitespace().collect();
    match (w.get(3), w.get(4)) {
        (Some(s), Some(h)) => format!("--ulimit=nofile={s}:{h}"),
        _ => "--ulimit=nofile=1024:1024".into(),
    }
}

fn setup() -> Result<(String, String), String> {
    let mut g = SETUP.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(r) = g.as_ref() {
        return r.clone();
    }
    let r = find_setup();
    *g = Some(r.clone());
    r
}

fn find_setup() -> Result<(String, String), String> {
    if Command::new("podman").arg("--version").output().is_err() {
        return Err("podman is not installed (Debian: apt-get install podman)".into());
    }
    let busybox = Path::new("/bin/busybox");
    if !busybox.exists() {
        return Err("/bin/busybox missing (Debian: apt-get install busybox-static)".into());
    }
    let words = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    // What a plain host needs, then what a root-in-a-sandbox one does
    // (no systemd, cgroup v1 + v2 hybrid that crun refuses, no CAP_SYS_RESOURCE).
    let candidates: Vec<(Vec<String>, Vec<String>)> = vec![
        (vec![], words(&["--network=none"])),
        (
            words(&["--cgroup-manager=cgroupfs", "--events-backend=file"]),
            words(&["--network=none"]),
        ),
        (
            words(&[
                "--runtime=runc",
                "--cgroup-manager=cgroupfs",
                "--events-backend=file",
            ]),
            vec![
                "--network=none".into(),
                nofile(),
                "--ulimit=nproc=4096:4096".into(),
            ],
        ),
    ];
    let root = tempfile::tempdir().map_err(|e| e.to_string())?;
    let r = root.path();
    std::fs::create_dir_all(r.join("bin")).unwrap();
    std::fs::create_dir_all(r.join("tmp")).unwrap();
    std::fs::copy(busybox, r.join("bin/busybox")).map_err(|e| e.to_string())?;
    for a in [
        "sh", "sleep", "echo", "cat", "id", "ls", "test", "pwd", "env",
    ] {
        std::os::unix::fs::symlink("busybox", r.join("bin").join(a)).unwrap();
    }
    std::fs::write(r.join("nightjar-image-marker"), "inside\n").unwrap();
    let tar = root.path().with_extension("tar");
    let made = Command::new("tar")
        .arg("-C")
        .arg(r)
        .arg("-cf")
        .arg(&tar)
        .arg(".")
        .status()
        .map_err(|e| e.to_string())?;
    if !made.success() {
        return Err("tar of the busybox rootfs failed".into());
    }
    let mut last = String::new();
    for (global, run) in candidates {
        let imported = podman(&global, &["import", tar.to_str().unwrap(), IMAGE]);
        if let Err(e) = imported {
            last = e;
            continue;
        }
        let mut args = vec!["run", "--rm"];
        args.extend(run.iter().map(String::as_str));
        args.extend(["--", IMAGE, "/bin/sh", "-c", "cat /nightjar-image-marker"]);
        match podman(&global, &args) {
            Ok(out) if out == "inside" => {
                let list = |v: &[String]| {
                    v.iter()
                        .map(|a| format!("{a:?}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                let _ = std::fs::remove_file(&tar);
                return Ok((
                    global.join(" "),
                    format!(
                        "[containers]\npodman_args = [{}]\npodman_run_args = [{}]\n",
                        list(&global),
                        list(&run)
                    ),
                ));
            }
            Ok(out) => last = format!("the container printed {out:?}"),
            Err(e) => last = e,
        }
    }
    let _ = std::fs::remove_file(&tar);
    Err(format!("podman cannot run a container here: {last}"))
}

/// The image and config, or the test fails saying podman cannot run here
/// (`.ci/run` installs podman, runc and busybox-static).
fn ready() -> (String, String) {
    setup().unwrap_or_else(|why| crate::harness::needs("podman running a container", why))
}

fn global(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

#[test]
fn a_task_runs_inside_a_podman_container_with_workdir_output_and_env() {
    let (g, config) = ready();
    let mut nj = Nj::new(&config);
    nj.start();
    let out = nj.path("out");
    let work = nj.path("work");
    let id = nj.submit(&[
        "--container",
        IMAGE,
        "-e",
        "GREETING=hello from the host",
        "--output",
        out.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        "cat /nightjar-image-marker; test -e /etc/os-release || echo no-os-release; pwd; \
         echo \"$GREETING\" > \"$NIGHTJAR_OUTPUT_PATH/greeting.txt\"; echo \"cuda=[$CUDA_VISIBLE_DEVICES]\"",
    ]);
    assert_eq!(nj.wait(id), 0, "{}", nj.daemon_log());
    assert_eq!(
        stdout_of(&nj, id),
        format!("inside\nno-os-release\n{}\ncuda=[]\n", work.display())
    );
    let written = out.join("greeting.txt");
    assert_eq!(
        std::fs::read_to_string(&written).unwrap(),
        "hello from the host\n"
    );
    // Owned by the task's owner (the submitter), not by some container uid.
    // SAFETY: getuid has no preconditions.
    let me = unsafe { libc::getuid() };
    assert_eq!(std::fs::metadata(&written).unwrap().uid(), me);
    let show = nj.show(id);
    let m = &show["manifests"]["runs"][0]["environment"];
    assert_eq!(m["runtime"], "podman");
    let id_now = podman(
        &global(&g),
        &["image", "inspect", "--format", "{{.Id}}", IMAGE],
    )
    .unwrap();
    assert_eq!(m["image_id"], id_now.as_str(), "{m}");
    let text = nj.ok(&["show", &id.to_string()]);
    assert!(
        text.contains(&format!("environment container podman {IMAGE}")),
        "{text}"
    );
    let name =
        nightjar::sandbox::container::name(&nj.state, show["runs"][0]["id"].as_i64().unwrap());
    let left = containers_named(&g, &name);
    assert_eq!(left, "", "the container was not removed");
}

/// The containers podman still lists (running or not) under `name`.
fn containers_named(g: &str, name: &str) -> String {
    podman(
        &global(g),
        &[
            "ps",
            "-a",
            "--filter",
            &format!("name=^{name}$"),
            "--format",
            "{{.Names}}",
        ],
    )
    .unwrap()
}

#[test]
fn cancel_stops_a_sleeping_container_and_leaves_none_behind() {
    let (g, config) = ready();
    let mut nj = Nj::new(&config);
    nj.start();
    let id = nj.submit(&["--container", IMAGE, "--", "sleep", "300"]);
    nj.until("the run", || {
        nj.show(id)["runs"][0]["id"].as_i64().is_some()
    });
    let run = nj.show(id)["runs"][0]["id"].as_i64().unwrap();
    let name = nightjar::sandbox::container::name(&nj.state, run);
    let mut pid = 0;
    nj.until_slow("the container's sleep", || {
        pid = podman(
            &global(&g),
            &["inspect", "--format", "{{.State.Pid}}", &name],
        )
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
        pid > 0
    });
    assert!(alive(pid));
    nj.ok(&["cancel", &id.to_string()]);
    assert_eq!(nj.wait(id), 130, "{}", nj.daemon_log());
    assert_eq!(nj.show(id)["runs"][0]["class"], "cancelled");
    assert!(
        !alive(pid),
        "the container's process {pid} survived the cancel"
    );
    let left = containers_named(&g, &name);
    assert_eq!(left, "", "container {name} left behind");
}

#[test]
fn hostile_images_and_mounts_are_refused_at_submit() {
    let (_, config) = ready();
    let mut nj = Nj::new(&config);
    nj.start();
    refused(
        &nj,
        &["--container", "--privileged", "--", "true"],
        "starts with `-`",
    );
    refused(
        &nj,
        &["--container", "localhost/njtest-absent:none", "--", "true"],
        "not present in podman's local images",
    );
    let work = nj.path("work");
    let f = work.join("root.toml");
    std::fs::write(&f, format!("command = \"true\"\n[environment]\ncontainer = {{ image = \"{IMAGE}\", mounts = [\"/\"] }}\n")).unwrap();
    refused(&nj, &[f.to_str().unwrap()], "whole file system");
    let f = work.join("state.toml");
    std::fs::write(&f, format!("command = \"true\"\n[environment]\ncontainer = {{ image = \"{IMAGE}\", mounts = [\"{}:/s:ro\"] }}\n", nj.state.display())).unwrap();
    refused(&nj, &[f.to_str().unwrap()], "state folder");
    let f = work.join("flag.toml");
    std::fs::write(
        &f,
        "command = \"true\"\n[environment]\ncontainer = { image = \"-v/:/host\" }\n",
    )
    .unwrap();
    refused(&nj, &[f.to_str().unwrap()], "starts with `-`");
    if Command::new("apptainer").arg("--version").output().is_err() {
        refused(
            &nj,
            &[
                "--container",
                "/x.sif",
                "--container-runtime",
                "apptainer",
                "--",
                "true",
            ],
            "no such image file",
        );
    }
    assert_eq!(
        nj.json(&["ls"]).as_array().unwrap().len(),
        0,
        "nothing queued"
    );
}
