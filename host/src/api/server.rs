//! The protocol's lines: a request line read into its typed request, sent
//! through [`Api::call`], and its reply written back as one line (the
//! socket's, and the HTTP API's bodies). Every submission is checked by its
//! handler again, exactly as the CLI checks it.

use serde::{Deserialize, Serialize};

pub use super::listen::serve;
use super::{Api, ApiError, ErrorKind, PROTOCOL, ReplyLine, Request, RequestLine};
use crate::access::Caller;

/// The reply line (without its newline) to one request line from `caller`.
pub async fn answer(api: &Api, caller: &Caller, line: &[u8]) -> Vec<u8> {
    match parse(line) {
        Ok(req) => route(api, caller, req).await,
        Err(e) => error_line(e),
    }
}

/// The request on a line, or why it is not one of this protocol.
pub fn parse(line: &[u8]) -> Result<Request, ApiError> {
    match serde_json::from_slice::<RequestLine>(line) {
        Ok(l) if l.v == PROTOCOL => Ok(l.req),
        Ok(l) => Err(ApiError::version_mismatch(Some(l.v))),
        Err(e) => {
            #[derive(Deserialize)]
            struct Head {
                #[serde(default)]
                v: Option<u32>,
            }
            match serde_json::from_slice::<Head>(line) {
                Ok(Head { v: Some(PROTOCOL) }) => Err(ApiError::new(
                    ErrorKind::BadRequest,
                    format!("bad request: {e}"),
                )),
                Ok(Head { v }) => Err(ApiError::version_mismatch(v)),
                Err(_) => Err(ApiError::new(
                    ErrorKind::BadRequest,
                    format!("bad request: {e}"),
                )),
            }
        }
    }
}

/// An error reply line.
pub fn error_line(e: ApiError) -> Vec<u8> {
    serde_json::to_vec(&ReplyLine::<()>::err(e)).unwrap_or_default()
}

/// A reply line: the value, or the error with its kind.
fn line<T: Serialize>(r: Result<T, ApiError>) -> Vec<u8> {
    match r {
        Ok(v) => serde_json::to_vec(&ReplyLine::ok(v)).unwrap_or_else(|e| {
            error_line(ApiError::new(
                ErrorKind::Internal,
                format!("cannot encode the reply: {e}"),
            ))
        }),
        Err(e) => error_line(e),
    }
}

/// The reply line to `req` from `caller`, through [`Api::call`].
pub async fn route(api: &Api, caller: &Caller, req: Request) -> Vec<u8> {
    // One arm per verb: the match is exhaustive, so a new verb without a
    // handler does not compile.
    macro_rules! each {
        ($($verb:ident),* $(,)?) => {
            match req {
                $(Request::$verb(r) => line(api.call(caller, r).await),)*
            }
        };
    }
    each!(
        Ping,
        Submit,
        TaskList,
        TaskCount,
        Show,
        Queue,
        Runs,
        Cancel,
        Hold,
        Release,
        Retry,
        Why,
        Forecast,
        GpuList,
        PluginList,
        PluginReload,
        Gc,
        Wait,
        WaitProgress,
        NotifyList,
        NotifyRetry,
        NotifyTest,
        NotifyDigest,
        Rerun,
        Diff,
        Report,
        RunTrace,
        Logs,
        Whoami,
        Priority,
        Audit,
        TokenCreate,
        TokenList,
        TokenRevoke,
    )
}
