//! What a plugin writes to the daemon's log: its stdout and stderr, kept up
//! to a bound per call, and a per-minute byte budget over everything it logs,
//! with the excess counted and summarised in one line.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use crate::sync::LockUnpoisoned;
use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};

/// Bytes kept per drain.
pub const CAP: usize = super::limits::MAX_CALL_OUTPUT;

/// A bounded, shared output buffer.
#[derive(Clone, Default)]
pub struct LogSink {
    buf: Arc<Mutex<Vec<u8>>>,
}

impl LogSink {
    /// Takes what was written since the last drain.
    pub fn drain(&self) -> Vec<u8> {
        std::mem::take(&mut *self.buf.lock_unpoisoned())
    }

    /// Writes what the guest printed since the last drain to the daemon's
    /// log as plugin `name`'s lines (at most 50, escaped, `secrets` cut out),
    /// within `budget`.
    pub fn to_log(&self, name: &str, budget: &LogBudget, secrets: &[String]) {
        let out = self.drain();
        for line in String::from_utf8_lossy(&out).lines().take(50) {
            if budget.admit(line.len()) {
                let line = crate::secrets::redact(line, secrets);
                tracing::info!(plugin = %name, "{}", line.escape_debug());
            }
        }
        budget.tick();
    }
}

impl IsTerminal for LogSink {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for LogSink {
    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl AsyncWrite for LogSink {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let mut buf = self.buf.lock_unpoisoned();
        let room = CAP.saturating_sub(buf.len());
        buf.extend_from_slice(&data[..room.min(data.len())]);
        // Everything is accepted: a chatty plugin loses output, not its call.
        Poll::Ready(Ok(data.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// A plugin's budget of log bytes per minute, shared by its log messages and
/// its output.
#[derive(Clone)]
pub struct LogBudget {
    name: Arc<str>,
    state: Arc<Mutex<BudgetState>>,
}

struct BudgetState {
    limit: usize,
    window_start: Instant,
    used: usize,
    dropped_messages: u64,
    dropped_bytes: u64,
}

impl LogBudget {
    /// `limit` bytes a minute for plugin `name`.
    pub fn new(name: &str, limit: usize) -> LogBudget {
        LogBudget {
            name: name.into(),
            state: Arc::new(Mutex::new(BudgetState {
                limit,
                window_start: Instant::now(),
                used: 0,
                dropped_messages: 0,
                dropped_bytes: 0,
            })),
        }
    }

    /// Whether a message of `bytes` may be written now. A refused one is
    /// counted for the summary.
    pub fn admit(&self, bytes: usize) -> bool {
        let mut s = self.state.lock_unpoisoned();
        self.roll(&mut s);
        if s.used.saturating_add(bytes) > s.limit {
            s.dropped_messages += 1;
            s.dropped_bytes += bytes as u64;
            return false;
        }
        s.used += bytes;
        true
    }

    /// Ends the current minute if it is over, writing the summary line.
    pub fn tick(&self) {
        let mut s = self.state.lock_unpoisoned();
        self.roll(&mut s);
    }

    fn roll(&self, s: &mut BudgetState) {
        if let Some(summary) = Self::rolled(s, Instant::now()) {
            tracing::warn!(plugin = %self.name, "{summary}");
        }
    }

    /// Starts a new minute at `now` if the current one is over: the summary
    /// of what it dropped, if it dropped anything.
    fn rolled(s: &mut BudgetState, now: Instant) -> Option<String> {
        if now.saturating_duration_since(s.window_start) < Duration::from_secs(60) {
            return None;
        }
        let summary = (s.dropped_messages > 0).then(|| {
            format!(
                "dropped {} log messages ({} bytes) over its log budget of {} bytes a minute",
                s.dropped_messages, s.dropped_bytes, s.limit
            )
        });
        s.window_start = now;
        s.used = 0;
        s.dropped_messages = 0;
        s.dropped_bytes = 0;
        summary
    }

    /// Messages dropped in the current minute.
    pub fn dropped(&self) -> u64 {
        self.state.lock_unpoisoned().dropped_messages
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_refuses_what_passes_the_minute_and_counts_it() {
        let b = LogBudget::new("p", 100);
        assert!(b.admit(60));
        assert!(b.admit(40));
        assert!(!b.admit(1));
        assert!(!b.admit(500));
        assert_eq!(b.dropped(), 2);
    }

    #[test]
    fn a_minute_that_dropped_messages_ends_with_one_summary_and_a_fresh_budget() {
        let b = LogBudget::new("p", 100);
        assert!(b.admit(100));
        assert!(!b.admit(30));
        assert!(!b.admit(12));
        let mut s = b.state.lock_unpoisoned();
        let start = s.window_start;
        assert_eq!(
            LogBudget::rolled(&mut s, start + Duration::from_secs(59)),
            None
        );
        let summary = LogBudget::rolled(&mut s, start + Duration::from_secs(60));
        assert_eq!(
            summary.as_deref(),
            Some("dropped 2 log messages (42 bytes) over its log budget of 100 bytes a minute")
        );
        assert_eq!((s.used, s.dropped_messages), (0, 0), "a fresh minute");
        let quiet = LogBudget::rolled(&mut s, start + Duration::from_secs(130));
        assert_eq!(quiet, None, "a minute that dropped nothing says nothing");
    }
}
