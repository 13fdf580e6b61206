//! The daemon's side of the socket: one typed reply per request line. Every
//! submission is checked here again, exactly as the CLI checks it.

use std::sync::Arc;

use serde::Deserialize;

pub use super::listen::serve;
use super::{
    ApiError, Call, Cancelled, Changed, ErrorKind, PROTOCOL, Pong, ReplyLine, Request, RequestLine,
    WaitResult,
};
use crate::daemon::Daemon;
use crate::store::{StoreError, TaskState};
use crate::time::now_ms;

/// The reply line (without its newline) to one request line.
pub async fn answer(daemon: &Arc<Daemon>, line: &[u8]) -> Vec<u8> {
    match parse(line) {
        Ok(req) => dispatch(daemon, req).await,
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
        Err(e) => error_line(classify(e)),
    }
}

/// The kind of a handler's error: the store says not-found or invalid;
/// an error the handler typed itself keeps its kind.
fn classify(e: anyhow::Error) -> ApiError {
    let kind = if let Some(api) = e.downcast_ref::<ApiError>() {
        api.kind
    } else {
        match e.downcast_ref::<StoreError>() {
            Some(StoreError::NotFound(_)) => ErrorKind::NotFound,
            Some(StoreError::Sql(_) | StoreError::Json(_) | StoreError::TooNew { .. }) => {
                ErrorKind::Internal
            }
            _ => ErrorKind::Invalid,
        }
    };
    ApiError::new(kind, format!("{e:#}"))
}

async fn dispatch(d: &Arc<Daemon>, req: Request) -> Vec<u8> {
    let now = now_ms();
    match req {
        Request::Ping(_) => reply::<super::Ping>(Ok(Pong {
            pid: std::process::id(),
            version: env!("CARGO_PKG_VERSION").into(),
            protocol: PROTOCOL,
        })),
        Request::Submit(r) => {
            // Capturing the manifests runs git and hashes inputs: off the runtime's thread.
            let me = Arc::clone(d);
            let answer =
                tokio::task::spawn_blocking(move || submit(&me, &r.entries, r.verify, now))
                    .await
                    .map_err(|e| anyhow::anyhow!("the submission did not finish: {e}"))
                    .and_then(|r| r);
            reply::<super::Submit>(answer)
        }
        Request::Rerun(r) => {
            // Hashes inputs, like a submission: off the runtime's thread.
            let me = Arc::clone(d);
            let answer = tokio::task::spawn_blocking(move || super::rerun_diff::rerun(&me, &r))
                .await
                .map_err(|e| anyhow::anyhow!("the rerun did not finish: {e}"))
                .and_then(|r| r);
            reply::<super::Rerun>(answer)
        }
        Request::Diff(r) => reply::<super::Diff>(super::rerun_diff::pair(d, r.a, r.b)),
        Request::Report(r) => {
            // Reads a whole period on its own connection: off the runtime's thread.
            let me = Arc::clone(d);
            let answer =
                tokio::task::spawn_blocking(move || super::report_handler::report(&me, &r))
                    .await
                    .map_err(|e| anyhow::anyhow!("the report did not finish: {e}"))
                    .and_then(|r| r);
            reply::<super::Report>(answer)
        }
        Request::List(r) => reply::<super::List>((|| {
            let mut rows = d.store().list(&r.filter)?;
            rows.iter_mut().for_each(|t| d.live_reason(t));
            Ok(rows)
        })()),
        Request::Show(r) => reply::<super::Show>((|| {
            let mut detail = d.store().show(r.id)?;
            d.live_reason(&mut detail.task);
            if let Some(s) = &mut detail.schedule {
                s.timezone = d.cfg.timezone.clone();
                s.next_there = detail.task.next_fire_at.map(|at| {
                    let there = crate::time::to_utc(at).with_timezone(&d.cfg.tz());
                    format!("{} {}", there.format("%Y-%m-%d %H:%M"), d.cfg.timezone)
                });
            }
            if let Some(m) = detail.manifests.submit.take() {
                detail.manifests.submit = Some(d.submit_view(m, &detail.spec));
            }
            for (k, v) in detail.spec.env.iter_mut() {
                if crate::config::redacted(k, &d.cfg.sandbox.redact_env) {
                    *v = crate::config::REDACTED.to_string();
                }
            }
            Ok(detail)
        })()),
        Request::Cancel(r) => reply::<super::Cancel>((|| {
            let effect = d.store().cancel(r.id, now)?;
            for (run, pid) in &effect.to_signal {
                d.signal_supervisor(*run, *pid);
            }
            d.changed();
            Ok(Cancelled {
                cancelled: effect.cancelled,
                stopping: effect.to_signal.iter().map(|r| r.0).collect(),
            })
        })()),
        Request::Hold(r) => {
            let n = d.store().hold(r.id, now);
            reply::<super::Hold>(changed(d, n))
        }
        Request::Release(r) => {
            let n = d.store().release(r.id, now);
            reply::<super::Release>(changed(d, n))
        }
        Request::Retry(r) => {
            let n = d.store().retry(r.id, now);
            reply::<super::Retry>(changed(d, n))
        }
        Request::Gc(r) => {
            // Removing outputs can take minutes: off the runtime's thread,
            // so the socket keeps answering meanwhile.
            let me = Arc::clone(d);
            let done = tokio::task::spawn_blocking(move || me.gc(r.dry_run))
                .await
                .map_err(|e| anyhow::anyhow!("the collection did not finish: {e}"))
                .and_then(|r| r);
            reply::<super::Gc>(done)
        }
        Request::NotifyList(_) => reply::<super::NotifyList>(d.notify_report()),
        Request::NotifyRetry(r) => reply::<super::NotifyRetry>((|| {
            let n = d.notify_retry(r.id)?;
            d.changed();
            Ok(super::Changed { tasks: n })
        })()),
        Request::NotifyTest(r) => {
            let me = Arc::clone(d);
            let answer = tokio::task::spawn_blocking(move || me.notify_test(&r.name))
                .await
                .map_err(|e| anyhow::anyhow!("the test did not finish: {e}"))
                .and_then(|r| r);
            reply::<super::NotifyTest>(answer)
        }
        Request::NotifyDigest(_) => reply::<super::NotifyDigest>(
            d.digest_now()
                .map(|(from, to)| super::DigestWritten { from, to }),
        ),
        Request::Wait(r) => reply::<super::Wait>(wait(d, &r.ids).await),
        Request::Plugins(_) => reply::<super::Plugins>(Ok(d.plugin_views())),
        Request::Why(r) => reply::<super::Why>(d.why(r.id)),
        Request::PluginsReload(_) => reply::<super::PluginsReload>(d.reload_plugins().await),
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

/// `hold`, `release`, `retry`: how many tasks changed.
fn changed(d: &Daemon, n: crate::store::Result<usize>) -> anyhow::Result<Changed> {
    let tasks = n?;
    d.changed();
    Ok(Changed { tasks })
}

/// Checks and queues a submission; one id per entry.
fn submit(
    d: &Daemon,
    entries: &[crate::task::model::NewEntry],
    verify: bool,
    now: i64,
) -> anyhow::Result<Vec<i64>> {
    check_submission(d, entries)?;
    let manifests = d.capture_submit(entries, verify);
    // Queued once captured: the wait before a start does not count the capture.
    let now = now.max(now_ms());
    let tz = d.cfg.tz();
    let ids = d
        .store()
        .submit_with_manifests(entries, &manifests, now, |expr| {
            crate::task::schedule::parse(expr)
                .ok()
                .and_then(|s| s.next_after(crate::time::to_utc(now), tz))
                .map(|t| t.timestamp_millis())
        })?;
    d.changed();
    Ok(ids)
}

/// The checks every submission passes (a rerun's too): names, commands,
/// dependencies, output folders, what this machine can place.
pub(super) fn check_submission(
    d: &Daemon,
    entries: &[crate::task::model::NewEntry],
) -> anyhow::Result<()> {
    crate::task::check::check_entries(entries).map_err(anyhow::Error::msg)?;
    check_outputs(d, entries)?;
    check_fits(d, entries)
}

/// Rejects an output folder outside `output_roots` (when set), with the
/// values known at submit filled in (ids as `0`: a digit string is one path
/// component like any id). The supervisor checks the real path again.
fn check_outputs(d: &Daemon, entries: &[crate::task::model::NewEntry]) -> anyhow::Result<()> {
    use crate::task::vars::{Subst, expand};
    if d.cfg.output_roots.is_empty() {
        return Ok(());
    }
    for m in entries.iter().flat_map(|e| &e.members) {
        let Some(t) = &m.output else { continue };
        let inputs: Vec<String> = m.inputs.iter().map(|p| p.display().to_string()).collect();
        let path = expand(t, true, |n| {
            Some(Subst::Value(match n {
                "TASK_ID" | "RUN_ID" => "0".into(),
                "WORKDIR" => m.workdir.display().to_string(),
                "TASK_NAME" => m.name.clone(),
                "PROJECT" => m.project.clone(),
                "INPUT_PATH" => inputs.first().cloned().unwrap_or_default(),
                "INPUTS" => inputs.join(" "),
                "SCRATCH" => d.cfg.scratch_dir().join("0").display().to_string(),
                _ => String::new(),
            }))
        })?;
        crate::sandbox::paths::check_within(&m.workdir.join(path), &d.cfg.output_roots)
            .map_err(|e| anyhow::anyhow!("task `{}`: {e}", m.name.escape_debug()))?;
    }
    Ok(())
}

/// Rejects tasks that could never be placed on this machine.
fn check_fits(d: &Daemon, entries: &[crate::task::model::NewEntry]) -> anyhow::Result<()> {
    let cpus = d.cpu_total;
    let (gpus, largest) = d.gpu_capacity();
    for m in entries.iter().flat_map(|e| &e.members) {
        let r = &m.resources;
        if r.gpus as usize > gpus {
            anyhow::bail!(
                "task `{}` asks for {} GPU(s) but this daemon has {gpus} (`nightjar gpus` lists them; `gpus` and `gpu.backend` in the config choose them)",
                m.name,
                r.gpus,
            );
        }
        if let (Some(want), Some(max)) = (r.gpu_mem, largest)
            && r.gpus > 0
            && want.as_u64() > max
        {
            anyhow::bail!(
                "task `{}` asks for gpu_mem {want} per GPU but the largest GPU here has {}",
                m.name,
                bytesize::ByteSize::b(max)
            );
        }
        if r.cpus.unwrap_or(0) > cpus {
            anyhow::bail!(
                "task `{}` asks for {} CPUs but only {cpus} can be pinned",
                m.name,
                r.cpus.unwrap_or(0)
            );
        }
    }
    Ok(())
}

/// The tasks an id stands for when waiting: the task, or a sweep's members.
fn wait_targets(d: &Daemon, id: i64) -> anyhow::Result<Vec<i64>> {
    let task = d.store().task(id)?;
    match task.kind.as_str() {
        "sweep" => Ok(d.store().show(id)?.members.iter().map(|m| m.id).collect()),
        "recurring" => anyhow::bail!(
            "task {id} is a recurring template: it never ends; wait for one of its instances"
        ),
        _ => Ok(vec![id]),
    }
}

/// Tasks looked up per hold of the store lock: a wait on many tasks yields
/// between chunks, so `ls` and run recording never queue behind it.
const WAIT_CHUNK: usize = 256;

async fn wait(d: &Arc<Daemon>, ids: &[i64]) -> anyhow::Result<Vec<WaitResult>> {
    // Each task once, however often it is named (directly or through its sweep).
    let mut asked = std::collections::HashSet::new();
    let mut seen = std::collections::HashSet::new();
    let mut targets = Vec::new();
    for (i, &id) in ids.iter().enumerate() {
        if asked.insert(id) {
            targets.extend(wait_targets(d, id)?.into_iter().filter(|t| seen.insert(*t)));
        }
        if i % WAIT_CHUNK == WAIT_CHUNK - 1 {
            tokio::task::yield_now().await;
        }
    }
    let mut rx = d.changes.subscribe();
    // Tasks are checked in order and dropped once ended, so a long wait costs
    // each change only the tasks still pending at the front.
    let mut pending = targets.iter().copied().peekable();
    loop {
        let mut checked = 0;
        {
            let store = d.store();
            while let Some(&id) = pending.peek() {
                let state = store.task(id)?.state;
                if !(state.is_final() || state == TaskState::Blocked) {
                    break;
                }
                pending.next();
                checked += 1;
                if checked == WAIT_CHUNK {
                    break;
                }
            }
        }
        if pending.peek().is_none() {
            break;
        }
        if checked == WAIT_CHUNK {
            tokio::task::yield_now().await;
            continue;
        }
        if rx.changed().await.is_err() {
            anyhow::bail!("the daemon is stopping");
        }
    }
    let mut results = Vec::with_capacity(targets.len());
    for chunk in targets.chunks(WAIT_CHUNK) {
        {
            let store = d.store();
            for &id in chunk {
                let t = store.task(id)?;
                let run = store.latest_run(id)?;
                results.push(WaitResult {
                    id,
                    state: t.state,
                    class: run.as_ref().and_then(|r| r.class),
                    exit_code: run.as_ref().and_then(|r| r.exit_code),
                    signal: run.as_ref().and_then(|r| r.signal),
                });
            }
        }
        tokio::task::yield_now().await;
    }
    Ok(results)
}
