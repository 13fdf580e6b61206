//! The first-party `reserve` policy, compiled to a component and embedded in
//! the binary, in a real daemon on two simulated GPUs.

use crate::harness::Nj;
use crate::plugin_config::start_fails;

fn world(reservation: &str) -> Nj {
    let mut nj = Nj::new(&format!(
        "slots = 8\n[gpu]\nbackend = \"sim:2xA100-80GB\"\nsample_period = \"100ms\"\nhost_mem_min_free = \"1MiB\"\n\
         [plugins]\nchain = [\"reserve\"]\n[plugin.reserve.config.urgent-day]\ngpus = 1\nfor_priorities = [\"urgent\"]\n{reservation}"
    ));
    nj.start();
    nj
}

fn reason(nj: &Nj, id: i64) -> String {
    nj.show(id)["task"]["reason"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

fn state(nj: &Nj, id: i64) -> String {
    nj.show(id)["task"]["state"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

const ONE_GPU: [&str; 5] = ["--gpus", "1", "--", "sleep", "60"];

#[test]
fn one_gpu_is_kept_for_urgent_work_and_an_urgent_task_gets_it() {
    let nj = world("");
    let ids: Vec<i64> = (0..3).map(|_| nj.submit(&ONE_GPU)).collect();
    let kept = "deferred by reserve: reserve `urgent-day`: 1 GPU kept for urgent tasks; ";
    nj.until_slow("two tasks to wait for the reservation", || {
        ids.iter()
            .filter(|&&t| reason(&nj, t).starts_with(kept))
            .count()
            == 2
    });
    assert_eq!(nj.running(), 1, "one normal task runs, one GPU is kept");
    let waiting = *ids.iter().find(|&&t| state(&nj, t) == "queued").unwrap();
    let why = nj.ok(&["why", &waiting.to_string()]);
    assert!(why.contains("reserve `urgent-day`"), "{why}");
    let mut urgent = vec!["--priority", "urgent"];
    urgent.extend_from_slice(&ONE_GPU);
    let u = nj.submit(&urgent);
    nj.until("the urgent task to start on the kept GPU", || {
        state(&nj, u) == "running"
    });
    assert_eq!(nj.running(), 2);
}

#[test]
fn a_lent_reservation_lets_normal_work_use_it_while_no_urgent_task_waits() {
    let nj = world("lend = true\n");
    let ids: Vec<i64> = (0..3).map(|_| nj.submit(&ONE_GPU)).collect();
    nj.until_slow("both GPUs to be used", || nj.running() == 2);
    let queued = *ids.iter().find(|&&t| state(&nj, t) == "queued").unwrap();
    assert!(
        !reason(&nj, queued).contains("reserve `"),
        "waits for a GPU, not the reservation"
    );
}

#[test]
fn hostile_reserve_configs_stop_the_start_naming_the_key() {
    for (config, key) in [
        ("colour = 1\n", "x.colour"),
        (
            "gpus = 1\nfor_priorities = [\"asap\"]\n",
            "x.for_priorities",
        ),
        (
            "gpus = 1\nfor_projects = [\"clinic\"]\nwindows = [{ from = \"25:00\", to = \"18:00\" }]\n",
            "x.windows[0].from",
        ),
        ("gpus = 100000\nfor_priorities = [\"urgent\"]\n", "x.gpus"),
    ] {
        let nj = Nj::new(&format!(
            "[plugins]\nchain = [\"reserve\"]\n[plugin.reserve.config.x]\n{config}"
        ));
        let err = start_fails(&nj);
        assert!(err.contains(key), "{config}: {err}");
    }
}

#[test]
fn a_reservation_larger_than_the_machine_keeps_every_gpu_and_says_which_key() {
    let mut nj = Nj::new(
        "slots = 8\n[gpu]\nbackend = \"sim:2xA100-80GB\"\nsample_period = \"100ms\"\nhost_mem_min_free = \"1MiB\"\n\
         [plugins]\nchain = [\"reserve\"]\n[plugin.reserve.config.huge]\ngpus = 3\nfor_priorities = [\"urgent\"]\n",
    );
    nj.start();
    let t = nj.submit(&ONE_GPU);
    nj.until_slow("the task to be deferred", || {
        reason(&nj, t).contains("key `huge.gpus` is 3, more than the 2 GPU(s) here")
    });
}
