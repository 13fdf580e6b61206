//! A guest's stdout and stderr: kept up to a bound, then dropped, and drained
//! into the daemon's log after each call, tagged with the plugin's name.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};

/// Bytes kept per drain.
pub const CAP: usize = 8 * 1024;

/// A bounded, shared output buffer.
#[derive(Clone, Default)]
pub struct LogSink {
    buf: Arc<Mutex<Vec<u8>>>,
}

impl LogSink {
    /// Takes what was written since the last drain.
    pub fn drain(&self) -> Vec<u8> {
        std::mem::take(&mut *self.buf.lock().unwrap_or_else(|p| p.into_inner()))
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
        let mut buf = self.buf.lock().unwrap_or_else(|p| p.into_inner());
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
