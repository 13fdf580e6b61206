//! Hostile raw requests against issue 15's additions (environments, the
//! result cache, seeds): what the CLI would never send, a raw client can.

use serde_json::json;

use crate::hostile_inputs::{entry, refused_raw, submit, world};

/// A container mount sent raw as `WORK/../state` or as a symlink to the
/// state dir is refused like the state dir itself: the daemon checks the
/// real path the runtime would mount, not the text it was given.
#[test]
fn a_raw_mount_of_the_state_dir_through_dotdot_or_a_symlink_is_refused() {
    let nj = world();
    let link = nj.dir.path().join("innocent");
    std::os::unix::fs::symlink(&nj.state, &link).unwrap();
    let dotdot = nj.path("work").join("..").join("state");
    for (host, expect) in [
        (dotdot.display().to_string(), "submit the real folder"),
        (link.display().to_string(), "submit the real folder"),
        (nj.state.display().to_string(), "state folder"),
        (
            nj.dir.path().join("absent").display().to_string(),
            "create it or fix the mount",
        ),
    ] {
        let mut e = entry(&nj, "mount");
        e["members"][0]["environment"] = json!({"container": {
            "image": "localhost/njtest-absent:1", "runtime": "podman",
            "mounts": [{"host": host, "target": "/s", "read_only": false}]
        }});
        refused_raw(&nj, &submit(vec![e]), expect);
    }
}
