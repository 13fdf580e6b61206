//! `nightjar report`: a period's accounting computed from the store
//! (`compute`, with `groups` and `series`, and the time arithmetic of
//! `clock`), and the self-contained HTML page with its charts (`render`).

pub mod clock;
pub mod compute;
pub mod groups;
pub mod render;
pub mod series;
