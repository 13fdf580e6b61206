//! Many users, attacked: what a plain user must not reach through verbs
//! that read lab-wide state.

use crate::users_harness::{system, users};

#[test]
fn a_user_reads_only_their_own_part_of_the_audit_log_and_admins_all_of_it() {
    let u = users("audit is shown by owner");
    let s = system("");
    let work = |who: &crate::users_harness::Acct| who.home.to_str().unwrap().to_string();
    let alices = s.submit(
        &u,
        &u.alice,
        &["--hold", "--workdir", &work(&u.alice), "--", "true"],
    );
    let bobs = s.submit(
        &u,
        &u.bob,
        &["--hold", "--workdir", &work(&u.bob), "--", "true"],
    );
    // Carol (admin) cancels both: each owner sees the act on their own task only.
    s.ok(&u, &u.carol, &["cancel", &alices.to_string()]);
    s.ok(&u, &u.carol, &["cancel", &bobs.to_string()]);
    let tasks = |who| -> Vec<i64> {
        let out = s.ok(&u, who, &["--json", "audit"]);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        v.as_array()
            .unwrap()
            .iter()
            .filter_map(|e| e["task"].as_i64())
            .collect()
    };
    assert_eq!(tasks(&u.alice), [alices]);
    assert_eq!(tasks(&u.bob), [bobs]);
    assert_eq!(tasks(&u.carol), [alices, bobs]);
}

#[test]
fn an_administrators_rerun_of_a_users_task_stays_that_users_and_runs_as_them() {
    let u = users("an admin's rerun runs as the owner");
    let s = system("");
    let work = crate::users_harness::folder_of(&u.alice, "nj-rerun");
    let first = s.submit(
        &u,
        &u.alice,
        &[
            "--workdir",
            work.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            "id -u > uid-$NIGHTJAR_TASK_ID",
        ],
    );
    assert_eq!(
        crate::users_harness::wait_end(&s, first)["task"]["state"],
        "succeeded"
    );
    // Carol (admin) reruns it: alice's command in alice's folder, never as carol.
    let out = s.ok(&u, &u.carol, &["--json", "rerun", &first.to_string()]);
    let again = serde_json::from_str::<serde_json::Value>(&out).unwrap()["id"]
        .as_i64()
        .unwrap();
    let shown = crate::users_harness::wait_end(&s, again);
    assert_eq!(shown["task"]["state"], "succeeded", "{shown}");
    assert_eq!(shown["task"]["owner"], u.alice.name);
    let uid = std::fs::read_to_string(work.join(format!("uid-{again}"))).unwrap();
    assert_eq!(uid.trim(), u.alice.uid.to_string());
}
