//! What a plugin's store holds, and the host functions every version of the
//! contract imports (`log`, `plugin-name`), written once for all of them.

use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use super::limits::{MAX_LOG_MESSAGE, TotalLimiter, printable};
use super::sink::LogBudget;
use super::wasi::{Seeded, SeededRng};

/// What a plugin's store holds.
pub struct PluginState {
    pub(super) name: String,
    pub(super) wasi: WasiCtx,
    pub(super) table: ResourceTable,
    pub(super) limits: TotalLimiter,
    pub(super) log_lines: u32,
    pub(super) log_budget: LogBudget,
    pub(super) rng: SeededRng,
    /// A notifier's brokered HTTP (`None` for every other plugin).
    pub(super) http: Option<std::sync::Arc<super::notifier::http::HttpBroker>>,
    /// A notifier's brokered mail (`None` for every other plugin).
    pub(super) mail: Option<std::sync::Arc<super::notifier::mail::MailBroker>>,
    /// The daemon's tariff, for a policy's `tariff` import (`None`: no
    /// daemon config, as in `plugins check`, or not a policy).
    pub(super) tariff: Option<std::sync::Arc<crate::tariff::Tariff>>,
    /// That tariff's window edges, kept from one call of the import to
    /// the next.
    pub(super) tariff_spans: crate::tariff::KeptSpans,
}

impl Seeded for PluginState {
    fn rng(&self) -> &SeededRng {
        &self.rng
    }
}

impl WasiView for PluginState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// A log line's level, whatever version of the contract sent it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLevel {
    /// `trace` and `debug`.
    Debug,
    /// `info`.
    Info,
    /// `warn`.
    Warn,
    /// `error`.
    Error,
}

impl PluginState {
    /// The `log` import: bounded per call, escaped, within the log budget.
    pub(super) fn log(&mut self, level: LogLevel, message: &str) {
        if self.log_lines == 0 {
            return;
        }
        self.log_lines -= 1;
        let mut message = printable(message, MAX_LOG_MESSAGE);
        if let Some(http) = &self.http {
            message = crate::secrets::redact(&message, http.secrets());
        }
        if !self.log_budget.admit(message.len()) {
            return;
        }
        let name = &self.name;
        match level {
            LogLevel::Debug => tracing::debug!(plugin = %name, "{message}"),
            LogLevel::Info => tracing::info!(plugin = %name, "{message}"),
            LogLevel::Warn => tracing::warn!(plugin = %name, "{message}"),
            LogLevel::Error => tracing::error!(plugin = %name, "{message}"),
        }
    }

    /// The `plugin-name` import.
    pub(super) fn plugin_name(&self) -> String {
        self.name.clone()
    }
}
