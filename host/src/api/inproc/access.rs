//! Who may do what, through the same `Api::call` the socket and HTTP use,
//! with callers as the socket's peer credentials would name them: only a
//! task's owner or an administrator changes it (the administrator's act is
//! audited), an owner written into a submission is replaced by the
//! caller's, and `ls` filters by owner. (That the socket names the real
//! peer, for real local accounts, is the end-to-end tier's:
//! `tests/e2e/multiuser_access.rs`.)

use super::World;
use crate::access::Caller;
use crate::api::wire::{ListFilter, TaskState};
use crate::api::{
    Audit, Cancel, ErrorKind, Hold, Priority, Release, Retry, Show, Submit, TaskList,
};
use crate::task::model::Priority as Level;

/// A local account as the socket would name it: uids 1, 2 and 65534
/// (`daemon`, `bin` and `nobody` on Debian) are on every Linux system.
fn account(uid: u32, admin: bool) -> Caller {
    Caller {
        uid,
        name: crate::users::name_of(uid),
        admin,
    }
}

fn alice() -> Caller {
    account(1, false)
}

fn bob() -> Caller {
    account(65534, false)
}

/// An administrator (`[users] admin_group`) who is not the daemon's user.
fn carol() -> Caller {
    account(2, true)
}

/// A held task of `who`'s, working in /tmp (which every account may enter).
fn held_task_of(w: &World, who: &Caller) -> i64 {
    w.try_submit_as(
        who,
        "[[task]]\nname = \"t\"\ncommand = [\"sleep\", \"300\"]\nworkdir = \"/tmp\"\nhold = true\n",
    )
    .unwrap_or_else(|e| panic!("{} submits: {e}", who.name))[0]
}

#[test]
fn only_the_owner_or_an_admin_changes_a_task_and_the_admins_act_is_audited() {
    let w = World::new("");
    let id = held_task_of(&w, &alice());
    let refusals = [
        w.call_as(&bob(), Cancel { id }).err(),
        w.call_as(&bob(), Hold { id }).err(),
        w.call_as(&bob(), Release { id }).err(),
        w.call_as(
            &bob(),
            Retry {
                id,
                no_cache: false,
            },
        )
        .err(),
    ];
    for e in refusals {
        let e = e.expect("bob is refused");
        assert_eq!(e.kind, ErrorKind::Forbidden, "{e}");
        assert!(
            e.message.contains(&alice().name) && e.message.contains(&bob().name),
            "names the owner and the caller: {e}"
        );
    }
    assert_eq!(w.state(id), TaskState::Held, "nothing changed");
    w.call_as(&alice(), Release { id }).expect("the owner may");
    w.call_as(&alice(), Hold { id }).expect("the owner may");
    w.call_as(&carol(), Cancel { id })
        .expect("an administrator may");
    assert_eq!(w.state(id), TaskState::Cancelled);
    let audit = w.call(Audit::default()).unwrap();
    assert!(
        audit
            .iter()
            .any(|r| r.user == carol().name && r.action.contains("cancel") && r.task == Some(id)),
        "the administrator's act is audited: {audit:?}"
    );
    assert!(
        !audit.iter().any(|r| r.user == bob().name),
        "a refused act is not: {audit:?}"
    );
}

#[test]
fn a_priority_change_is_an_administrators_and_is_applied_and_audited() {
    let w = World::new("");
    let id = held_task_of(&w, &alice());
    let e = w
        .call_as(
            &alice(),
            Priority {
                id,
                priority: Level::Urgent,
            },
        )
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Forbidden, "not even the owner's: {e}");
    w.call_as(
        &carol(),
        Priority {
            id,
            priority: Level::Urgent,
        },
    )
    .unwrap();
    let t = w.show(id);
    assert_eq!(t.task.priority, "urgent");
    assert_eq!(t.spec.priority, Level::Urgent);
    assert!(
        t.events
            .iter()
            .any(|e| e.message.contains("priority normal -> urgent")),
        "{:?}",
        t.events
    );
    let audit = w.call(Audit::default()).unwrap();
    let entry = audit
        .iter()
        .find(|r| r.action == "priority")
        .expect("a priority entry");
    assert_eq!(
        (entry.task, entry.user.as_str(), entry.detail.as_str()),
        (
            Some(id),
            carol().name.as_str(),
            "normal -> urgent (1 task(s))"
        )
    );
    let missing = w.call_as(
        &carol(),
        Priority {
            id: 999_999,
            priority: Level::High,
        },
    );
    assert_eq!(missing.unwrap_err().kind, ErrorKind::NotFound);
    assert_eq!(
        w.call(Audit::default()).unwrap().len(),
        audit.len(),
        "nothing audited"
    );
}

#[test]
fn a_priority_on_an_ended_task_is_refused_and_its_record_kept() {
    let w = World::new("");
    let id = held_task_of(&w, &alice());
    w.call(Cancel { id }).unwrap();
    let before = w.show(id);
    let e = w
        .call_as(
            &carol(),
            Priority {
                id,
                priority: Level::Urgent,
            },
        )
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid, "{e}");
    assert!(
        e.message.contains("has ended (cancelled)")
            && e.message.contains(&format!("nightjar retry {id}")),
        "{e}"
    );
    let after = w.show(id);
    assert_eq!(after.task.priority, before.task.priority);
    assert_eq!(after.spec.priority, before.spec.priority);
    assert!(
        !w.call(Audit::default())
            .unwrap()
            .iter()
            .any(|r| r.action == "priority"),
        "a refused change is not audited"
    );
}

#[test]
fn an_owner_written_into_a_submission_is_replaced_by_the_callers() {
    let w = World::new("");
    let model = held_task_of(&w, &alice());
    let mut spec = w.call(Show { id: model }).unwrap().spec;
    spec.owner = Some(crate::task::model::Owner {
        uid: 4242,
        name: "mallory".into(),
    });
    let mut entries = crate::task::resolve::resolve(
        &crate::task::file::parse(
            "[[task]]\nname = \"t\"\ncommand = [\"true\"]\nworkdir = \"/tmp\"\nhold = true\n",
            crate::task::file::Format::Toml,
        )
        .unwrap(),
        w.fx.dir(),
        "t",
    )
    .unwrap();
    entries[0].members = vec![spec];
    let id = w
        .call_as(
            &bob(),
            Submit {
                entries,
                verify: false,
            },
        )
        .unwrap()[0];
    let t = w.show(id);
    assert_eq!(t.task.owner_uid, Some(65534));
    assert_eq!(t.task.owner, Some(bob().name));
    assert_eq!(t.spec.owner.map(|o| o.uid), Some(65534));
}

#[test]
fn ls_filters_by_owner() {
    let w = World::new("");
    let a = held_task_of(&w, &alice());
    let b = held_task_of(&w, &bob());
    let of = |user: &str| -> Vec<i64> {
        w.call(TaskList {
            filter: ListFilter {
                user: Some(user.into()),
                ..ListFilter::default()
            },
            limit: None,
        })
        .unwrap()
        .iter()
        .map(|t| t.id)
        .collect()
    };
    assert_eq!(of(&alice().name), [a]);
    assert_eq!(of(&bob().name), [b]);
    assert!(of("nobody-of-this-lab").is_empty());
}
