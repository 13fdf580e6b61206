//! The socket's front door: a bounded number of connections, a bounded
//! request line, an idle timeout while a request is being read, and an
//! accept loop that backs off when the process is out of descriptors.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::Semaphore;

use super::Api;
use super::{ApiError, ErrorKind, MAX_REQUEST};

/// Sleep after an accept failed for lack of descriptors or memory.
const BACKOFF: Duration = Duration::from_millis(100);
/// At most one log line about failing accepts per this period.
const LOG_EVERY: Duration = Duration::from_secs(10);

/// Accepts connections until the daemon stops.
pub async fn serve(api: Api, listener: UnixListener) {
    let max = api.config().api.max_connections;
    let slots = Arc::new(Semaphore::new(max));
    let mut quiet_until: Option<Instant> = None;
    let mut failures = 0u64;
    loop {
        match listener.accept().await {
            Ok((stream, _)) => match Arc::clone(&slots).try_acquire_owned() {
                Ok(permit) => {
                    let d = api.clone();
                    tokio::spawn(async move {
                        connection(d, stream).await;
                        drop(permit);
                    });
                }
                Err(_) => {
                    tokio::spawn(refuse(
                        stream,
                        format!(
                            "too many connections: the daemon serves at most {max} at once (`api.max_connections`); try again shortly"
                        ),
                    ));
                }
            },
            Err(e) => {
                failures += 1;
                let now = Instant::now();
                if quiet_until.is_none_or(|q| now >= q) {
                    tracing::warn!(
                        "accept failed ({failures} time(s) since the last report): {e}; retrying every {} ms",
                        BACKOFF.as_millis()
                    );
                    failures = 0;
                    quiet_until = Some(now + LOG_EVERY);
                }
                // Out of descriptors (EMFILE, ENFILE) or memory: the pending
                // connection stays queued, so retrying at once would spin.
                tokio::time::sleep(BACKOFF).await;
            }
        }
    }
}

/// Answers one error line and closes.
async fn refuse(mut stream: UnixStream, why: String) {
    let _ =
        tokio::time::timeout(Duration::from_secs(1), write_reply(&mut stream, error(why))).await;
}

fn error(why: String) -> Vec<u8> {
    super::server::error_line(ApiError::new(ErrorKind::Invalid, why))
}

async fn write_reply(w: &mut (impl AsyncWrite + Unpin), mut reply: Vec<u8>) -> std::io::Result<()> {
    reply.push(b'\n');
    w.write_all(&reply).await
}

/// One request line, as read.
#[derive(Debug, PartialEq)]
enum Line {
    /// A complete line is in the buffer (without its newline).
    Ok,
    /// The peer closed the connection with nothing more to read.
    Eof,
    /// The line is longer than the limit; it was not kept.
    TooLong,
}

/// Reads one line into `buf` (cleared first), keeping at most `max` bytes:
/// a longer line is answered `TooLong` as soon as it passes the limit.
async fn read_line(
    r: &mut (impl AsyncBufRead + Unpin),
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Line> {
    buf.clear();
    loop {
        let avail = r.fill_buf().await?;
        if avail.is_empty() {
            return Ok(if buf.is_empty() { Line::Eof } else { Line::Ok });
        }
        let (take, done) = match avail.iter().position(|&b| b == b'\n') {
            Some(i) => (i, true),
            None => (avail.len(), false),
        };
        if buf.len() + take > max {
            return Ok(Line::TooLong);
        }
        buf.extend_from_slice(&avail[..take]);
        r.consume(if done { take + 1 } else { take });
        if done {
            return Ok(Line::Ok);
        }
    }
}

async fn connection(api: Api, stream: UnixStream) {
    let idle = api.config().api.idle_timeout;
    // Who is calling, from the kernel: never from what the request says.
    let caller = match stream.peer_cred() {
        Ok(cred) => api.access().caller(cred.uid()),
        Err(e) => Err(ApiError::new(
            ErrorKind::Internal,
            format!("cannot read the caller's credentials (SO_PEERCRED): {e}"),
        )),
    };
    let caller = match caller {
        Ok(c) => c,
        Err(e) => {
            let mut stream = stream;
            let line = super::server::error_line(e);
            let _ = tokio::time::timeout(idle, write_reply(&mut stream, line)).await;
            return;
        }
    };
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    let mut buf = Vec::new();
    loop {
        // The idle timeout covers reading a request, not a reply in progress.
        let line =
            match tokio::time::timeout(idle, read_line(&mut reader, &mut buf, MAX_REQUEST)).await {
                Ok(Ok(Line::Ok)) => &buf,
                Ok(Ok(Line::TooLong)) => {
                    let why = format!(
                        "request line longer than {} MiB: refused, connection closed",
                        MAX_REQUEST / (1024 * 1024)
                    );
                    let _ = tokio::time::timeout(idle, write_reply(&mut write, error(why))).await;
                    return;
                }
                Ok(Ok(Line::Eof) | Err(_)) | Err(_) => return,
            };
        let reply = super::server::answer(&api, &caller, line).await;
        match tokio::time::timeout(idle, write_reply(&mut write, reply)).await {
            Ok(Ok(())) => {}
            _ => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_line_over_the_limit_is_refused_without_keeping_it() {
        let data = [vec![b'x'; 5000], b"\n{\"verb\":\"ping\"}\n".to_vec()].concat();
        let mut r = BufReader::with_capacity(64, &data[..]);
        let mut buf = Vec::new();
        assert_eq!(
            read_line(&mut r, &mut buf, 1000).await.unwrap(),
            Line::TooLong
        );
        assert!(buf.len() <= 1000, "kept {} bytes", buf.len());
        let mut r = BufReader::new(&b"{\"verb\":\"ping\"}\nrest"[..]);
        assert_eq!(read_line(&mut r, &mut buf, 1000).await.unwrap(), Line::Ok);
        assert_eq!(buf, b"{\"verb\":\"ping\"}");
        assert_eq!(read_line(&mut r, &mut buf, 1000).await.unwrap(), Line::Ok);
        assert_eq!(buf, b"rest");
        assert_eq!(read_line(&mut r, &mut buf, 1000).await.unwrap(), Line::Eof);
    }
}
