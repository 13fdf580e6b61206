//! Result validators: a finished run in, findings out.
//!
//! A validator is its configuration (a serde type, parsed from the
//! `[[validate]]` table of a task file with its `plugin` key removed) and a
//! pure function of that configuration and one [`Run`]:
//!
//! ```
//! use nightjar_sdk::{Finding, Run, Validator};
//!
//! #[derive(serde::Deserialize, Default)]
//! #[serde(default, deny_unknown_fields)]
//! struct Config {
//!     file: String,
//! }
//!
//! struct NotEmpty;
//!
//! impl Validator for NotEmpty {
//!     type Config = Config;
//!     fn validate(config: &Config, run: &Run) -> Vec<Finding> {
//!         match run.file(&config.file) {
//!             Some(f) if f.size > 0 => Vec::new(),
//!             Some(_) => vec![Finding::error(&config.file, format!("{} is empty", config.file))],
//!             None => vec![Finding::error(&config.file, format!("{} is missing", config.file))],
//!         }
//!     }
//! }
//!
//! nightjar_sdk::export_validator!(NotEmpty);
//! # let config = <NotEmpty as nightjar_sdk::Validator>::configure("file = \"model.pt\"").unwrap();
//! # let run = nightjar_sdk::testing::RunBuilder::new().file("model.pt", 0).build();
//! # assert_eq!(NotEmpty::validate(&config, &run).len(), 1);
//! ```
//!
//! The host runs a validator on a fresh instance per run: `configure`, then
//! `validate`. The run's output folder is the plugin's only directory,
//! read-only, at `/output`; [`Run`] reads files of it by their relative path
//! (natively, in unit tests, from the folder a
//! [`testing::RunBuilder`](crate::testing::RunBuilder) names).

use serde::de::DeserializeOwned;

use crate::ConfigError;

mod finding;
mod run;

pub use finding::{Finding, Severity};
pub use run::{OUTPUT_ROOT, OutputFile, Run};

/// A result validator: a configuration type and a pure function from that
/// configuration and a finished [`Run`] to its findings. Export it with
/// [`export_validator!`](crate::export_validator).
///
/// Any finding of [`Severity::Error`] fails the run (as
/// `validation-failed`); warnings and infos are shown and change nothing.
/// The host keeps at most 100 findings and 1 KiB of each message.
pub trait Validator {
    /// The configuration, read from TOML with serde. Use
    /// `#[serde(default, deny_unknown_fields)]` so a missing key takes its
    /// default and a misspelt one is an error naming it; the field types in
    /// [`config`](crate::config) read durations and sizes.
    type Config: DeserializeOwned + Send + 'static;

    /// Judges one run. Must be pure over the output folder and the run
    /// record: the host may validate a run again after a restart.
    fn validate(config: &Self::Config, run: &Run) -> Vec<Finding>;

    /// Checks what serde cannot: ranges, one key against another. Name the
    /// key in the error ([`ConfigError::at`]) and say what to do. (The same
    /// name in every plugin kind: policies, validators and notifiers.)
    fn check_config(config: &Self::Config) -> Result<(), ConfigError> {
        #[allow(deprecated)]
        Self::check(config)
    }

    /// The earlier name of [`Validator::check_config`] (when both are implemented,
    /// `check_config` runs and this does not), still called when a
    /// validator implements only this; implement `check_config` instead.
    #[deprecated(since = "0.2.0", note = "implement `check_config` instead")]
    fn check(config: &Self::Config) -> Result<(), ConfigError> {
        let _ = config;
        Ok(())
    }

    /// Turns the config text into [`Validator::Config`]: TOML by default
    /// ([`config::from_toml`](crate::config::from_toml)). Override it only
    /// for a config that is not TOML.
    fn parse(text: &str) -> Result<Self::Config, ConfigError> {
        crate::config::from_toml(text)
    }

    /// Reads a configuration exactly as the host's `configure` does:
    /// [`Validator::parse`], then [`Validator::check_config`]. Native tests call
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

/// The earlier, per-kind name of [`Validator::configure`]; call
/// `V::configure(text)` instead (the same name in every plugin kind).
#[deprecated(
    since = "0.2.0",
    note = "call `Validator::configure` (`MyPlugin::configure(text)`) instead"
)]
pub fn configure_validator<V: Validator>(text: &str) -> Result<V::Config, ConfigError> {
    V::configure(text)
}

/// The machinery [`export_validator!`](crate::export_validator) expands to;
/// not for plugin code.
pub mod private {
    use super::{Finding, Run, Validator};
    use crate::__private::ConfigSlot;
    use crate::{ConfigError, validator_abi as abi};

    /// The exported `configure`: parse, check, keep.
    pub fn configure_into<V: Validator>(
        slot: &ConfigSlot<V::Config>,
        text: &str,
    ) -> Result<(), ConfigError> {
        let config = V::configure(text)?;
        *slot.lock() = Some(config);
        Ok(())
    }

    /// The exported `validate` on the SDK's types: the kept configuration
    /// (the defaults if the host never configured the validator) and the
    /// run, into [`Validator::validate`]. A validator whose configuration
    /// cannot be had answers one error finding saying so.
    pub fn validate_with<V: Validator>(slot: &ConfigSlot<V::Config>, run: &Run) -> Vec<Finding> {
        let mut config = slot.lock();
        if config.is_none() {
            match V::configure("") {
                Ok(c) => *config = Some(c),
                Err(e) => {
                    return vec![Finding::about_run(
                        super::Severity::Error,
                        format!(
                            "the validator was not configured, and it needs a configuration: {}",
                            e.message
                        ),
                    )];
                }
            }
        }
        match config.as_ref() {
            Some(c) => V::validate(c, run),
            None => Vec::new(),
        }
    }

    /// The exported `validate` on the contract's own types: the run read
    /// into a [`Run`] rooted at `/output`, [`validate_with`], the findings
    /// written back.
    pub fn validate_abi<V: Validator>(
        slot: &ConfigSlot<V::Config>,
        run: abi::Run,
    ) -> abi::Validation {
        let run = Run::from_abi(run);
        abi::Validation {
            findings: validate_with::<V>(slot, &run)
                .into_iter()
                .map(Finding::into_abi)
                .collect(),
        }
    }
}

/// Exports a [`Validator`] as the component's
/// `nightjar:plugin/validate@0.2.3` interface (world `result-validator`) and
/// writes the API version into its `nightjar-api-version` custom section (on
/// wasm only: natively the same crate builds for unit tests, and the macro
/// only checks that the type is a [`Validator`]).
#[macro_export]
macro_rules! export_validator {
    ($validator:ty) => {
        const _: fn() = || {
            fn is_a_validator<V: $crate::Validator>() {}
            is_a_validator::<$validator>();
        };

        $crate::api_version_section!();

        #[cfg(target_arch = "wasm32")]
        const _: () = {
            static CONFIG: $crate::__private::ConfigSlot<
                <$validator as $crate::Validator>::Config,
            > = $crate::__private::ConfigSlot::new();

            struct Export;

            impl $crate::validator_abi::Guest for Export {
                fn configure(
                    text: ::std::string::String,
                ) -> ::std::result::Result<(), $crate::ConfigError> {
                    $crate::__private_validator::configure_into::<$validator>(&CONFIG, &text)
                }

                fn validate(run: $crate::validator_abi::Run) -> $crate::validator_abi::Validation {
                    $crate::__private_validator::validate_abi::<$validator>(&CONFIG, run)
                }
            }

            $crate::validator_bindings::__export_result_validator!(
                Export with_types_in $crate::validator_bindings
            );
        };
    };
}

#[cfg(test)]
mod tests;
