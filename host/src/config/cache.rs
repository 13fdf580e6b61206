//! `[cache]`: how a task completed from the result cache gets its outputs.

use serde::{Deserialize, Serialize};

/// How the earlier run's outputs reach a cached completion's output folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheOutputs {
    /// Hard links to the earlier run's files (a copy where the two folders
    /// are on different file systems): no space, no time.
    #[default]
    Link,
    /// Copies: the two runs' files are independent.
    Copy,
}

/// The result cache's settings.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CacheConfig {
    /// `link` (default) or `copy`.
    pub outputs: CacheOutputs,
}
