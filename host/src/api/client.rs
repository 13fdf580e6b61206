//! The CLI's side of the socket.

use std::io::{BufRead, BufReader};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow, bail};
use serde::de::DeserializeOwned;

use super::{Reply, Request};

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

/// A connection to the daemon.
pub struct Client {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

impl Client {
    /// Connects to the daemon's socket; `hint` is appended to the start command in the error.
    pub fn connect(socket: &Path, hint: &str) -> Result<Client> {
        let stream = UnixStream::connect(socket).map_err(|_| NotRunning {
            socket: socket.to_path_buf(),
            hint: hint.to_string(),
        })?;
        Ok(Client {
            reader: BufReader::new(stream.try_clone()?),
            writer: stream,
        })
    }

    /// Sends one request and decodes the reply.
    pub fn call<T: DeserializeOwned>(&mut self, req: &Request) -> Result<T> {
        let mut line = serde_json::to_vec(req)?;
        if line.len() > super::MAX_REQUEST {
            bail!(
                "the request is {} bytes; the daemon accepts at most {} MiB per request: split it (fewer tasks per file, a smaller sweep)",
                line.len(),
                super::MAX_REQUEST / (1024 * 1024)
            );
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
            (Err(e), _) => return Err(anyhow!("cannot send the request to the daemon: {e}")),
            _ => bail!("the daemon closed the connection without replying (did it stop?)"),
        }
        let reply: Reply = serde_json::from_str(&reply)?;
        match (reply.ok, reply.error) {
            (_, Some(e)) => Err(anyhow!(e)),
            (Some(v), None) => Ok(serde_json::from_value(v)?),
            (None, None) => Ok(serde_json::from_value(serde_json::Value::Null)?),
        }
    }
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
