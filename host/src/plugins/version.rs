//! Which version of the contract a component implements. The interface it
//! exports decides (`nightjar:plugin/policy@0.1.0`, `@0.2.0`, `@0.2.1` or
//! `@0.2.2`, 0.2.2's `nightjar:plugin/incremental-policy@0.2.2`, or 0.2.3's
//! `nightjar:plugin/delta-policy@0.2.3`): that is what the host calls. The `nightjar-api-version` custom section the SDK
//! writes is read too and shown; where it disagrees with the exports, the
//! exports win and a note says so.

use super::policy::PluginError;

/// The exported interface a scheduling policy implements, without version.
pub const POLICY_INTERFACE: &str = "nightjar:plugin/policy";

/// The interface an incremental policy exports (0.2.2 on).
pub const INCREMENTAL_INTERFACE: &str = "nightjar:plugin/incremental-policy";

/// The interface a delta policy exports (0.2.3 on).
pub const DELTA_INTERFACE: &str = "nightjar:plugin/delta-policy";

/// Which of the scheduling-policy interfaces a component exports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exported {
    /// `policy` (0.1.0 on): the whole snapshot each pass.
    Policy,
    /// `incremental-policy` (0.2.2 on): changes in, score columns out.
    Incremental,
    /// `delta-policy` (0.2.3 on): every part of the snapshot by difference.
    Delta,
}

impl Exported {
    /// Every interface, as `from_exports` looks for them.
    const ALL: [Exported; 3] = [Exported::Policy, Exported::Incremental, Exported::Delta];

    /// The interface's name, without version.
    pub fn interface(self) -> &'static str {
        match self {
            Exported::Policy => POLICY_INTERFACE,
            Exported::Incremental => INCREMENTAL_INTERFACE,
            Exported::Delta => DELTA_INTERFACE,
        }
    }

    /// The world that exports it.
    pub fn world(self) -> &'static str {
        match self {
            Exported::Policy => "scheduling-policy",
            Exported::Incremental => "incremental-scheduling-policy",
            Exported::Delta => "delta-scheduling-policy",
        }
    }

    /// The name's last part (`delta-policy`), for messages.
    fn short(self) -> &'static str {
        self.interface().trim_start_matches("nightjar:plugin/")
    }

    /// The first version that has it.
    fn since(self) -> ApiVersion {
        match self {
            Exported::Policy => ApiVersion::V0_1_0,
            Exported::Incremental => ApiVersion::V0_2_2,
            Exported::Delta => ApiVersion::V0_2_3,
        }
    }
}

/// The custom section in which the SDK writes the version it built for.
pub const SECTION: &str = "nightjar-api-version";

/// Longest version text read from the section; the rest is cut.
const MAX_DECLARED: usize = 32;

/// A version of the contract this host loads: one per released folder
/// under `wit/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ApiVersion {
    /// `nightjar:plugin@0.1.0` (`wit/nightjar-plugin@0.1.0`).
    V0_1_0,
    /// `nightjar:plugin@0.2.0` (`wit/nightjar-plugin@0.2.0`): the compact
    /// snapshot, policies only.
    V0_2_0,
    /// `nightjar:plugin@0.2.1` (`wit/nightjar-plugin@0.2.1`): 0.2.0 plus the
    /// `tariff` import and the validator and notifier worlds.
    V0_2_1,
    /// `nightjar:plugin@0.2.2` (`wit/nightjar-plugin@0.2.2`): 0.2.1 plus the
    /// incremental policy (`incremental-scheduling-policy`).
    V0_2_2,
    /// `nightjar:plugin@0.2.3` (`wit/nightjar-plugin@0.2.3`): 0.2.2 plus the
    /// delta policy (`delta-scheduling-policy`).
    V0_2_3,
}

/// The code that calls a version: each adapter converts the host's model
/// to and from the versions it serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Adapter {
    /// `plugins::v0_1`: the 0.1 bindings.
    V0_1,
    /// `plugins::v0_2`: the 0.2.3 bindings of `policy`, which also call
    /// 0.2.0 to 0.2.2 components (wasmtime matches their names to
    /// `@0.2.3` ones by semver, and each 0.2.x only adds to the one before).
    V0_2,
    /// `plugins::incremental`: 0.2.2's incremental policy, changes in and
    /// score columns out.
    Incremental,
    /// `plugins::delta`: 0.2.3's delta policy.
    Delta,
}

impl ApiVersion {
    /// Every version this host loads, oldest first.
    pub const ALL: [ApiVersion; 5] = [
        ApiVersion::V0_1_0,
        ApiVersion::V0_2_0,
        ApiVersion::V0_2_1,
        ApiVersion::V0_2_2,
        ApiVersion::V0_2_3,
    ];

    /// The newest: the one the SDK builds and `wit/` adds to next.
    pub const LATEST: ApiVersion = ApiVersion::V0_2_3;

    /// The version as WIT spells it (`0.2.0`).
    pub fn as_str(self) -> &'static str {
        match self {
            ApiVersion::V0_1_0 => "0.1.0",
            ApiVersion::V0_2_0 => "0.2.0",
            ApiVersion::V0_2_1 => "0.2.1",
            ApiVersion::V0_2_2 => "0.2.2",
            ApiVersion::V0_2_3 => "0.2.3",
        }
    }

    /// The adapter that calls components of this version.
    pub fn adapter(self) -> Adapter {
        match self {
            ApiVersion::V0_1_0 => Adapter::V0_1,
            ApiVersion::V0_2_0 | ApiVersion::V0_2_1 | ApiVersion::V0_2_2 | ApiVersion::V0_2_3 => {
                Adapter::V0_2
            }
        }
    }

    /// The version spelt `text`, if this host loads it.
    pub fn parse(text: &str) -> Option<ApiVersion> {
        ApiVersion::ALL.into_iter().find(|v| v.as_str() == text)
    }

    /// Every version this host loads, for messages (`0.1.0, 0.2.0, 0.2.1`).
    pub fn supported() -> String {
        ApiVersion::ALL.map(ApiVersion::as_str).join(", ")
    }

    /// The version of the interface `interface` (`nightjar:plugin/validate`)
    /// among a component's export names, if it exports one this host loads.
    pub fn exported<'a>(
        interface: &str,
        names: impl IntoIterator<Item = &'a str>,
    ) -> Option<ApiVersion> {
        let prefix = format!("{interface}@");
        names
            .into_iter()
            .filter_map(|n| n.strip_prefix(&prefix))
            .find_map(ApiVersion::parse)
    }
}

impl std::fmt::Display for ApiVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a component is, as far as versions go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detected {
    /// The version the host calls it as: the one it exports.
    pub api: ApiVersion,
    /// Which policy interface it exports.
    pub exported: Exported,
    /// What its `nightjar-api-version` section says, if it has one (files
    /// built before 0.2, or without the SDK, have none).
    pub declared: Option<String>,
}

impl Detected {
    /// The adapter that calls it.
    pub fn adapter(&self) -> Adapter {
        match self.exported {
            Exported::Policy => self.api.adapter(),
            Exported::Incremental => Adapter::Incremental,
            Exported::Delta => Adapter::Delta,
        }
    }

    /// A note when the section disagrees with the exports.
    pub fn note(&self) -> Option<String> {
        let declared = self.declared.as_deref()?;
        let interface = self.exported.interface();
        (declared != self.api.as_str()).then(|| {
            format!(
                "its {SECTION} section says {declared:?} but it exports {interface}@{}: the exported interface wins",
                self.api
            )
        })
    }
}

/// The version a component with these export names implements, and which
/// policy interface it exports (its `declared` is left empty).
pub fn from_exports<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<Detected, PluginError> {
    let names: Vec<&str> = names.into_iter().collect();
    let found: Vec<(&str, Exported)> = names
        .iter()
        .filter_map(|n| {
            Exported::ALL.into_iter().find_map(|e| {
                n.strip_prefix(e.interface())
                    .and_then(|rest| rest.strip_prefix('@'))
                    .map(|v| (v, e))
            })
        })
        .collect();
    match found.as_slice() {
        [] => {
            let listed = if names.is_empty() {
                "nothing".to_string()
            } else {
                names
                    .iter()
                    .take(8)
                    .map(|n| format!("`{}`", n.escape_debug()))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            Err(PluginError::World(format!(
                "exports no `{POLICY_INTERFACE}@VERSION`, `{INCREMENTAL_INTERFACE}@VERSION` or `{DELTA_INTERFACE}@VERSION` interface, so it is not a scheduling policy (it exports {listed}); this host loads versions {}",
                ApiVersion::supported()
            )))
        }
        [(one, exported)] => {
            let api = ApiVersion::parse(one)
                // An interface is found only in the versions that have it.
                .filter(|v| *v >= exported.since())
                .ok_or_else(|| PluginError::Version {
                    found: format!("{}@{}", exported.short(), one.escape_debug()),
                    supported: ApiVersion::supported(),
                })?;
            Ok(Detected {
                api,
                exported: *exported,
                declared: None,
            })
        }
        many => Err(PluginError::World(format!(
            "exports a policy interface {} times ({}); a plugin implements exactly one, so the host cannot tell which to call",
            many.len(),
            many.iter()
                .map(|(v, e)| format!("{}@{}", e.short(), v.escape_debug()))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// What the component's `nightjar-api-version` custom section says (the
/// first one, in the component or any module in it), cut to 32 printable
/// characters.
pub fn declared(wasm: &[u8]) -> Option<String> {
    for payload in wasmparser::Parser::new(0).parse_all(wasm) {
        let Ok(payload) = payload else {
            return None;
        };
        if let wasmparser::Payload::CustomSection(c) = payload
            && c.name() == SECTION
        {
            let text = String::from_utf8_lossy(c.data());
            return Some(
                text.trim()
                    .chars()
                    .take(MAX_DECLARED)
                    .filter(|c| !c.is_control())
                    .collect(),
            );
        }
    }
    None
}

/// The version `component` exports `interface` (`nightjar:plugin/validate`)
/// at, as the component spells it (`0.2.0`), if it exports it at all.
pub fn exported_at(
    engine: &wasmtime::Engine,
    component: &wasmtime::component::Component,
    interface: &str,
) -> Option<String> {
    let prefix = format!("{interface}@");
    let ty = component.component_type();
    ty.exports(engine)
        .find_map(|(name, _)| name.strip_prefix(&prefix).map(str::to_string))
}

/// The version of `component` (from its exports) and what its section says.
pub fn detect(
    engine: &wasmtime::Engine,
    component: &wasmtime::component::Component,
    wasm: &[u8],
) -> Result<Detected, PluginError> {
    let ty = component.component_type();
    let found = from_exports(ty.exports(engine).map(|(name, _)| name))?;
    Ok(Detected {
        declared: declared(wasm),
        ..found
    })
}

#[cfg(test)]
#[path = "version_tests.rs"]
mod tests;
