//! GPUs through the real NVML code path (nvml-wrapper loading the stand-in
//! library built by the build script), and simulated GPUs.

use std::path::PathBuf;

use serde_json::Value;

use crate::harness::Nj;

const STANDIN: &str = env!("NIGHTJAR_NVML_STANDIN");
pub(crate) const A100: u64 = 80 << 30;
pub(crate) const GIB: u64 = 1 << 30;

/// A world whose daemon reads its GPUs from the stand-in NVML, driven by a values file.
pub(crate) struct GpuWorld {
    pub(crate) nj: Nj,
    values: PathBuf,
}

impl GpuWorld {
    pub(crate) fn new(extra_gpu_config: &str, values: &str) -> GpuWorld {
        let config = format!(
            "slots = 4\n[sandbox]\ngrace = \"1s\"\n[gpu]\nbackend = \"nvml:{STANDIN}\"\nsample_period = \"100ms\"\nhost_mem_min_free = \"1MiB\"\nforeign_quiet = \"300ms\"\n{extra_gpu_config}"
        );
        let mut nj = Nj::new(&config);
        let values_path = nj.dir.path().join("nvml-values");
        std::fs::write(&values_path, values).unwrap();
        nj.env.push((
            "NVML_STANDIN_FILE".into(),
            values_path.display().to_string(),
        ));
        nj.start();
        GpuWorld {
            nj,
            values: values_path,
        }
    }

    pub(crate) fn set(&self, values: &str) {
        // Write then rename, so the stand-in never reads half a file.
        let tmp = self.values.with_extension("tmp");
        std::fs::write(&tmp, values).unwrap();
        std::fs::rename(&tmp, &self.values).unwrap();
    }

    pub(crate) fn gpus(&self) -> Vec<Value> {
        self.nj.json(&["gpus"]).as_array().unwrap().clone()
    }
}

pub(crate) fn two_gpus(extra0: &str, extra1: &str) -> String {
    format!(
        "count=2\n\
         0.name=NVIDIA A100-SXM4-80GB\n0.uuid=GPU-aaaaaaaa-1111-2222-3333-444444444444\n0.mem_total={A100}\n0.mem_used=0\n0.util=0\n0.util_mem=0\n0.temp=41\n0.power_mw=60000\n0.energy_mj=1000000\n{extra0}\n\
         1.name=NVIDIA GeForce RTX 4090\n1.uuid=GPU-bbbbbbbb-1111-2222-3333-444444444444\n1.mem_total={}\n1.mem_used=0\n1.util=3\n1.temp=38\n1.power_mw=30000\n{extra1}\n",
        24 * GIB
    )
}

#[test]
fn inventory_and_readings_come_through_nvml() {
    let w = GpuWorld::new(
        "",
        &two_gpus("0.util=37\n0.util_mem=12\n0.temp=61\n0.power_mw=250000", ""),
    );
    let g = w.gpus();
    assert_eq!(g.len(), 2);
    assert_eq!(g[0]["name"], "NVIDIA A100-SXM4-80GB");
    assert_eq!(g[0]["uuid"], "GPU-aaaaaaaa-1111-2222-3333-444444444444");
    assert_eq!(g[0]["mem_total"], A100);
    assert_eq!(g[0]["util"], 37);
    assert_eq!(g[0]["temp_c"], 61);
    assert_eq!(g[0]["power_w"], 250.0);
    assert_eq!(g[1]["mem_total"], 24 * GIB);
    assert_eq!(g[1]["healthy"], true);
    let table = w.nj.ok(&["gpus"]);
    assert!(
        table.contains("NVIDIA GeForce RTX 4090") && table.contains("61C"),
        "{table}"
    );
}

#[test]
fn a_run_gets_its_gpu_record_peak_memory_utilisation_and_energy() {
    let w = GpuWorld::new("series_every = \"250ms\"", &two_gpus("", ""));
    let pidfile = w.nj.path("out").join("pid");
    // At least 1.5 s (a series of several points), and until the test has
    // seen the daemon read each of its values and opens the gate: a bare
    // `sleep 1.5` ended before the last values, or before the test read
    // the reservation, on a loaded machine.
    let gate = w.nj.path("out").join("go");
    let script = format!(
        "echo $$ > {}; echo gpus=$CUDA_VISIBLE_DEVICES; sleep 1.5; while [ ! -e {} ]; do sleep 0.05; done",
        pidfile.display(),
        gate.display()
    );
    let t0 = std::time::Instant::now();
    let id = w.nj.submit(&[
        "--gpus",
        "1",
        "--gpu-mem",
        "20GiB",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    w.nj.until("task pid", || {
        crate::harness::read(&pidfile).trim().parse::<u32>().is_ok()
    });
    let pid: u32 = crate::harness::read(&pidfile).trim().parse().unwrap();
    // The task "allocates" 6 GiB and works the GPU; the energy counter runs.
    for (i, (util, mem)) in [(40, 4 * GIB), (90, 6 * GIB), (70, 5 * GIB)]
        .iter()
        .enumerate()
    {
        let energy = 1_000_000 + (i as u64 + 1) * 50_000;
        let temp = 60 + i as u64;
        w.set(&two_gpus(&format!("0.util={util}\n0.mem_used={mem}\n0.procs={pid}:{mem}\n0.energy_mj={energy}\n0.temp={temp}"), ""));
        // The reading `gpus` shows and the run's record are one sample's.
        w.nj.until("the daemon read the values", || {
            let g = &w.gpus()[0];
            g["util"] == *util && g["temp_c"] == temp
        });
    }
    let during = w.gpus();
    assert_eq!(
        during[0]["mem_reserved"],
        20 * GIB,
        "gpu_mem reserved at placement"
    );
    assert_eq!(during[0]["tasks"][0], id);
    std::fs::write(&gate, "").unwrap();
    assert_eq!(w.nj.wait(id), 0);
    // Its series can have been sampled no longer than this.
    let most = t0.elapsed().as_millis() as i64 / 250 + 2;
    assert_eq!(w.nj.ok(&["logs", &id.to_string()]), "gpus=0\n");
    let rec = w.nj.show(id)["gpu_records"][0].clone();
    assert_eq!(rec["gpu"], 0);
    assert_eq!(rec["mem_peak"], 6 * GIB, "{rec}");
    assert_eq!(rec["util_max"], 90, "{rec}");
    assert_eq!(rec["temp_max"], 62, "{rec}");
    assert_eq!(rec["energy_source"], "counter");
    assert!(
        rec["energy_j"].as_f64().unwrap() >= 100.0,
        "energy from the counter: {rec}"
    );
    assert!(
        w.nj.ok(&["show", &id.to_string()])
            .contains("peak mem 6.0 GiB")
    );
    assert_eq!(w.gpus()[0]["mem_reserved"], 0, "reservation given back");
    // The downsampled series is in the database (series_every = 250ms here).
    let db = rusqlite::Connection::open(w.nj.state.join("nightjar.db")).unwrap();
    let points: i64 = db
        .query_row("SELECT COUNT(*) FROM run_gpu_series s JOIN runs r ON r.id = s.run_id WHERE r.task_id = ?1", [id], |r| r.get(0))
        .unwrap();
    assert!(
        (3..=most).contains(&points),
        "one point per 250 ms over at least 1.5 s (at most {most}), got {points}"
    );
}

#[test]
fn a_failing_gpu_is_unhealthy_gets_no_new_work_and_the_daemon_lives() {
    let w = GpuWorld::new("", &two_gpus("", ""));
    w.set(&two_gpus("", "1.fail=1"));
    w.nj.until("GPU 1 unhealthy", || w.gpus()[1]["healthy"] == false);
    let reason = w.gpus()[1]["reason"].as_str().unwrap().to_string();
    assert!(reason.starts_with("unhealthy: NVML GPU 1"), "{reason}");
    // The first holds GPU 0 until the test has looked (a `sleep 1` ended
    // first on a loaded machine, and the second took GPU 0).
    let gate = w.nj.path("out").join("go");
    let hold = format!("while [ ! -e {} ]; do sleep 0.05; done", gate.display());
    let first = w.nj.submit(&["--gpus", "1", "--", "sh", "-c", &hold]);
    let second = w.nj.submit(&["--gpus", "1", "--", "true"]);
    w.nj.until("first running", || {
        w.nj.show(first)["task"]["state"] == "running"
    });
    std::thread::sleep(std::time::Duration::from_millis(400));
    assert_eq!(
        w.nj.show(second)["task"]["state"],
        "queued",
        "nothing placed on the failing GPU"
    );
    std::fs::write(&gate, "").unwrap();
    assert_eq!(w.nj.wait(second), 0, "it runs on GPU 0 once that is free");
    assert_eq!(w.nj.show(second)["runs"][0]["gpus"], "0");
    w.set(&two_gpus("", ""));
    w.nj.until("GPU 1 healthy again", || w.gpus()[1]["healthy"] == true);
}

#[test]
fn foreign_memory_counts_as_taken_and_foreign_load_closes_the_gpu() {
    // PID 1 is not a process nightjar started: its 70 GiB are foreign.
    let w = GpuWorld::new(
        "share = true",
        &two_gpus(
            &format!("0.procs=1:{}\n0.mem_used={}", 70 * GIB, 70 * GIB),
            "1.fail=1",
        ),
    );
    let big =
        w.nj.submit(&["--gpus", "1", "--gpu-mem", "20GiB", "--", "true"]);
    let small =
        w.nj.submit(&["--gpus", "1", "--gpu-mem", "8GiB", "--", "true"]);
    assert_eq!(w.nj.wait(small), 0, "8 GiB fits next to the foreign 70 GiB");
    assert_eq!(w.nj.show(big)["task"]["state"], "queued", "20 GiB does not");
    assert_eq!(w.gpus()[0]["mem_foreign"], 70 * GIB);
    // Foreign load over 15%: closed until it stays quiet.
    w.set(&two_gpus(
        &format!("0.procs=1:{}\n0.util=80", 2 * GIB),
        "1.fail=1",
    ));
    w.nj.until("closed by foreign load", || w.gpus()[0]["open"] == false);
    w.set(&two_gpus(
        &format!("0.procs=1:{}\n0.util=5", 2 * GIB),
        "1.fail=1",
    ));
    assert_eq!(
        w.nj.wait(big),
        0,
        "runs once the foreign load is quiet and its memory is back"
    );
}

#[test]
fn cuda_visible_devices_can_name_gpus_by_uuid() {
    let w = GpuWorld::new("visible_devices = \"uuid\"", &two_gpus("", ""));
    let id = w.nj.submit(&[
        "--gpus",
        "2",
        "--",
        "sh",
        "-c",
        "echo $CUDA_VISIBLE_DEVICES",
    ]);
    assert_eq!(w.nj.wait(id), 0);
    assert_eq!(
        w.nj.ok(&["logs", &id.to_string()]),
        "GPU-aaaaaaaa-1111-2222-3333-444444444444,GPU-bbbbbbbb-1111-2222-3333-444444444444\n"
    );
}

#[test]
fn sharing_fits_tasks_by_memory_and_never_overcommits() {
    let w = GpuWorld::new("share = true", &two_gpus("", "1.fail=1"));
    let a =
        w.nj.submit(&["--gpus", "1", "--gpu-mem", "30GiB", "--", "sleep", "1"]);
    let b =
        w.nj.submit(&["--gpus", "1", "--gpu-mem", "30GiB", "--", "sleep", "1"]);
    let c =
        w.nj.submit(&["--gpus", "1", "--gpu-mem", "30GiB", "--", "true"]);
    w.nj.until("a and b share GPU 0", || w.nj.running() == 2);
    assert_eq!(
        w.nj.show(c)["task"]["state"],
        "queued",
        "a third 30 GiB would overcommit 80 GiB"
    );
    for id in [a, b, c] {
        assert_eq!(w.nj.wait(id), 0);
    }
    let too_big =
        w.nj.cli(&["submit", "--gpus", "1", "--gpu-mem", "100GiB", "--", "true"]);
    assert!(
        String::from_utf8_lossy(&too_big.stderr).contains("largest GPU"),
        "refused at submit"
    );
}

#[test]
fn a_gpu_run_with_no_utilisation_and_no_output_is_marked_stalled() {
    let w = GpuWorld::new("stall_after = \"500ms\"", &two_gpus("", ""));
    let id = w.nj.submit(&["--gpus", "1", "--", "sleep", "3"]);
    w.nj.until("stalled mark", || {
        !w.nj.show(id)["runs"][0]["stalled_at"].is_null()
    });
    assert!(w.nj.ok(&["ls"]).contains("stalled for"));
    let events = w.nj.show(id)["events"].clone();
    assert!(
        events
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["kind"] == "stalled"),
        "{events}"
    );
    w.set(&two_gpus("0.util=50", ""));
    w.nj.until("active again", || {
        w.nj.show(id)["runs"][0]["stalled_at"].is_null()
    });
}

#[test]
fn simulated_gpus_are_scriptable() {
    let mut nj = Nj::new(
        "[sandbox]\ngrace = \"1s\"\n[gpu]\nbackend = \"sim:1xA100-80GB+1xRTX4090-24GB\"\nsample_period = \"100ms\"\nhost_mem_min_free = \"1MiB\"\nsim_script = \"SCRIPT\"\n",
    );
    let script = nj.dir.path().join("sim.toml");
    let cfg = std::fs::read_to_string(&nj.config)
        .unwrap()
        .replace("SCRIPT", script.to_str().unwrap());
    std::fs::write(&nj.config, cfg).unwrap();
    std::fs::write(
        &script,
        "[[gpu]]\nutil = 12\ntemp = 66\n[[gpu]]\nfail = true\n",
    )
    .unwrap();
    nj.start();
    nj.until("sim readings", || nj.json(&["gpus"])[0]["temp_c"] == 66);
    let g = nj.json(&["gpus"]);
    assert_eq!(g[0]["name"], "Simulated A100");
    assert_eq!(g[0]["mem_total"], A100);
    assert_eq!(g[1]["healthy"], false);
}

#[test]
fn a_restarted_daemon_re_adopts_gpu_runs_with_their_reservations() {
    let mut w = GpuWorld::new("share = true", &two_gpus("", "1.fail=1"));
    // It runs until the test has looked: a `sleep 2` ended while a loaded
    // machine restarted the daemon, its reservation with it.
    let gate = w.nj.path("out").join("go");
    let hold = format!("while [ ! -e {} ]; do sleep 0.05; done", gate.display());
    let id =
        w.nj.submit(&["--gpus", "1", "--gpu-mem", "50GiB", "--", "sh", "-c", &hold]);
    w.nj.until("running", || w.nj.show(id)["task"]["state"] == "running");
    w.nj.until("supervisor recorded", || {
        !w.nj.show(id)["runs"][0]["supervisor_pid"].is_null()
    });
    w.nj.kill9();
    w.nj.start();
    let g = w.gpus();
    assert_eq!(
        g[0]["mem_reserved"],
        50 * GIB,
        "reservation restored: {g:?}"
    );
    assert_eq!(g[0]["tasks"][0], id);
    let other =
        w.nj.submit(&["--gpus", "1", "--gpu-mem", "40GiB", "--", "true"]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(
        w.nj.show(other)["task"]["state"],
        "queued",
        "50 + 40 GiB would overcommit"
    );
    std::fs::write(&gate, "").unwrap();
    assert_eq!(w.nj.wait(id), 0);
    assert_eq!(w.nj.wait(other), 0);
}

#[test]
fn the_thermal_policy_closes_a_hot_gpu_until_it_cools_below_the_lower_mark() {
    let w = GpuWorld::new(
        "[plugins]\nchain = [\"thermal\"]\n[plugin.thermal.config]\nclose_above = 85\nreopen_below = 75\n",
        &two_gpus("0.temp=90", "1.fail=1"),
    );
    let id = w.nj.submit(&["--gpus", "1", "--", "true"]);
    std::thread::sleep(std::time::Duration::from_millis(400));
    assert_eq!(
        w.nj.show(id)["task"]["state"],
        "queued",
        "GPU 0 is too hot, GPU 1 is failing"
    );
    w.set(&two_gpus("0.temp=80", "1.fail=1"));
    std::thread::sleep(std::time::Duration::from_millis(400));
    assert_eq!(
        w.nj.show(id)["task"]["state"],
        "queued",
        "80°C is not below 75°C: still closed"
    );
    w.set(&two_gpus("0.temp=70", "1.fail=1"));
    assert_eq!(w.nj.wait(id), 0, "reopened once cool");
}
