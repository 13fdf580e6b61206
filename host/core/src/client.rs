//! The client's side of the socket: one typed call per request.

use std::io::{BufRead, BufReader};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::api::{ApiError, Call, ErrorKind, MAX_REQUEST, PROTOCOL, RequestLine};

mod decode;
pub use decode::decode;

/// No daemon answers: the message says how to start it, or why its socket
/// cannot be reached.
#[derive(Debug)]
pub struct NotRunning {
    /// The socket tried.
    pub socket: PathBuf,
    /// Extra flags to repeat.
    pub hint: String,
    /// Why connecting failed, when it was not the plain "nothing there"
    /// (`Permission denied (os error 13)`), else empty.
    pub cause: String,
    /// The lab-wide daemon's socket, looked at too (nothing answers there either).
    pub also: Option<PathBuf>,
}

impl std::fmt::Display for NotRunning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let socket = self.socket.display();
        if let (Some(also), true) = (&self.also, self.cause.is_empty()) {
            write!(
                f,
                "the nightjar daemon is not running: no daemon answers on {socket} (your own) nor on {} (the lab-wide daemon run as root).\nStart yours with `nightjar daemon{}` (or `systemctl --user start nightjar`), ask the admin to start the lab's (`systemctl start nightjar`), or name a socket with {}=PATH.",
                also.display(),
                self.hint,
                crate::paths::SOCKET_VAR
            )
        } else if self.cause.is_empty() {
            // The lab-wide daemon's socket is a system unit's, not a user unit's.
            let unit = if self.socket == Path::new(crate::paths::SYSTEM_SOCKET) {
                "systemctl start nightjar"
            } else {
                "systemctl --user start nightjar"
            };
            write!(
                f,
                "the nightjar daemon is not running (no daemon answers on {socket}).\nStart it with `nightjar daemon{}` (or `{unit}`), then try again.",
                self.hint
            )
        } else {
            write!(
                f,
                "cannot reach the nightjar daemon's socket {socket}: {}",
                self.cause
            )
        }
    }
}

impl std::error::Error for NotRunning {}

/// A call that failed: the daemon's typed error, or the connection.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The daemon answered with an error.
    #[error(transparent)]
    Api(#[from] ApiError),
    /// The request or the connection failed.
    #[error("{0}")]
    Io(String),
}

impl CallError {
    /// What kind of failure, for the exit status.
    pub fn kind(&self) -> ErrorKind {
        match self {
            CallError::Api(e) => e.kind,
            CallError::Io(_) => ErrorKind::Unavailable,
        }
    }
}

/// Longest reply line the client keeps (256 MiB, some hundred times a
/// 10,000-task `ls`): whatever answers on the socket, the client's memory
/// stays bounded.
pub const MAX_REPLY: usize = 256 << 20;

/// How long a reply may take to begin, for every request but `wait` (which
/// answers when its tasks end) and `gc` (which answers once it has deleted
/// the old run folders, however large): the daemon's slowest other answer,
/// a plugin reload, gives up after 5 minutes.
const REPLY_WITHIN: Duration = Duration::from_secs(6 * 60);

/// How long a reply that has begun, or a request being sent, may pause: the
/// daemon reads requests and writes replies at once, so a pause this long
/// means it stopped (SIGSTOP, a hang).
const STALL: Duration = Duration::from_secs(30);

/// A connection to the daemon.
pub struct Client {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
    /// How long a reply may take to begin (`REPLY_WITHIN`).
    within: Duration,
    /// How long a request or a reply may pause (`STALL`).
    stall: Duration,
}

impl Client {
    /// Connects to the daemon's socket; `hint` is appended to the start command in the error.
    pub fn connect(socket: &Path, hint: &str) -> Result<Client, NotRunning> {
        let not_running = |e: std::io::Error| {
            use std::io::ErrorKind::{ConnectionRefused, NotFound};
            NotRunning {
                socket: socket.to_path_buf(),
                hint: hint.to_string(),
                // No socket, or a stale one: nothing more to say. Anything
                // else (a socket of another user, a path too long) is said,
                // or starting a daemon would look like the fix.
                cause: match e.kind() {
                    NotFound | ConnectionRefused => String::new(),
                    _ => e.to_string(),
                },
                also: None,
            }
        };
        let stream = UnixStream::connect(socket).map_err(not_running)?;
        Client::on(stream, REPLY_WITHIN, STALL).map_err(not_running)
    }

    /// A second connection to the daemon this one is connected to: for
    /// requests made while this one waits on a long call (`wait`'s
    /// progress line).
    pub fn another(&self) -> std::io::Result<Client> {
        let addr = self.writer.peer_addr()?;
        let path = addr
            .as_pathname()
            .ok_or_else(|| std::io::Error::other("the daemon's socket has no path"))?;
        Client::on(UnixStream::connect(path)?, self.within, self.stall)
    }

    /// A client on a connected stream.
    fn on(stream: UnixStream, within: Duration, stall: Duration) -> std::io::Result<Client> {
        stream.set_write_timeout(Some(stall))?;
        Ok(Client {
            reader: BufReader::new(stream.try_clone()?),
            writer: stream,
            within,
            stall,
        })
    }

    /// Sends one request and decodes its typed reply. A verb renamed in
    /// protocol 2 is sent again under its earlier name when the daemon is
    /// older and does not know the new one (a user's daemon not restarted
    /// since an upgrade).
    pub fn call<C: Call>(&mut self, req: C) -> Result<C::Reply, CallError> {
        let req: crate::api::Request = req.into();
        let within = match req {
            crate::api::Request::Wait(_) | crate::api::Request::Gc(_) => None,
            _ => Some(self.within),
        };
        let line = RequestLine { v: PROTOCOL, req };
        let encoded = serde_json::to_vec(&line).map_err(|e| CallError::Io(e.to_string()))?;
        match self.exchange::<C::Reply>(encoded, within) {
            Err(CallError::Api(e)) if unknown_verb(&e, C::VERB) => {
                let Some(was) = earlier_name(C::VERB) else {
                    return Err(e.into());
                };
                let mut value =
                    serde_json::to_value(&line).map_err(|e| CallError::Io(e.to_string()))?;
                value["req"]["verb"] = was.into();
                let encoded =
                    serde_json::to_vec(&value).map_err(|e| CallError::Io(e.to_string()))?;
                self.exchange::<C::Reply>(encoded, within)
            }
            r => r,
        }
    }

    /// Sends one encoded request line and decodes its typed reply.
    fn exchange<R: serde::de::DeserializeOwned>(
        &mut self,
        mut line: Vec<u8>,
        within: Option<Duration>,
    ) -> Result<R, CallError> {
        if line.len() > MAX_REQUEST {
            return Err(ApiError::new(
                ErrorKind::Invalid,
                format!(
                    "the request is {} bytes; the daemon accepts at most {} MiB per request: split it (fewer tasks per file, a smaller sweep)",
                    line.len(),
                    MAX_REQUEST / (1024 * 1024)
                ),
            )
            .into());
        }
        line.push(b'\n');
        // A daemon that refuses a request may close before reading it all:
        // its reply is still there to read, so a failed send is reported
        // only when no reply came.
        let sent = send_all(&self.writer, &line);
        if let Err(e) = &sent
            && matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            )
        {
            return Err(CallError::Io(format!(
                "the daemon took none of the request for {} s (is it stopped? `kill -CONT` its pid, or restart it)",
                self.stall.as_secs()
            )));
        }
        let got = read_reply(
            &self.writer,
            &mut self.reader,
            MAX_REPLY,
            within,
            self.stall,
        );
        let reply = match (sent, got) {
            (_, Ok(reply)) if !reply.is_empty() => reply,
            (_, Err(e @ CallError::Api(_))) => return Err(e),
            (Err(e), _) => {
                return Err(CallError::Io(format!(
                    "cannot send the request to the daemon: {e}"
                )));
            }
            (Ok(()), Err(e)) => return Err(e),
            (Ok(()), Ok(_)) => {
                return Err(CallError::Io(
                    "the daemon closed the connection without replying (did it stop?)".into(),
                ));
            }
        };
        let reply = String::from_utf8(reply).map_err(|_| {
            ApiError::new(
                ErrorKind::Protocol,
                "the daemon's reply is not UTF-8; is the daemon of this release?",
            )
        })?;
        decode::<R>(&reply)
    }
}

/// Reads one reply line (without its newline; empty when the daemon closed
/// without a word), keeping at most `max` bytes: the first byte must come
/// within `within` (`None`: no limit) and each later one within `stall`.
fn read_reply(
    stream: &UnixStream,
    reader: &mut BufReader<UnixStream>,
    max: usize,
    within: Option<Duration>,
    stall: Duration,
) -> Result<Vec<u8>, CallError> {
    let io = |e: std::io::Error| CallError::Io(format!("cannot read the daemon's reply: {e}"));
    stream.set_read_timeout(within).map_err(io)?;
    let mut buf = Vec::new();
    loop {
        let avail = match reader.fill_buf() {
            Ok(a) => a,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Err(CallError::Io(if buf.is_empty() {
                    format!(
                        "the daemon accepted the request but did not answer within {} s (is it stopped? `kill -CONT` its pid, or restart it)",
                        within.unwrap_or_default().as_secs()
                    )
                } else {
                    format!(
                        "the daemon's reply stopped after {} bytes and nothing came for {} s (is it stopped?)",
                        buf.len(),
                        stall.as_secs()
                    )
                }));
            }
            Err(e) => return Err(io(e)),
        };
        if avail.is_empty() {
            // The daemon closed: a line without its newline is still its reply.
            return Ok(buf);
        }
        let (take, done) = match avail.iter().position(|&b| b == b'\n') {
            Some(i) => (i, true),
            None => (avail.len(), false),
        };
        if buf.len() + take > max {
            return Err(ApiError::new(
                ErrorKind::Other,
                format!(
                    "the daemon's reply is longer than {} MiB: refused (narrow the request: `ls --state`, `--project`)",
                    max >> 20
                ),
            )
            .into());
        }
        let first = buf.is_empty();
        buf.extend_from_slice(&avail[..take]);
        reader.consume(if done { take + 1 } else { take });
        if done {
            return Ok(buf);
        }
        if first {
            stream.set_read_timeout(Some(stall)).map_err(io)?;
        }
    }
}

/// The name `verb` had in protocol 2 before it was renamed, if it was.
fn earlier_name(verb: &str) -> Option<&'static str> {
    crate::api::VERBS.iter().find(|v| v.name == verb)?.was
}

/// Whether the daemon refused the request for not knowing `verb` (how a
/// daemon older than a verb's rename answers it).
fn unknown_verb(e: &ApiError, verb: &str) -> bool {
    e.kind == ErrorKind::BadRequest && e.message.contains(&format!("unknown variant `{verb}`"))
}

/// Writes all of `buf` with MSG_NOSIGNAL: a daemon that closed the socket is
/// an error here, never a SIGPIPE (the CLI lets SIGPIPE end it on stdout).
fn send_all(stream: &UnixStream, mut buf: &[u8]) -> std::io::Result<()> {
    while !buf.is_empty() {
        // SAFETY: buf is a valid slice; the fd is an open socket for the call.
        let n = unsafe {
            libc::send(
                stream.as_raw_fd(),
                buf.as_ptr().cast(),
                buf.len(),
                libc::MSG_NOSIGNAL,
            )
        };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        buf = &buf[n as usize..];
    }
    Ok(())
}

#[cfg(test)]
mod tests;
