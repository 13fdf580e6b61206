use super::*;
use crate::api::QueuePage;

fn task(id: i64, owner: u32, state: TaskState, name: &str) -> TaskRow {
    serde_json::from_value(serde_json::json!({
        "id": id, "kind": "task", "parent_id": null, "name": name, "project": "p<1>",
        "priority": "normal", "state": state, "reason": "deferred by offpeak-tariff: <price>",
        "submitted_at": 0, "eligible_at": null, "finished_at": null, "attempts": 0,
        "next_fire_at": null, "command": "true", "owner": format!("u{owner}"),
        "owner_uid": owner, "counts": null, "stalled_at": null
    }))
    .unwrap()
}

fn session(uid: u32, admin: bool) -> Session {
    Session {
        caller: Caller {
            uid,
            name: format!("u{uid}"),
            admin,
        },
        token: format!("token-{uid}"),
    }
}

const ACCESS: Access = Access {
    daemon_uid: 0,
    admin_gid: None,
    share_details: false,
};

#[test]
fn rows_are_escaped_and_buttons_shown_only_where_the_caller_may_change() {
    let page = QueuePage {
        rows: vec![
            task(1, 1001, TaskState::Queued, "<script>x</script>"),
            task(2, 1002, TaskState::Held, "theirs"),
        ],
        running: 0,
        waiting: 2,
    };
    let html = render(&ACCESS, &session(1001, false), &page, 1);
    assert!(!html.contains("<script>"), "{html}");
    assert!(html.contains("&lt;script&gt;x&lt;/script&gt;"));
    assert!(html.contains("p&lt;1&gt;") && html.contains("&lt;price&gt;"));
    assert!(html.contains("id=\"cancel-1\"") && html.contains("id=\"hold-1\""));
    assert!(!html.contains("id=\"cancel-2\"") && !html.contains("id=\"release-2\""));
    assert!(html.contains(&session(1001, false).csrf()));
    // An administrator may change everyone's.
    let admin = render(&ACCESS, &session(7, true), &page, 1);
    assert!(admin.contains("id=\"release-2\"") && admin.contains("id=\"cancel-2\""));
}

#[test]
fn a_long_queue_is_paged() {
    let page = QueuePage {
        rows: vec![task(101, 1, TaskState::Queued, "a")],
        running: 1,
        waiting: 250,
    };
    let html = render(&ACCESS, &session(1, false), &page, 2);
    assert!(html.contains("page 2 of 3"), "{html}");
    assert!(html.contains("href=\"/?page=1\"") && html.contains("href=\"/?page=3\""));
}
