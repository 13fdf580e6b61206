//! More of the hidden-case habit (see `hostile_inputs`): text that would
//! repaint a terminal, and a client that stalls half-way through a request.

use std::io::Write;

use crate::hostile_inputs::{assert_alive, connect, queue, world};

#[test]
fn hostile_output_and_clients_reach_no_terminal_raw_and_stall_nobody() {
    let nj = world();
    let work = nj.path("work");
    // A sweep value with an ANSI escape becomes part of the member's name.
    std::fs::write(
        work.join("ansi.toml"),
        "name = \"paint\"\ncommand = [\"true\"]\nhold = true\n[sweep]\nv = [\"\\u001b[2J\\u001b[31mred\"]\n",
    )
    .unwrap();
    let id = nj.json(&["submit", "ansi.toml"])[0]["id"].as_i64().unwrap();
    for args in [vec!["show", &id.to_string()[..]], vec!["ls", "--all"]] {
        let out = nj.ok(&args);
        assert!(
            !out.contains('\u{1b}'),
            "{args:?} printed a raw escape: {out:?}"
        );
    }
    let show = nj.ok(&["show", &id.to_string()]);
    assert!(show.contains("paint[v=\\u{1b}[2J\\u{1b}[31mred]"), "{show}");
    // A client that sends half a line and stalls delays no one else.
    let before = queue(&nj);
    let mut slow = connect(&nj);
    slow.write_all(br#"{"v":2,"req":{"verb":"submit","entries":["#)
        .unwrap();
    assert_alive(&nj);
    assert_eq!(queue(&nj), before);
    drop(slow);
    assert_eq!(queue(&nj), before, "a half request queues nothing");
    assert_alive(&nj);
}
