//! Server-Sent Events: `GET /api/v2/events` (a `changed` event each time
//! the daemon's `changes` counter moves, at most one per 250 ms, and a
//! `: keep-alive` comment every 15 s; no timer of its own at idle) and
//! `GET /api/v2/logs/{id}` (a run's log, one `data:` event per line,
//! through the `logs` verb's handler, until the run ends). At most
//! `http.max_streams` streams are open at once (one more is answered 503),
//! and at most `http.max_streams_per_user` of one user (429): one token
//! holder cannot take every slot.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Extension;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::stream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::api::{error_response, status_of};
use super::auth::TokenOf;
use crate::access::Caller;
use crate::api::Api;
use crate::api::{ErrorKind, LogChunk, LogCursor, Logs};
use crate::sync::LockUnpoisoned;

/// At most one `changed` event per this period.
pub const COALESCE: Duration = Duration::from_millis(250);
/// A comment this often keeps proxies from closing an idle stream.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// How often a followed log of a running task is read again.
const FOLLOW_EVERY: Duration = Duration::from_millis(500);
/// A line longer than this is sent in pieces.
const MAX_LINE: usize = 64 * 1024;

/// The open streams' slots (a router layer): all together, and by user.
#[derive(Debug, Clone)]
pub struct Streams {
    all: Arc<Semaphore>,
    by_user: Arc<std::sync::Mutex<HashMap<u32, usize>>>,
}

impl Streams {
    /// Room for `max` streams at once.
    pub fn new(max: usize) -> Streams {
        Streams {
            all: Arc::new(Semaphore::new(max)),
            by_user: Arc::default(),
        }
    }
}

/// A stream's place: one of all the slots, and one of its user's.
pub struct Slot {
    _all: OwnedSemaphorePermit,
    uid: u32,
    by_user: Arc<std::sync::Mutex<HashMap<u32, usize>>>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut m = self.by_user.lock_unpoisoned();
        if let Some(n) = m.get_mut(&self.uid) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                m.remove(&self.uid);
            }
        }
    }
}

/// A stream's slot for `caller`, or the 429 (their share is taken) or 503
/// (every slot is) saying there is none.
fn slot(streams: &Streams, d: &Api, caller: &Caller) -> Result<Slot, Box<Response>> {
    let (max, per_user) = (
        d.config().http.max_streams,
        d.config().http.max_streams_per_user,
    );
    {
        let mut m = streams.by_user.lock_unpoisoned();
        let n = m.entry(caller.uid).or_insert(0);
        if *n >= per_user {
            return Err(Box::new(error_response(
                StatusCode::TOO_MANY_REQUESTS,
                ErrorKind::Unavailable,
                &format!(
                    "too many streams of {}: at most {per_user} of one user at once (`http.max_streams_per_user`); close one first",
                    caller.name
                ),
            )));
        }
        *n += 1;
    }
    let taken = Slot {
        // Filled below; a failure drops the user's count again.
        _all: match Arc::clone(&streams.all).try_acquire_owned() {
            Ok(p) => p,
            Err(_) => {
                let mut m = streams.by_user.lock_unpoisoned();
                if let Some(n) = m.get_mut(&caller.uid) {
                    *n = n.saturating_sub(1);
                }
                return Err(Box::new(error_response(
                    StatusCode::SERVICE_UNAVAILABLE,
                    ErrorKind::Unavailable,
                    &format!(
                        "too many streams: at most {max} at once (`http.max_streams`); try again shortly"
                    ),
                )));
            }
        },
        uid: caller.uid,
        by_user: Arc::clone(&streams.by_user),
    };
    Ok(taken)
}

/// The `changed` event's data: the counter and the top-level tasks by state.
fn summary(d: &Api, changes: u64) -> String {
    let counts: BTreeMap<String, i64> = d.state_counts().into_iter().collect();
    serde_json::json!({ "changes": changes, "counts": counts }).to_string()
}

/// `GET /api/v2/events`.
pub async fn events(
    State(d): State<Api>,
    Extension(streams): Extension<Streams>,
    token: Option<Extension<TokenOf>>,
    caller: Option<Extension<Caller>>,
) -> Response {
    let Some(Extension(caller)) = caller else {
        return error_response(StatusCode::UNAUTHORIZED, ErrorKind::Forbidden, "no caller");
    };
    // A halted daemon answers nothing but `ping` (as `Api::call` says for
    // every verb), streams included.
    if let Some(why) = d.halted() {
        return error_response(
            StatusCode::SERVICE_UNAVAILABLE,
            ErrorKind::Unavailable,
            &format!("the daemon halted: {why}"),
        );
    }
    let token = token.map_or(TokenOf(None), |Extension(t)| t);
    let permit = match slot(&streams, &d, &caller) {
        Ok(p) => p,
        Err(r) => return *r,
    };
    let rx = d.changes();
    let s = stream::unfold(
        (d, rx, permit, true, token),
        |(d, mut rx, permit, first, token)| async move {
            if !first {
                // Coalesce: whatever changes meanwhile is one event after this.
                tokio::time::sleep(COALESCE).await;
                // At idle, wake once a keep-alive period to see that the
                // token was not revoked meanwhile (then the stream ends).
                loop {
                    tokio::select! {
                        r = rx.changed() => { r.ok()?; break; }
                        _ = tokio::time::sleep(KEEP_ALIVE) => {
                            if !token.still_valid(&d) {
                                return None;
                            }
                        }
                    }
                }
            }
            if !token.still_valid(&d) || d.halted().is_some() {
                return None;
            }
            let n = *rx.borrow_and_update();
            let ev = Event::default().event("changed").data(summary(&d, n));
            Some((Ok::<_, Infallible>(ev), (d, rx, permit, false, token)))
        },
    );
    Sse::new(s)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE).text("keep-alive"))
        .into_response()
}

/// Where a log stream is.
struct Follow {
    d: Api,
    caller: Caller,
    /// Checked before each read: a revoked token ends the stream.
    token: TokenOf,
    req: Logs,
    follow: bool,
    partial: Vec<u8>,
    pending: VecDeque<Event>,
    done: bool,
    _permit: Slot,
}

/// One read through the `logs` verb's handler: the chunk, or the error's
/// kind and message.
async fn read(d: &Api, caller: &Caller, req: &Logs) -> Result<LogChunk, (ErrorKind, String)> {
    d.call(caller, req.clone())
        .await
        .map_err(|e| (e.kind, e.message))
}

impl Follow {
    /// Takes a chunk: its complete lines become events.
    fn take(&mut self, c: &LogChunk) {
        if c.missed {
            self.pending.push_back(
                Event::default()
                    .event("missed")
                    .data("earlier output was rotated away unread"),
            );
        }
        self.req.cursor = Some(c.cursor);
        self.partial.extend_from_slice(&c.bytes());
        while let Some(i) = self.partial.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=i).collect();
            self.push(&line[..line.len() - 1]);
        }
        if self.partial.len() > MAX_LINE {
            let line = std::mem::take(&mut self.partial);
            self.push(&line);
        }
        let ended = c.data.is_empty() && (!c.running || !self.follow);
        if ended {
            self.finish(None);
        }
    }

    fn push(&mut self, line: &[u8]) {
        let text = String::from_utf8_lossy(line);
        self.pending
            .push_back(Event::default().data(text.trim_end_matches('\r')));
    }

    /// The last events: a partial line, then `end` (or `error`).
    fn finish(&mut self, error: Option<String>) {
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            self.push(&line);
        }
        self.pending.push_back(match error {
            Some(e) => Event::default().event("error").data(e),
            None => Event::default().event("end").data("the run ended"),
        });
        self.done = true;
    }

    async fn next(mut self) -> Option<(Result<Event, Infallible>, Follow)> {
        loop {
            if let Some(ev) = self.pending.pop_front() {
                return Some((Ok(ev), self));
            }
            if self.done {
                return None;
            }
            if !self.token.still_valid(&self.d) {
                self.finish(Some("the token was revoked".into()));
                continue;
            }
            match read(&self.d, &self.caller, &self.req).await {
                Ok(c) => {
                    let idle = c.data.is_empty() && c.running && self.follow;
                    self.take(&c);
                    if idle {
                        tokio::time::sleep(FOLLOW_EVERY).await;
                    }
                }
                Err((_, e)) => self.finish(Some(e)),
            }
        }
    }
}

/// A flag in a query: present and not `0`/`false`.
fn flag(q: &HashMap<String, String>, key: &str) -> bool {
    q.get(key)
        .is_some_and(|v| !matches!(v.as_str(), "0" | "false" | "no"))
}

/// `GET /api/v2/logs/{id}?stderr=1&attempt=N&follow=1`.
pub async fn logs(
    State(d): State<Api>,
    Extension(streams): Extension<Streams>,
    caller: Option<Extension<Caller>>,
    token: Option<Extension<TokenOf>>,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let Some(Extension(caller)) = caller else {
        return error_response(StatusCode::UNAUTHORIZED, ErrorKind::Forbidden, "no caller");
    };
    let bad = |what: &str| error_response(StatusCode::BAD_REQUEST, ErrorKind::BadRequest, what);
    let Ok(id) = id.parse::<i64>() else {
        return bad("the task id must be a number: /api/v2/logs/ID");
    };
    let attempt = match q.get("attempt").filter(|a| !a.is_empty()) {
        None => None,
        Some(a) => match a.parse::<i64>() {
            Ok(n) => Some(n),
            Err(_) => return bad("`attempt` must be a number"),
        },
    };
    let req = Logs {
        id,
        attempt,
        stderr: flag(&q, "stderr"),
        cursor: None::<LogCursor>,
        tail: None,
    };
    let permit = match slot(&streams, &d, &caller) {
        Ok(p) => p,
        Err(r) => return *r,
    };
    // Access is checked here, once: a refusal is a status, not an event.
    let first = match read(&d, &caller, &req).await {
        Ok(c) => c,
        Err((kind, e)) => return error_response(status_of(kind), kind, &e),
    };
    let mut f = Follow {
        token: token.map_or(TokenOf(None), |Extension(t)| t),
        d,
        caller,
        req,
        follow: flag(&q, "follow"),
        partial: Vec::new(),
        pending: VecDeque::new(),
        done: false,
        _permit: permit,
    };
    f.take(&first);
    Sse::new(stream::unfold(f, Follow::next))
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE).text("keep-alive"))
        .into_response()
}
