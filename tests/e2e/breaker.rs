//! What a hostile reviewer broke: a `wait` naming one task 200,000 times
//! (each lookup under the store lock kept `ls` and run recording waiting).

use std::io::{BufRead, BufReader, Write};
use std::time::{Duration, Instant};

use crate::harness::Nj;
use crate::hostile_inputs::connect;

#[test]
fn a_wait_naming_one_task_200000_times_answers_once_and_keeps_ls_quick() {
    let mut nj = Nj::new("");
    nj.start();
    let id = nj.submit(&["--", "true"]);
    assert_eq!(nj.wait(id), 0);
    let ids = vec![id; 200_000];
    let line = serde_json::to_vec(&serde_json::json!({ "verb": "wait", "ids": ids })).unwrap();
    assert!(line.len() < 1 << 20, "within the line limit");
    let mut s = connect(&nj);
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    let waiter = std::thread::spawn(move || {
        s.write_all(&line).and_then(|_| s.write_all(b"\n")).unwrap();
        let mut reply = String::new();
        BufReader::new(s).read_line(&mut reply).unwrap();
        reply
    });
    std::thread::sleep(Duration::from_millis(200));
    let t0 = Instant::now();
    nj.ok(&["ls", "--all"]);
    let ls = t0.elapsed();
    let reply: serde_json::Value = serde_json::from_str(&waiter.join().unwrap()).unwrap();
    let results = reply["ok"].as_array().expect("a wait result");
    assert_eq!(results.len(), 1, "each task once");
    assert_eq!(results[0]["id"], id);
    assert_eq!(results[0]["state"], "succeeded");
    assert!(
        ls < Duration::from_secs(3),
        "ls waited {ls:?} behind the wait"
    );
}
