//! The CLI's side of the socket.

use std::io::{BufRead, BufReader, Write};
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
        line.push(b'\n');
        self.writer.write_all(&line)?;
        let mut reply = String::new();
        if self.reader.read_line(&mut reply)? == 0 {
            bail!("the daemon closed the connection without replying (did it stop?)");
        }
        let reply: Reply = serde_json::from_str(&reply)?;
        match (reply.ok, reply.error) {
            (_, Some(e)) => Err(anyhow!(e)),
            (Some(v), None) => Ok(serde_json::from_value(v)?),
            (None, None) => Ok(serde_json::from_value(serde_json::Value::Null)?),
        }
    }
}
