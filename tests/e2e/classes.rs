//! Failure classes from real processes: what a run printed or its exit code
//! names the class, with a hint, in `show`, `ls` and `--json`.

use crate::harness::Nj;

/// The class of task `id`'s last run, as `--json show` gives it.
fn class_of(nj: &Nj, id: i64) -> String {
    let show: serde_json::Value =
        serde_json::from_str(&nj.ok(&["--json", "show", &id.to_string()])).unwrap();
    show["runs"][0]["class"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn a_run_is_classed_by_what_it_printed_or_its_exit_code() {
    // A disk-full run holds its task until the disk has room: never, here.
    let mut nj = Nj::new("slots = 4\n[classes]\ndisk_free = \"1EiB\"");
    nj.start();
    let gpu = nj.submit(&[
        "--",
        "sh",
        "-c",
        "echo 'RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB' >&2; exit 1",
    ]);
    let disk = nj.submit(&["--", "sh", "-c", "exit 102"]);
    // A real refused connection: a port bound, then closed again.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let net = nj.submit(&[
        "--",
        "python3",
        "-c",
        &format!("import socket; socket.create_connection(('127.0.0.1', {port}))"),
    ]);
    let plain = nj.submit(&["--", "sh", "-c", "echo 'KeyError: x' >&2; exit 3"]);
    assert_eq!(nj.wait(gpu), 1);
    nj.until("the disk-full task is held", || {
        nj.show(disk)["task"]["state"].as_str() == Some("held")
    });
    assert_eq!(nj.wait(net), 1);
    assert_eq!(nj.wait(plain), 3);
    assert_eq!(class_of(&nj, gpu), "gpu-oom");
    assert_eq!(class_of(&nj, disk), "disk-full");
    assert_eq!(class_of(&nj, net), "network");
    assert_eq!(class_of(&nj, plain), "app-error");
    let ls = nj.ok(&["ls"]);
    let line = |id: i64| {
        ls.lines()
            .find(|l| l.starts_with(&format!("{id} ")))
            .unwrap_or_default()
            .to_string()
    };
    assert!(
        line(gpu).contains("gpu-oom (exit 1): its output says `CUDA out of memory`"),
        "{ls}"
    );
    assert!(
        line(disk).contains("disk-full (exit 102): exit code 102 says so"),
        "{ls}"
    );
    assert!(line(net).contains("network (exit 1)"), "{ls}");
    assert!(
        line(plain).contains("exit 3") && !line(plain).contains("app-error"),
        "{ls}"
    );
    let show = nj.ok(&["show", &gpu.to_string()]);
    assert!(show.contains("gpu-oom, exit 1"), "{show}");
}
