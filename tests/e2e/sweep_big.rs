//! The documented maximum sweep, 10,000 members, is accepted: it travels
//! as its template and values (a few KiB), not 10,000 specs (3.8 MB, past
//! the 1 MiB request cap), and the daemon expands it.

use std::time::Instant;

use crate::harness::Nj;

#[test]
fn a_10000_member_sweep_file_is_accepted_and_listed_as_one_line() {
    let mut nj = Nj::new("");
    nj.start();
    let vals = |n: usize| (0..n).map(|i| i.to_string()).collect::<Vec<_>>().join(", ");
    let file = nj.path("work").join("big.toml");
    std::fs::write(
        &file,
        format!(
            "name = \"big\"\ncommand = \"echo ${{a}} ${{b}}\"\n[sweep]\na = [{}]\nb = [{}]\n",
            vals(100),
            vals(100)
        ),
    )
    .unwrap();
    let t0 = Instant::now();
    let out = nj.json(&["submit", "--hold", "-f", file.to_str().unwrap()]);
    println!("a 10,000-member sweep submitted in {:?}", t0.elapsed());
    assert_eq!(out[0]["members"], 10_000, "{out}");
    let id = out[0]["id"].as_i64().unwrap();
    let show = nj.show(id);
    assert_eq!(show["task"]["kind"], "sweep", "{show}");
    let ls = nj.ok(&["ls"]);
    assert!(ls.contains("big"), "{ls}");
    nj.ok(&["cancel", &id.to_string()]);
}
