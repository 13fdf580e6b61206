//! What the API's handlers read that needs more than the store: `why`, and
//! the forecast of when waiting tasks start (`estimate`).

pub(in crate::daemon) mod forecast;
mod forecast_rows;
mod metrics;
pub(in crate::daemon) mod why;
