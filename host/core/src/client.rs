//! The client's side of the socket: one typed call per request.

use std::io::{BufRead, BufReader};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::api::{ApiError, Call, ErrorKind, MAX_REQUEST, PROTOCOL, ReplyLine, RequestLine};

/// The daemon is not there; the message says how to start it.
#[derive(Debug, thiserror::Error)]
#[error(
    "the nightjar daemon is not running (no daemon answers on {socket}).\nStart it with `nightjar daemon{hint}` (or `systemctl --user start nightjar`), then try again."
)]
pub struct NotRunning {
    /// The socket tried.
    pub socket: PathBuf,
    /// Extra flags to repeat.
    pub hint: String,
}

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

/// A connection to the daemon.
pub struct Client {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

impl Client {
    /// Connects to the daemon's socket; `hint` is appended to the start command in the error.
    pub fn connect(socket: &Path, hint: &str) -> Result<Client, NotRunning> {
        let not_running = || NotRunning {
            socket: socket.to_path_buf(),
            hint: hint.to_string(),
        };
        let stream = UnixStream::connect(socket).map_err(|_| not_running())?;
        Ok(Client {
            reader: BufReader::new(stream.try_clone().map_err(|_| not_running())?),
            writer: stream,
        })
    }

    /// Sends one request and decodes its typed reply.
    pub fn call<C: Call>(&mut self, req: C) -> Result<C::Reply, CallError> {
        let line = RequestLine {
            v: PROTOCOL,
            req: req.into(),
        };
        let mut line = serde_json::to_vec(&line).map_err(|e| CallError::Io(e.to_string()))?;
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
        let mut reply = String::new();
        let got = self.reader.read_line(&mut reply);
        match (sent, got) {
            (_, Ok(n)) if n > 0 => {}
            (Err(e), _) => {
                return Err(CallError::Io(format!(
                    "cannot send the request to the daemon: {e}"
                )));
            }
            _ => {
                return Err(CallError::Io(
                    "the daemon closed the connection without replying (did it stop?)".into(),
                ));
            }
        }
        decode::<C::Reply>(&reply)
    }
}

/// Decodes a reply line into `T`, or the daemon's error. A line that does
/// not decode is explained by its version when the versions differ.
pub fn decode<T: serde::de::DeserializeOwned>(line: &str) -> Result<T, CallError> {
    match serde_json::from_str::<ReplyLine<T>>(line) {
        Ok(r) if r.v == Some(PROTOCOL) => match (r.ok, r.error) {
            (Some(v), None) => Ok(v),
            (_, Some(message)) => Err(ApiError {
                kind: r.kind.unwrap_or(ErrorKind::Other),
                message,
            }
            .into()),
            (None, None) => Err(CallError::Io("the daemon sent an empty reply".into())),
        },
        // The daemon's own words first: it explains a mismatch itself.
        Ok(ReplyLine {
            error: Some(message),
            kind,
            ..
        }) => Err(ApiError {
            kind: kind.unwrap_or(ErrorKind::Protocol),
            message,
        }
        .into()),
        Ok(r) => Err(daemon_mismatch(r.v).into()),
        Err(e) => {
            #[derive(Deserialize)]
            struct Head {
                #[serde(default)]
                v: Option<u32>,
                #[serde(default)]
                error: Option<String>,
            }
            match serde_json::from_str::<Head>(line) {
                Ok(Head { v, .. }) if v != Some(PROTOCOL) => Err(daemon_mismatch(v).into()),
                Ok(Head { error: Some(m), .. }) => Err(ApiError::new(ErrorKind::Other, m).into()),
                _ => Err(CallError::Io(format!(
                    "the daemon's reply does not decode ({e}); is the daemon of this release?"
                ))),
            }
        }
    }
}

fn daemon_mismatch(daemon: Option<u32>) -> ApiError {
    let daemon = match daemon {
        Some(v) => format!("protocol {v}"),
        None => "protocol 1 (nightjar 0.1)".into(),
    };
    ApiError::new(
        ErrorKind::Protocol,
        format!(
            "the daemon speaks {daemon} but this nightjar ({}) speaks protocol {PROTOCOL}: restart the daemon from this release (`systemctl --user restart nightjar`), or use the `nightjar` that came with it",
            env!("CARGO_PKG_VERSION")
        ),
    )
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
