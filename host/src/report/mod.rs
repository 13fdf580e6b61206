//! `nightjar report`: a period's accounting computed from the store
//! (`compute`, with `groups` and `series`, and the time arithmetic of
//! `clock`), and the self-contained HTML page with its charts (`render`).

/// The bar charts.
pub mod bars;
/// The time charts and what every chart shares.
pub mod charts;
pub mod clock;
pub mod compute;
pub mod groups;
pub mod render;
pub mod series;
pub mod timeline;
