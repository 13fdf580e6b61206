//! What the API's handlers read that needs more than the store: `why`.

pub(in crate::daemon) mod why;
