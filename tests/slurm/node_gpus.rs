//! A GPU job's node sampled through NVML (`nightjard gpu-sample`, started
//! by the job script beside the supervisor): the run gets its GPU record,
//! series and counter energy as a local run does. NVML here is the stand-in
//! library, copied into the test's folder with its values file beside it
//! (a job's environment is SLURM's, so it finds the values there); the
//! task itself writes its pid and the GPU's later counters into that file.

use std::path::PathBuf;
use std::time::Duration;

use crate::cluster::{gpu_cluster, job_of, shared_cluster, world};
use crate::harness::read;

const STANDIN: &str = env!("NIGHTJAR_NVML_STANDIN");
const GIB: u64 = 1 << 30;

/// The stand-in NVML copied into a folder of its own with its values file
/// beside it: two idle H200s of 141 GiB at 35 C and 100 W, each with
/// `more` (`{g}` for its index). The folder, the library, the values file.
fn standin(more: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let nvml = tempfile::tempdir().unwrap();
    let lib = nvml.path().join("libnvidia-ml-standin.so");
    std::fs::copy(STANDIN, &lib).unwrap();
    let values = nvml.path().join("nvml-standin-values");
    let mut init = String::from("count=2\n");
    for g in 0..2 {
        init.push_str(&format!(
            "{g}.name=NVIDIA H200\n{g}.uuid=GPU-node-{g}\n{g}.mem_total={}\n{g}.util=0\n{g}.temp=35\n{g}.power_mw=100000\n{}",
            141 * GIB,
            more.replace("{g}", &g.to_string())
        ));
    }
    std::fs::write(&values, init).unwrap();
    (nvml, lib, values)
}

#[test]
fn a_gpu_jobs_node_is_sampled_and_its_run_gets_its_gpu_record_and_counter_energy() {
    let _cluster = gpu_cluster();
    let (_nvml, lib, values) = standin("{g}.energy_mj=1000000\n");
    let nj = world(&format!(
        "node_gpus = \"nvml:{}\"\n[gpu]\nsample_period = \"200ms\"\nseries_every = \"200ms\"\n",
        lib.display()
    ));
    // The task names its own pid as the holder of 4 GiB on its GPU, then
    // works: the counter moves on by 1,000 J and the GPU is busy.
    let script = format!(
        "f={v}; g=$CUDA_VISIBLE_DEVICES; echo \"$g.procs=$$:{mem}\" >> $f; sleep 1; \
         echo \"$g.util=80\" >> $f; echo \"$g.energy_mj=2000000\" >> $f; sleep 2",
        v = values.display(),
        mem = 4 * GIB
    );
    let id = nj.submit(&["--gpus", "1", "--", "sh", "-c", &script]);
    job_of(&nj, id);
    assert_eq!(nj.wait(id), 0, "{}\n{}", nj.show(id), nj.daemon_log());
    let show = nj.show(id);
    let records = show["gpu_records"].as_array().expect("GPU records");
    assert_eq!(records.len(), 1, "{show}");
    let r = &records[0];
    assert!(
        r["uuid"]
            .as_str()
            .is_some_and(|u| u.starts_with("GPU-node-")),
        "{r}"
    );
    assert_eq!(r["mem_peak"], 4 * GIB, "the task's own memory: {r}");
    assert_eq!(r["util_max"], 80, "{r}");
    assert_eq!(r["energy_source"], "counter", "{r}");
    assert_eq!(r["energy_j"], 1000.0, "{r}");
    assert!(r["samples"].as_u64().unwrap_or(0) >= 5, "{r}");
    let energy = &show["runs"][0]["energy"];
    assert_eq!(energy["source"], "counter", "the run's energy: {show}");
    // The samples stay in the run folder; the sampler is gone with the job.
    let dir = show["runs"][0]["run_dir"].as_str().expect("run folder");
    let samples = read(&std::path::Path::new(dir).join("gpu-samples.jsonl"));
    assert!(samples.lines().count() >= 6, "{samples}");
    let sampler_alive = || {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
            .any(|c| {
                let c = String::from_utf8_lossy(&c);
                c.contains("gpu-sample") && c.contains(dir)
            })
    };
    let t0 = std::time::Instant::now();
    while sampler_alive() {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the sampler outlived its job"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_running_gpu_jobs_node_readings_show_in_gpus_and_an_idle_one_is_marked_stalled_until_it_works()
{
    let _cluster = gpu_cluster();
    let (nvml, lib, values) = standin("");
    let nj = world(&format!(
        "node_gpus = \"nvml:{}\"\n[gpu]\nsample_period = \"200ms\"\nstall_after = \"1s\"\n",
        lib.display()
    ));
    // Idle and silent until the test's word (`go`), then busy at 80%.
    let go = nvml.path().join("go");
    let script = format!(
        "g=$CUDA_VISIBLE_DEVICES; while [ ! -e {go} ]; do sleep 0.1; done; \
         echo \"$g.util=80\" >> {v}; echo \"$g.temp=61\" >> {v}; sleep 300",
        go = go.display(),
        v = values.display()
    );
    let id = nj.submit(&["--gpus", "1", "--", "sh", "-c", &script]);
    job_of(&nj, id);
    let stalled = || !nj.show(id)["runs"][0]["stalled_at"].is_null();
    nj.until(
        "the idle run is marked stalled from its node's samples",
        stalled,
    );
    // `gpus` shows its GPU as the node's sampler last read it.
    let node_gpu = |util: u64| {
        let gpus = nj.json(&["gpus"]);
        let rows = gpus.as_array().cloned().unwrap_or_default();
        rows.iter().any(|g| {
            g["util"] == util
                && g["power_w"] == 100.0
                && g["mem_total"] == 141 * GIB
                && g["tasks"]
                    .as_array()
                    .is_some_and(|t| t.contains(&id.into()))
        })
    };
    nj.until("gpus shows the node GPU's reading", || node_gpu(0));
    std::fs::write(&go, "").unwrap();
    nj.until("active again once its GPU works", || !stalled());
    nj.until("gpus shows it busy", || node_gpu(80));
    let events = nj.show(id)["events"].clone();
    let kinds: Vec<&str> = (events.as_array().unwrap().iter())
        .filter_map(|e| e["kind"].as_str())
        .collect();
    assert!(kinds.contains(&"stalled"), "{events}");
    nj.ok(&["cancel", &id.to_string()]);
    nj.wait(id);
}

#[test]
fn a_cpu_job_starts_no_sampler() {
    let _cluster = shared_cluster();
    let nj = world("");
    let id = nj.submit(&["--", "true"]);
    assert_eq!(nj.wait(id), 0, "{}", nj.daemon_log());
    let show = nj.show(id);
    let dir = std::path::PathBuf::from(show["runs"][0]["run_dir"].as_str().expect("run folder"));
    let script = read(&dir.join("job.sh"));
    assert!(!script.contains("gpu-sample"), "{script}");
    assert!(!dir.join("gpu-sampler.json").exists());
    assert_eq!(show["gpu_records"].as_array().map(Vec::len), Some(0));
}
