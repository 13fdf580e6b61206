//! Version 0.2 of the contract's `policy` (0.2.0 to 0.2.3): the bindings of
//! `wit/nightjar-plugin@0.2.3`, which call 0.2.0 to 0.2.2 components too
//! (wasmtime matches their imports and exports to `@0.2.3` ones by semver,
//! and each 0.2.x only adds to the one before), its host imports (shared
//! with the incremental and delta policies), and the translation between the host's model of a pass
//! and the compact snapshot and answer of 0.2 (text in one string table,
//! tasks and reasons by position).

use wasmtime::component::{HasSelf, Linker};

use super::state::{LogLevel, PluginState};

mod answer;
pub(crate) use answer::{Reasons, closures_and_preemptions};
mod snapshot;

pub use answer::read;
pub use snapshot::{MAX_TEXT, wire};

wasmtime::component::bindgen!({
    path: "../wit/nightjar-plugin@0.2.3",
    world: "scheduling-policy",
});

pub use exports::nightjar::plugin::policy as types;

host_imports!("0.2");

/// Longest range the `tariff` import answers for: 14 days.
const MAX_TARIFF_RANGE_MS: i64 = 14 * 86_400_000;

impl nightjar::plugin::tariff::Host for PluginState {
    fn prices(&mut self, start: i64, end: i64) -> Option<nightjar::plugin::tariff::Schedule> {
        use nightjar::plugin::tariff::{PriceSpan, Schedule};
        let t = self.tariff.as_ref()?;
        if t.windows.is_empty() {
            return None;
        }
        let end = end.min(start.saturating_add(MAX_TARIFF_RANGE_MS));
        let spans = (self.tariff_spans.spans(t, start, end))
            .into_iter()
            .map(|(start, end, price)| PriceSpan { start, end, price })
            .collect();
        Some(Schedule {
            currency: t.currency.clone(),
            spans,
        })
    }
}
