//! The first-party `reserve` policy's config, checked when a real daemon
//! starts. (What it keeps and lends is the in-process tier's:
//! `host/src/api/inproc/reserve.rs`.)

use crate::harness::Nj;
use crate::plugin_config::start_fails;

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
