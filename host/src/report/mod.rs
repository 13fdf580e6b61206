//! `nightjar report`: a period's accounting computed from the store
//! (`compute`), and the self-contained HTML page with its charts (`render`).

/// The bar charts.
pub mod bars;
/// The time charts and what every chart shares.
pub mod charts;
pub mod compute;
pub mod render;
