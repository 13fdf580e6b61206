//! A gpu-oom retry, through the real NVML code path (the stand-in library):
//! the run's peak is recorded, the retry waits for a GPU with more free
//! memory than that peak, and the hint names the GPU, the peak and what was
//! free.

use crate::gpus::{GIB, GpuWorld, two_gpus};

#[test]
fn a_gpu_oom_is_retried_on_a_gpu_with_more_free_memory_than_its_peak() {
    // GPU 0 (80 GiB) holds 67 GiB of someone else's: 13 GiB free. GPU 1
    // (24 GiB) is empty.
    let foreign = format!("0.procs=1:{}\n0.mem_used={}", 67 * GIB, 67 * GIB);
    let w = GpuWorld::new("share = true", &two_gpus(&foreign, ""));
    let dir = w.nj.path("oom");
    let (pidfile, marker) = (dir.join("pid"), dir.join("tried"));
    let script = format!(
        "if [ -e {m} ]; then echo gpus=$CUDA_VISIBLE_DEVICES; exit 0; fi; touch {m}; echo $$ > {p}; \
         while [ ! -e {m}.go ]; do sleep 0.05; done; \
         echo 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB' >&2; exit 1",
        m = marker.display(),
        p = pidfile.display()
    );
    let id = w.nj.submit(&[
        "--gpus",
        "1",
        "--gpu-mem",
        "10GiB",
        "--attempts",
        "2",
        "--backoff",
        "100ms",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    w.nj.until("the first attempt runs", || {
        crate::harness::read(&pidfile).trim().parse::<u32>().is_ok()
    });
    let pid: u32 = crate::harness::read(&pidfile).trim().parse().unwrap();
    // The run grows to 14 GiB on GPU 0, then runs out.
    w.set(&two_gpus(
        &format!(
            "0.procs=1:{},{pid}:{}\n0.mem_used={}",
            67 * GIB,
            14 * GIB,
            81 * GIB
        ),
        "",
    ));
    // Until the daemon read it (the run's peak is taken from the same
    // sample): a fixed 500 ms missed it when a loaded machine's sampler
    // came late, and the run ended as a plain failure.
    w.nj.until("the daemon read the 14 GiB", || {
        w.gpus()[0]["mem_used"] == 81 * GIB
    });
    w.set(&two_gpus(&foreign, ""));
    std::fs::write(marker.with_extension("go"), b"").unwrap();
    assert_eq!(w.nj.wait(id), 0);
    let show = w.nj.show(id);
    let runs = show["runs"].as_array().unwrap();
    assert_eq!(runs[0]["class"], "gpu-oom");
    assert_eq!(runs[0]["gpus"], "0");
    let hint = runs[0]["message"].as_str().unwrap_or_default();
    assert!(
        hint.contains("GPU 0 (NVIDIA A100-SXM4-80GB): the run peaked at 14.0G")
            && hint.contains("of 80.0G free now"),
        "the hint names the GPU and the peak: {hint}"
    );
    assert_eq!(
        runs[1]["gpus"], "1",
        "GPU 0 has 13 GiB free, under the 14 GiB peak: the retry went to GPU 1"
    );
    assert_eq!(w.nj.ok(&["logs", &id.to_string()]), "gpus=1\n");
}
