//! A period's accounting from the store: runs, outcomes, GPU-hours, waits,
//! energy, cost and savings, by project, user and task name, and the series
//! the charts draw.

use nightjar_core::api::report::{Accounting, Group, Series};

use crate::store::Store;
use crate::tariff::Tariff;

// placeholder: replaced by the report branch at merge
/// The accounting of the runs that ended in `[from, to)`, computed at `now`.
pub fn accounting(
    store: &Store,
    tariff: &Tariff,
    from: i64,
    to: i64,
    now: i64,
) -> anyhow::Result<Accounting> {
    let _ = store;
    Ok(Accounting {
        from,
        to,
        generated_at: now,
        time_zone: tariff.tz.name().to_string(),
        currency: tariff.currency.clone(),
        total: Group {
            key: "all".into(),
            ..Group::default()
        },
        by_project: Vec::new(),
        by_user: Vec::new(),
        by_task: Vec::new(),
        series: Series::default(),
        longest_waits: Vec::new(),
        html: None,
    })
}
