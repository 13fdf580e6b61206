//! `plugins check` of a notifier: a fresh instance, `configure` only, with
//! neither HTTP nor mail (configure reaches nothing), under the watchdog.

use std::sync::Arc;

use wasmtime::Store;
use wasmtime::component::ResourceTable;

use super::NotifierPlugin;
use crate::plugins::engine::PluginEngine;
use crate::plugins::limits::{
    MAX_CALL_TRANSFER, MAX_HOST_RESOURCES, MAX_LOG_MESSAGE, PluginLimits, TotalLimiter, printable,
};
use crate::plugins::policy::{PluginError, classify};
use crate::plugins::state::PluginState;
use crate::plugins::wasi::SeededRng;

impl NotifierPlugin {
    /// Instantiates it and runs only `configure(config)`, as each delivery
    /// starts: what `plugins check --plugin-config` asks of a notifier.
    pub fn configure(self: &Arc<Self>, config: &str) -> Result<(), PluginError> {
        let (me, config) = (Arc::clone(self), config.to_string());
        let watchdog = PluginLimits::watchdog(self.limits.configure_timeout);
        crate::plugins::worker::contained(
            crate::plugins::worker::Budget::daemon(crate::plugins::worker::Kind::Notifier),
            &self.name,
            watchdog,
            move || me.configure_here(&config),
        )
    }

    fn configure_here(&self, config: &str) -> Result<(), PluginError> {
        let sink = crate::plugins::sink::LogSink::default();
        let rng = SeededRng::default();
        let mut table = ResourceTable::new();
        table.set_max_capacity(MAX_HOST_RESOURCES);
        let state = PluginState {
            name: self.name.clone(),
            wasi: crate::plugins::wasi::context(&sink, &rng),
            table,
            limits: TotalLimiter::new(self.limits.memory),
            log_lines: self.limits.log_lines,
            log_budget: self.log_budget.clone(),
            rng,
            http: None,
            mail: None,
            tariff: None,
            tariff_spans: Default::default(),
        };
        let mut store = Store::new(&self.engine.engine, state);
        store.limiter(|s| &mut s.limits);
        store.set_hostcall_fuel(MAX_CALL_TRANSFER);
        let deadline = self.limits.configure_timeout;
        store.set_epoch_deadline(PluginEngine::ticks(deadline));
        let answer = self.engine.with_deadline(|| {
            let live = self.pre.instantiate(&mut store)?;
            live.nightjar_plugin_notify()
                .call_configure(&mut store, config)
        });
        sink.to_log(&self.name, &self.log_budget, &[]);
        match answer {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(PluginError::Config {
                key: e.key.map(|k| printable(&k, MAX_LOG_MESSAGE)),
                message: printable(&e.message, MAX_LOG_MESSAGE),
            }),
            Err(e) => Err(classify(e, deadline, self.limits.memory)),
        }
    }
}
