//! The daemon's side of the socket: one typed reply per request line. Every
//! submission is checked here again, exactly as the CLI checks it.

use std::sync::Arc;

use serde::Deserialize;

use super::access::Caller;
use super::control::{self, Change};
pub use super::listen::serve;
use super::{ApiError, Call, ErrorKind, Identity, PROTOCOL, Pong, ReplyLine, Request, RequestLine};
use crate::daemon::Daemon;
use crate::time::now_ms;

/// The reply line (without its newline) to one request line from `caller`.
pub async fn answer(daemon: &Arc<Daemon>, caller: &Caller, line: &[u8]) -> Vec<u8> {
    match parse(line) {
        Ok(req) => dispatch(daemon, caller, req).await,
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

/// The reply line of request type `C`: its handler must produce `C::Reply`.
fn reply<C: Call>(r: anyhow::Result<C::Reply>) -> Vec<u8> {
    match r {
        Ok(v) => serde_json::to_vec(&ReplyLine::ok(v)).unwrap_or_else(|e| {
            error_line(ApiError::new(
                ErrorKind::Internal,
                format!("cannot encode the reply: {e}"),
            ))
        }),
        Err(e) => error_line(super::error_kind::classify(e)),
    }
}

/// Runs `f` off the runtime's thread (it reads files, hashes inputs or
/// walks folders); `what` names it if it panics.
async fn blocking<T: Send + 'static>(
    what: &str,
    f: impl FnOnce() -> anyhow::Result<T> + Send + 'static,
) -> anyhow::Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| anyhow::anyhow!("the {what} did not finish: {e}"))
        .and_then(|r| r)
}

/// Answers one request from `caller`. Reading the queue, `why`, the GPUs,
/// the plugins and reports is open to every caller; changing a task is
/// for its owner or an administrator; what is lab-wide (plugins, gc,
/// notifiers, priorities) is for administrators.
///
/// A halted daemon answers nothing but `ping`, saying why; the reply to a
/// change is sent only once the change is on disk (`daemon/durable.rs`).
pub async fn dispatch(d: &Arc<Daemon>, caller: &Caller, req: Request) -> Vec<u8> {
    let halted = |why: &str| {
        error_line(ApiError::new(
            ErrorKind::Unavailable,
            format!(
                "the daemon halted: {why}. Running tasks keep running; stop the daemon, then restore the database or run `nightjar daemon recover`"
            ),
        ))
    };
    let ping = matches!(req, Request::Ping(_));
    if let Some(why) = d.halted()
        && !ping
    {
        return halted(why);
    }
    // What only reads is answered without waiting for the store's lock
    // (a writer may be waiting on a busy database behind it).
    let reads = req.reads_only();
    let line = handle(d, caller, req).await;
    if !reads && !d.flushed() {
        let me = Arc::clone(d);
        let ok = tokio::task::spawn_blocking(move || me.durable())
            .await
            .unwrap_or(false);
        if !ok && !ping {
            return halted(
                d.halted()
                    .unwrap_or("the database's log could not be flushed"),
            );
        }
    }
    line
}

async fn handle(d: &Arc<Daemon>, caller: &Caller, req: Request) -> Vec<u8> {
    let now = now_ms();
    let me = Arc::clone(d);
    let who = caller.clone();
    match req {
        Request::Ping(_) => reply::<super::Ping>(Ok(Pong {
            pid: std::process::id(),
            version: env!("CARGO_PKG_VERSION").into(),
            protocol: PROTOCOL,
        })),
        Request::Whoami(_) => reply::<super::Whoami>(Ok(Identity {
            uid: caller.uid,
            user: caller.name.clone(),
            admin: caller.admin,
            multi_user: d.access.multi_user(),
        })),
        Request::Submit(r) => reply::<super::Submit>(
            blocking("submission", move || {
                super::submit::submit(&me, &who, r.entries, r.verify, now)
            })
            .await,
        ),
        Request::Rerun(r) => reply::<super::Rerun>(
            blocking("rerun", move || super::rerun_diff::rerun(&me, &who, &r)).await,
        ),
        Request::Diff(r) => reply::<super::Diff>(super::rerun_diff::pair(d, caller, r.a, r.b)),
        Request::Report(r) => reply::<super::Report>(
            blocking("report", move || super::report_handler::report(&me, &r)).await,
        ),
        // Off the runtime's thread: a long listing does not hold up the
        // requests behind it.
        Request::List(r) => reply::<super::List>(
            blocking("listing", move || {
                let mut rows = me.reader().list(&r.filter, r.limit)?;
                rows.iter_mut().for_each(|t| me.live_reason(t));
                Ok(rows)
            })
            .await,
        ),
        Request::ListCount(r) => reply::<super::ListCount>(
            blocking("listing count", move || {
                Ok(me.reader().list_count(&r.filter)?)
            })
            .await,
        ),
        Request::Show(r) => reply::<super::Show>(super::show::show(d, caller, r.id)),
        Request::Logs(r) => reply::<super::Logs>(
            blocking("log read", move || super::log_chunk::logs(&me, &who, &r)).await,
        ),
        Request::Cancel(r) => reply::<super::Cancel>(control::cancel(d, caller, r.id)),
        Request::Hold(r) => reply::<super::Hold>(control::change(d, caller, r.id, Change::Hold)),
        Request::Release(r) => {
            reply::<super::Release>(control::change(d, caller, r.id, Change::Release))
        }
        Request::Retry(r) => reply::<super::Retry>(control::change(
            d,
            caller,
            r.id,
            Change::Retry {
                no_cache: r.no_cache,
            },
        )),
        Request::Priority(r) => {
            reply::<super::Priority>(control::priority(d, caller, r.id, r.priority))
        }
        // Administrators read the whole log; a user, what they did and
        // what was done to their tasks (who cancelled my task?).
        Request::Audit(r) => reply::<super::Audit>(
            d.store()
                .audit_log(
                    r.since,
                    r.limit.unwrap_or(1000),
                    (!caller.admin).then_some((caller.uid, d.access.daemon_uid)),
                )
                .map_err(Into::into),
        ),
        Request::Gc(r) => reply::<super::Gc>(match d.access.admin_only(caller, "`gc`") {
            // Removing outputs can take minutes: off the runtime's thread,
            // so the socket keeps answering meanwhile.
            Ok(()) => {
                blocking("collection", move || {
                    let report = me.gc(r.dry_run)?;
                    if !r.dry_run {
                        control::audit(&me, &who, "gc", None, report.summary());
                    }
                    Ok(report)
                })
                .await
            }
            Err(e) => Err(e.into()),
        }),
        Request::NotifyList(_) => reply::<super::NotifyList>(
            admin(d, caller, "reading the notifiers' dead letters").and_then(|_| d.notify_report()),
        ),
        Request::NotifyRetry(r) => reply::<super::NotifyRetry>((|| {
            admin(d, caller, "`notify retry`")?;
            let n = d.notify_retry(r.id)?;
            d.changed();
            Ok(super::Changed { tasks: n })
        })()),
        Request::NotifyTest(r) => {
            reply::<super::NotifyTest>(match admin(d, caller, "`notify test`") {
                Ok(()) => blocking("test", move || me.notify_test(&r.name)).await,
                Err(e) => Err(e),
            })
        }
        Request::NotifyDigest(_) => {
            reply::<super::NotifyDigest>(admin(d, caller, "`notify digest`").and_then(|_| {
                d.digest_now()
                    .map(|(from, to)| super::DigestWritten { from, to })
            }))
        }
        Request::Wait(r) => reply::<super::Wait>(super::wait::wait(d, &r.ids).await),
        Request::Plugins(_) => reply::<super::Plugins>(Ok(d.plugin_views())),
        Request::Why(r) => reply::<super::Why>(d.why(r.id)),
        Request::PluginsReload(_) => {
            reply::<super::PluginsReload>(match admin(d, caller, "reloading plugins") {
                Ok(()) => d.reload_plugins().await.inspect(|changes| {
                    let detail = changes.iter().map(|c| c.to_string()).collect::<Vec<_>>();
                    control::audit(d, caller, "plugins-reload", None, detail.join("; "));
                }),
                Err(e) => Err(e),
            })
        }
        Request::TokenCreate(r) => reply::<super::TokenCreate>(
            blocking("token", move || crate::http::tokens::create(&me, &who, &r)).await,
        ),
        Request::TokenList(_) => reply::<super::TokenList>(crate::http::tokens::list(d, caller)),
        Request::TokenRevoke(r) => {
            reply::<super::TokenRevoke>(crate::http::tokens::revoke(d, caller, &r))
        }
        Request::Gpus(_) => reply::<super::Gpus>({
            let mut views = d.gpu_views();
            let store = d.store();
            for v in &mut views {
                v.tasks = v
                    .runs
                    .iter()
                    .filter_map(|r| store.run(*r).ok().map(|r| r.task_id))
                    .collect();
            }
            Ok(views)
        }),
    }
}

/// Refuses a caller who is not an administrator.
fn admin(d: &Daemon, caller: &Caller, what: &str) -> anyhow::Result<()> {
    Ok(d.access.admin_only(caller, what)?)
}
