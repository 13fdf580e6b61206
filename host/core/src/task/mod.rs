//! Task definitions: the file schema, variables, schedules, and resolution
//! into a checked submission.

pub mod check;
pub mod checkpoint;
pub mod environment;
pub mod environment_def;
pub mod environment_find;
pub mod file;
pub mod grid;
pub mod model;
pub mod resolve;
pub mod retry;
pub mod schedule;
pub mod validate;
pub mod vars;
