//! `show`: one task in full. Anyone may read a task; the values of its
//! environment (in the spec and in every manifest) are its owner's, an
//! administrator's, or everyone's when `users.share_details` is on.

use crate::access::Caller;
use crate::api::wire::TaskDetail;
use crate::daemon::Daemon;

/// What stands for a value another user may not read.
pub const PRIVATE: &str = "<private>";

impl super::Handler for crate::api::Show {
    async fn handle(
        self,
        d: &std::sync::Arc<Daemon>,
        caller: &Caller,
    ) -> anyhow::Result<TaskDetail> {
        show(d, caller, self.id)
    }
}

/// `show ID` as `caller` may see it.
fn show(d: &Daemon, caller: &Caller, id: i64) -> anyhow::Result<TaskDetail> {
    let mut detail = d.reader().show(id)?;
    d.live_reason(&mut detail.task);
    detail.estimate = d.estimate(&detail.spec);
    if let Some(s) = &mut detail.schedule {
        s.timezone = d.cfg.timezone.clone();
        s.next_there = detail.task.next_fire_at.map(|at| {
            let there = crate::time::to_utc(at).with_timezone(&d.cfg.tz());
            format!("{} {}", there.format("%Y-%m-%d %H:%M"), d.cfg.timezone)
        });
    }
    if let Some(m) = detail.manifests.submit.take() {
        detail.manifests.submit = Some(d.submit_view(m, &detail.spec));
    }
    for (k, v) in detail.spec.env.iter_mut() {
        if crate::config::redacted(k, &d.cfg.sandbox.redact_env) {
            *v = crate::config::REDACTED.to_string();
        }
    }
    if !d.access.may_read_private(caller, detail.task.owner_uid) {
        hide_private(&mut detail);
    }
    Ok(detail)
}

/// Replaces every environment value of the task and its manifests.
pub fn hide_private(detail: &mut TaskDetail) {
    let hide = |env: &mut std::collections::BTreeMap<String, String>| {
        env.values_mut().for_each(|v| *v = PRIVATE.to_string());
    };
    hide(&mut detail.spec.env);
    for m in detail
        .manifests
        .submit
        .iter_mut()
        .chain(detail.manifests.runs.iter_mut())
    {
        hide(&mut m.env);
        if let Some(spec) = &mut m.spec {
            hide(&mut spec.env);
        }
    }
}
