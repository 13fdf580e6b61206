//! The SDK's [`Policy`] trait and what exports it: parse and check the
//! configuration once, keep it, and hand it to every `evaluate`.

use serde::de::DeserializeOwned;

use crate::{ConfigError, Evaluation, Snapshot};

/// A scheduling policy: a configuration type and a pure function from that
/// configuration and a snapshot to an [`Evaluation`]. Export it with
/// [`export_policy!`](crate::export_policy).
///
/// The host calls `configure` once with the `[plugin.NAME.config]` table as
/// TOML text; the SDK parses it into [`Policy::Config`] (an empty table gives
/// the defaults, so derive `Default` and use `#[serde(default)]`), runs
/// [`Policy::check_config`], and keeps the result for every pass.
pub trait Policy {
    /// The configuration, read from TOML with serde. Use
    /// `#[serde(default, deny_unknown_fields)]` so a missing key takes its
    /// default and a misspelt one is an error naming it; the field types in
    /// [`config`](crate::config) read durations, times of day and sizes.
    type Config: DeserializeOwned + Send + 'static;

    /// Answers one scheduling pass. Must be pure: the same configuration and
    /// snapshot give the same evaluation, and `snapshot.now` is the only clock.
    fn evaluate(config: &Self::Config, snapshot: &Snapshot<'_>) -> Evaluation;

    /// Checks what serde cannot: ranges, one key against another. Name the
    /// key in the error ([`ConfigError::at`]) and say what to do. (The same
    /// name in every plugin kind: policies, validators and notifiers.)
    fn check_config(config: &Self::Config) -> Result<(), ConfigError> {
        #[allow(deprecated)]
        Self::validate(config)
    }

    /// The earlier name of [`Policy::check_config`] (when both are implemented,
    /// `check_config` runs and this does not), still called when a
    /// policy implements only this; implement `check_config` instead.
    #[deprecated(since = "0.2.0", note = "implement `check_config` instead")]
    fn validate(config: &Self::Config) -> Result<(), ConfigError> {
        let _ = config;
        Ok(())
    }

    /// Turns the config text into [`Policy::Config`]: TOML by default
    /// ([`config::from_toml`](crate::config::from_toml)). Override it only
    /// for a config that is not TOML.
    fn parse(text: &str) -> Result<Self::Config, ConfigError> {
        crate::config::from_toml(text)
    }

    /// Reads a configuration exactly as the host's `configure` does:
    /// [`Policy::parse`], then [`Policy::check_config`]. Native tests call
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

/// The earlier, per-kind name of [`Policy::configure`]; call
/// `P::configure(text)` instead (the same name in every plugin kind).
#[deprecated(
    since = "0.2.0",
    note = "call `Policy::configure` (`MyPlugin::configure(text)`) instead"
)]
pub fn configure<P: Policy>(text: &str) -> Result<P::Config, ConfigError> {
    P::configure(text)
}

/// The machinery [`export_policy!`](crate::export_policy) expands to; not
/// for plugin code.
pub mod private {
    use std::sync::{Mutex, MutexGuard};

    use super::Policy;
    use crate::{ConfigError, Evaluation, Snapshot, abi};

    /// The bytes of the `nightjar-api-version` section: [`crate::API_VERSION`].
    pub const API_VERSION_BYTES: [u8; crate::API_VERSION.len()] = {
        let text = crate::API_VERSION.as_bytes();
        let mut out = [0u8; crate::API_VERSION.len()];
        let mut i = 0;
        while i < out.len() {
            out[i] = text[i];
            i += 1;
        }
        out
    };

    /// Where the exported policy keeps its parsed configuration between
    /// `configure` and `evaluate` (an instance is single-threaded; the lock
    /// only makes the static safe to declare).
    pub struct ConfigSlot<T>(Mutex<Option<T>>);

    impl<T> ConfigSlot<T> {
        /// An empty slot (before `configure`).
        pub const fn new() -> Self {
            ConfigSlot(Mutex::new(None))
        }

        pub(crate) fn lock(&self) -> MutexGuard<'_, Option<T>> {
            self.0.lock().unwrap_or_else(|p| p.into_inner())
        }
    }

    impl<T> Default for ConfigSlot<T> {
        fn default() -> Self {
            Self::new()
        }
    }

    /// The exported `configure`: parse, check, keep.
    pub fn configure_into<P: Policy>(
        slot: &ConfigSlot<P::Config>,
        text: &str,
    ) -> Result<(), ConfigError> {
        let config = P::configure(text)?;
        *slot.lock() = Some(config);
        Ok(())
    }

    /// The exported `evaluate`: the kept configuration (the defaults if the
    /// host never configured the plugin; nothing if there are none) and the
    /// snapshot, into [`Policy::evaluate`].
    pub fn evaluate_with<P: Policy>(
        slot: &ConfigSlot<P::Config>,
        snapshot: &Snapshot<'_>,
    ) -> Evaluation {
        let mut config = slot.lock();
        if config.is_none() {
            *config = P::configure("").ok();
        }
        match config.as_ref() {
            Some(c) => P::evaluate(c, snapshot),
            None => Evaluation::default(),
        }
    }

    /// The snapshot the plugin keeps between passes (one policy per
    /// component; an instance is single-threaded).
    static KEPT: Mutex<crate::kept::Kept> = Mutex::new(crate::kept::Kept::new());

    /// The exported `evaluate` on the contract's own types: the change
    /// applied to the kept snapshot, [`evaluate_with`] on it, the answer
    /// written back. A change the plugin cannot apply (a base it does not
    /// hold) is answered with generation 0 and nothing else: the host then
    /// sends the whole snapshot.
    pub fn evaluate_abi<P: Policy>(
        slot: &ConfigSlot<P::Config>,
        change: abi::Snapshot,
    ) -> abi::Evaluation {
        let mut kept = KEPT.lock().unwrap_or_else(|p| p.into_inner());
        if kept.apply(change).is_err() {
            return not_held();
        }
        let generation = kept.generation();
        let pass = kept.take_pass();
        let view = kept.snapshot();
        let e = match pass {
            Some(pass) => crate::usage_edit::during(pass, || evaluate_with::<P>(slot, view)),
            None => evaluate_with::<P>(slot, view),
        };
        crate::evaluation::to_abi(view, e, generation)
    }

    /// The snapshot the kept snapshot is (for a plugin's own export glue
    /// that answers some passes itself): `f` with the change applied, or
    /// `None` when it could not be.
    pub fn with_kept<T>(
        change: abi::Snapshot,
        f: impl FnOnce(&crate::Snapshot<'_>, u64) -> T,
    ) -> Option<T> {
        let mut kept = KEPT.lock().unwrap_or_else(|p| p.into_inner());
        kept.apply(change).ok()?;
        let generation = kept.generation();
        let pass = kept.take_pass();
        let view = kept.snapshot();
        Some(match pass {
            Some(pass) => crate::usage_edit::during(pass, || f(view, generation)),
            None => f(view, generation),
        })
    }

    /// The answer of a plugin that does not hold the change's base.
    pub fn not_held() -> abi::Evaluation {
        abi::Evaluation {
            generation: 0,
            reasons: Vec::new(),
            scores: Vec::new(),
            deferred: abi::Deferrals {
                task: Vec::new(),
                reason: Vec::new(),
                until: Vec::new(),
            },
            rejected: abi::Rejections {
                task: Vec::new(),
                reason: Vec::new(),
            },
            closed_gpus: Vec::new(),
            preempt: Vec::new(),
        }
    }
}

/// Exports a [`Policy`] as the component's
/// `nightjar:plugin/delta-policy@0.2.3` interface (the snapshot kept
/// between passes, each pass sent as a change) and writes the API version into its `nightjar-api-version`
/// custom section (on wasm only: natively the same crate builds for unit
/// tests, and the macro only checks that the type is a [`Policy`]).
#[macro_export]
macro_rules! export_policy {
    ($policy:ty) => {
        const _: fn() = || {
            fn is_a_policy<P: $crate::Policy>() {}
            is_a_policy::<$policy>();
        };

        $crate::api_version_section!();

        #[cfg(target_arch = "wasm32")]
        const _: () = {
            static CONFIG: $crate::__private::ConfigSlot<<$policy as $crate::Policy>::Config> =
                $crate::__private::ConfigSlot::new();

            struct Export;

            impl $crate::abi::Guest for Export {
                fn configure(
                    text: ::std::string::String,
                ) -> ::std::result::Result<(), $crate::ConfigError> {
                    $crate::__private::configure_into::<$policy>(&CONFIG, &text)
                }

                fn evaluate(change: $crate::abi::Snapshot) -> $crate::abi::Evaluation {
                    $crate::__private::evaluate_abi::<$policy>(&CONFIG, change)
                }
            }

    $crate::bindings::__export_scheduling_policy!(Export with_types_in $crate::bindings);
        };
    };
}

/// Writes [`API_VERSION`](crate::API_VERSION) into the component's
/// `nightjar-api-version` custom section (wasm only), so the host and
/// `nightjar plugins ls` can tell which contract a file was built against.
/// [`export_policy!`] does this; a plugin that writes its own export glue
/// calls it once.
#[doc(hidden)]
#[macro_export]
macro_rules! api_version_section {
    () => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            #[unsafe(link_section = "nightjar-api-version")]
            #[used]
            static NIGHTJAR_API_VERSION: [u8; $crate::API_VERSION.len()] =
                $crate::__private::API_VERSION_BYTES;
        };
    };
}

#[cfg(test)]
mod tests {
    use super::private::{ConfigSlot, configure_into, evaluate_with};
    use super::*;
    use crate::testing::SnapshotBuilder;

    #[derive(serde::Deserialize, Debug)]
    #[serde(default, deny_unknown_fields)]
    struct Config {
        low: u32,
        high: u32,
    }

    impl Default for Config {
        fn default() -> Self {
            Config { low: 1, high: 2 }
        }
    }

    /// Allows task 1 with the score `high - low`.
    struct Gap;

    impl Policy for Gap {
        type Config = Config;
        fn evaluate(c: &Config, _: &Snapshot<'_>) -> Evaluation {
            let mut e = Evaluation::default();
            e.allow(1, (c.high - c.low) as i32);
            e
        }
        fn check_config(c: &Config) -> Result<(), ConfigError> {
            if c.low > c.high {
                return Err(ConfigError::at("low", "must not be above `high`"));
            }
            Ok(())
        }
    }

    /// A policy written before `check_config`: only the earlier `validate`.
    struct Earlier;

    impl Policy for Earlier {
        type Config = Config;
        fn evaluate(c: &Config, s: &Snapshot<'_>) -> Evaluation {
            Gap::evaluate(c, s)
        }
        #[allow(deprecated)]
        fn validate(c: &Config) -> Result<(), ConfigError> {
            Gap::check_config(c)
        }
    }

    #[test]
    fn a_policy_that_implements_only_the_earlier_validate_is_still_checked() {
        let e = Earlier::configure("low = 5\nhigh = 1").unwrap_err();
        assert_eq!(e.key.as_deref(), Some("low"));
        assert!(Earlier::configure("low = 1\nhigh = 5").is_ok());
    }

    fn score(slot: &ConfigSlot<Config>) -> i32 {
        let s = SnapshotBuilder::at(0).build();
        match evaluate_with::<Gap>(slot, &s).verdicts[0].verdict {
            crate::Verdict::Allow(n) => n,
            ref other => panic!("{other:?}"),
        }
    }

    #[test]
    fn configure_parses_then_validates_and_evaluate_uses_what_it_kept() {
        assert_eq!(
            Gap::configure("low = 5").unwrap_err().key.as_deref(),
            Some("low")
        );
        assert_eq!(
            Gap::configure("hgih = 5").unwrap_err().key.as_deref(),
            Some("hgih")
        );
        let slot = ConfigSlot::new();
        assert_eq!(score(&slot), 1, "never configured: the defaults");
        configure_into::<Gap>(&slot, "high = 10").unwrap();
        assert_eq!(score(&slot), 9);
        assert!(configure_into::<Gap>(&slot, "low = 50").is_err());
        assert_eq!(score(&slot), 9, "a refused config changes nothing");
    }

    #[test]
    #[allow(deprecated)]
    fn the_earlier_per_kind_name_configures_as_the_trait_method_does() {
        // `configure::<P>` was the name before every kind had `P::configure`;
        // plugins that call it keep building and read the same config.
        assert_eq!(
            super::configure::<Gap>("low = 5").unwrap_err().key,
            Gap::configure("low = 5").unwrap_err().key
        );
        assert!(super::configure::<Gap>("high = 10").is_ok());
    }
}
