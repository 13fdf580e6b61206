//! `report` on the daemon's side: a period's accounting, computed on a
//! read-only connection of its own, so a long report never holds the
//! store's lock (the scheduler and every other request go on meanwhile;
//! WAL gives the report one consistent snapshot).

use nightjar_core::api::{Accounting, ApiError, ErrorKind, Report};

use crate::daemon::Daemon;
use crate::store::Store;

impl super::Handler for Report {
    async fn handle(
        self,
        d: &std::sync::Arc<Daemon>,
        _: &crate::access::Caller,
    ) -> anyhow::Result<Accounting> {
        let d = std::sync::Arc::clone(d);
        super::blocking("report", move || report(&d, &self)).await
    }
}

/// The accounting of `r`'s period, with its HTML page when asked.
/// Blocking: reads the whole period (call it off the runtime's thread).
fn report(d: &Daemon, r: &Report) -> anyhow::Result<Accounting> {
    if r.from > r.to {
        return Err(ApiError::new(
            ErrorKind::Invalid,
            format!(
                "the period starts after it ends (from {} > to {}): give --from before --to",
                r.from, r.to
            ),
        )
        .into());
    }
    let store = Store::open_read_only(&d.cfg.db_path())?;
    let tariff = d.cfg.tariff();
    let mut acc = crate::report::compute::accounting(
        &store,
        &tariff,
        (r.from, r.to, d.now_ms()),
        &d.gpu_names(),
    )?;
    if r.html {
        acc.html = Some(crate::report::render::html(&acc));
    }
    Ok(acc)
}
