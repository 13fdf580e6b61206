//! Notifiers: events in, delivered or not.
//!
//! A notifier is its configuration (a serde type, parsed from its table in
//! the daemon config, with the `secrets` the host resolved) and
//! [`Notifier::deliver`], which sends events through the host-brokered
//! [`http`](crate::http) client:
//!
//! ```
//! use nightjar_sdk::{DeliveryError, Event, Notifier, http};
//!
//! #[derive(serde::Deserialize)]
//! #[serde(deny_unknown_fields)]
//! struct Config {
//!     url: String,
//! }
//!
//! struct Hook;
//!
//! impl Notifier for Hook {
//!     type Config = Config;
//!     fn deliver(config: &Config, events: &[Event]) -> Result<(), DeliveryError> {
//!         // One message, however many events: several only come when the
//!         // host rate-limits this notifier, and are sent as a summary.
//!         // (A real notifier builds its body with serde_json.)
//!         let body = format!("{{\"events\":{},\"first\":{}}}", events.len(), events[0].id);
//!         http::post_json(&config.url, [("x-sender", "nightjar")], body)?.check()
//!     }
//! }
//!
//! nightjar_sdk::export_notifier!(Hook);
//!
//! # use nightjar_sdk::testing::{HttpMock, event};
//! let config = <Hook as nightjar_sdk::Notifier>::configure("url = \"https://chat.example.org/hook\"").unwrap();
//! let mock = HttpMock::install();
//! mock.reply(503, "try later");
//! let failed = Hook::deliver(&config, &[event(1, "task-failed")]).unwrap_err();
//! assert!(failed.is_transient());
//! assert!(Hook::deliver(&config, &[event(1, "task-failed")]).is_ok());
//! assert_eq!(mock.requests().len(), 2);
//! ```
//!
//! The host calls `configure` first on every instance, then `deliver` with
//! the events oldest first: one, or (for a notifier its config rate-limits)
//! several that waited, which the notifier should send as ONE summary
//! message, dropping none. Delivery is all or nothing: an error means none
//! of the call's events counts as delivered, and the host retries them all
//! (a [`DeliveryError::Transient`]) or moves them to the dead letters (a
//! [`DeliveryError::Permanent`]). Each event's [`Event::key`] stays the same
//! across retries, for receivers that drop repeats.
//!
//! Natively, [`Notifier::configure`] reads a config as the host's would be,
//! [`testing::event`](crate::testing::event) makes events, and
//! [`testing::HttpMock`](crate::testing::HttpMock) answers [`http::send`](crate::http::send).

use serde::de::DeserializeOwned;

use crate::ConfigError;

mod error;
mod event;
mod text;

pub use error::DeliveryError;
pub use event::{Event, Field};
pub use text::{ELLIPSIS, truncate};

/// A notifier: a configuration type and a function that delivers events
/// with it. Export it with [`export_notifier!`](crate::export_notifier).
pub trait Notifier {
    /// The configuration, read from TOML with serde. Use
    /// `#[serde(deny_unknown_fields)]` so a misspelt key is an error naming
    /// it. Secrets arrive resolved in the table's `secrets` sub-table
    /// (`secrets = { key = "..." }`); never put them in a message or an
    /// error.
    type Config: DeserializeOwned + Send + 'static;

    /// Delivers `events` (oldest first, never empty): one event, or several
    /// that waited for a rate limit, to be sent as one summary that drops
    /// none. `Ok` means all are delivered; an error means none is.
    fn deliver(config: &Self::Config, events: &[Event]) -> Result<(), DeliveryError>;

    /// Checks what serde cannot: ranges, URLs, one key against another. Name
    /// the key in the error ([`ConfigError::at`]) and say what to do. (The same
    /// name in every plugin kind: policies, validators and notifiers.)
    fn check_config(config: &Self::Config) -> Result<(), ConfigError> {
        #[allow(deprecated)]
        Self::check(config)
    }

    /// The earlier name of [`Notifier::check_config`] (when both are implemented,
    /// `check_config` runs and this does not), still called when a
    /// notifier implements only this; implement `check_config` instead.
    #[deprecated(since = "0.2.0", note = "implement `check_config` instead")]
    fn check(config: &Self::Config) -> Result<(), ConfigError> {
        let _ = config;
        Ok(())
    }

    /// Turns the config text into [`Notifier::Config`]: TOML by default
    /// ([`config::from_toml`](crate::config::from_toml)). Override it only
    /// for a config that is not TOML.
    fn parse(text: &str) -> Result<Self::Config, ConfigError> {
        crate::config::from_toml(text)
    }

    /// Reads a configuration exactly as the host's `configure` does:
    /// [`Notifier::parse`], then [`Notifier::check_config`]. Native tests call
    /// it as `MyPlugin::configure(text)`. (The same name in every plugin
    /// kind: policies, validators and notifiers.) Override `parse` or
    /// `check_config`, not this.
    fn configure(text: &str) -> Result<Self::Config, ConfigError>
    where
        Self: Sized,
    {
        let config = Self::parse(text)?;
        Self::check_config(&config)?;
        Ok(config)
    }
}

/// The earlier, per-kind name of [`Notifier::configure`]; call
/// `N::configure(text)` instead (the same name in every plugin kind).
#[deprecated(
    since = "0.2.0",
    note = "call `Notifier::configure` (`MyPlugin::configure(text)`) instead"
)]
pub fn configure_notifier<N: Notifier>(text: &str) -> Result<N::Config, ConfigError> {
    N::configure(text)
}

/// The machinery [`export_notifier!`](crate::export_notifier) expands to;
/// not for plugin code.
pub mod private {
    use super::{DeliveryError, Event, Notifier};
    use crate::__private::ConfigSlot;
    use crate::{ConfigError, notifier_abi as abi};

    /// The exported `configure`: parse, check, keep.
    pub fn configure_into<N: Notifier>(
        slot: &ConfigSlot<N::Config>,
        text: &str,
    ) -> Result<(), ConfigError> {
        let config = N::configure(text)?;
        *slot.lock() = Some(config);
        Ok(())
    }

    /// The exported `deliver` on the SDK's types: nothing to do for no
    /// events; otherwise the kept configuration (the defaults if the host
    /// never configured the notifier) and the events, into
    /// [`Notifier::deliver`]. A notifier that was never configured and has
    /// no defaults answers a transient error: the events wait for a
    /// configured instance rather than going to the dead letters.
    pub fn deliver_with<N: Notifier>(
        slot: &ConfigSlot<N::Config>,
        events: &[Event],
    ) -> Result<(), DeliveryError> {
        if events.is_empty() {
            return Ok(());
        }
        let mut config = slot.lock();
        if config.is_none() {
            match N::configure("") {
                Ok(c) => *config = Some(c),
                Err(e) => {
                    return Err(DeliveryError::Transient(format!(
                        "the notifier was not configured, and it needs a configuration: {}",
                        e.message
                    )));
                }
            }
        }
        match config.as_ref() {
            Some(c) => N::deliver(c, events),
            None => Ok(()),
        }
    }

    /// The exported `deliver` on the contract's own types.
    pub fn deliver_abi<N: Notifier>(
        slot: &ConfigSlot<N::Config>,
        events: Vec<abi::Event>,
    ) -> Result<(), abi::DeliveryError> {
        let events: Vec<Event> = events.into_iter().map(Event::from_abi).collect();
        deliver_with::<N>(slot, &events).map_err(DeliveryError::into_abi)
    }
}

/// Exports a [`Notifier`] as the component's `nightjar:plugin/notify@0.2.3`
/// interface (world `notifier`) and writes the API version into its
/// `nightjar-api-version` custom section (on wasm only: natively the same
/// crate builds for unit tests, and the macro only checks that the type is
/// a [`Notifier`]).
#[macro_export]
macro_rules! export_notifier {
    ($notifier:ty) => {
        const _: fn() = || {
            fn is_a_notifier<N: $crate::Notifier>() {}
            is_a_notifier::<$notifier>();
        };

        $crate::api_version_section!();

        #[cfg(target_arch = "wasm32")]
        const _: () = {
            static CONFIG: $crate::__private::ConfigSlot<<$notifier as $crate::Notifier>::Config> =
                $crate::__private::ConfigSlot::new();

            struct Export;

            impl $crate::notifier_abi::Guest for Export {
                fn configure(
                    text: ::std::string::String,
                ) -> ::std::result::Result<(), $crate::ConfigError> {
                    $crate::__private_notifier::configure_into::<$notifier>(&CONFIG, &text)
                }

                fn deliver(
                    events: ::std::vec::Vec<$crate::notifier_abi::Event>,
                ) -> ::std::result::Result<(), $crate::notifier_abi::DeliveryError> {
                    $crate::__private_notifier::deliver_abi::<$notifier>(&CONFIG, events)
                }
            }

            $crate::notifier_bindings::__export_notifier!(
                Export with_types_in $crate::notifier_bindings
            );
        };
    };
}

#[cfg(test)]
mod tests;
