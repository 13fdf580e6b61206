//! `nightjar report`: a period's accounting computed from the store
//! (`compute`), and the self-contained HTML page with its charts (`render`).

pub mod charts;
pub mod compute;
pub mod render;
