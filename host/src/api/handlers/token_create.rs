//! `token-create`: an API token for the caller, shown once (`tokens.rs`).

use std::sync::Arc;

use super::{Handler, blocking};
use crate::access::Caller;
use crate::api::{NewToken, TokenCreate};
use crate::daemon::Daemon;

impl Handler for TokenCreate {
    async fn handle(self, d: &Arc<Daemon>, caller: &Caller) -> anyhow::Result<NewToken> {
        let (d, who) = (Arc::clone(d), caller.clone());
        blocking("token", move || super::tokens::create(&d, &who, &self)).await
    }
}
