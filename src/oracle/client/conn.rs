//! One client connection to an oracle: connect + handshake, and request/reply exchanges.

use std::fmt;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use super::batch::Ranges;
use crate::oracle::protocol::{self, ErrorCode};
use crate::oracle::stats::StatsSnapshot;

/// Why an exchange failed. Everything but `Server(BadRequest, _)` is a reason to fail over.
#[derive(Debug)]
pub(crate) enum ConnError {
    Io(std::io::Error),
    Timeout(&'static str),
    Server(ErrorCode, String),
    Protocol(String),
}

impl fmt::Display for ConnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConnError::Io(e) => write!(f, "{e}"),
            ConnError::Timeout(what) => write!(f, "timed out {what}"),
            ConnError::Server(code, msg) => write!(f, "server said {code}: {msg}"),
            ConnError::Protocol(msg) => write!(f, "protocol error: {msg}"),
        }
    }
}

impl From<std::io::Error> for ConnError {
    fn from(e: std::io::Error) -> Self {
        ConnError::Io(e)
    }
}

pub(crate) struct Connection {
    stream: BufReader<TcpStream>,
    out: Vec<u8>,
}

impl Connection {
    /// Connects and shakes hands, all within `timeout`.
    pub async fn open(addr: &str, timeout: Duration) -> Result<Self, ConnError> {
        tokio::time::timeout(timeout, Self::open_inner(addr))
            .await
            .map_err(|_| ConnError::Timeout("connecting"))?
    }

    async fn open_inner(addr: &str) -> Result<Self, ConnError> {
        let mut stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        stream.write_all(&protocol::client_hello()).await?;
        let mut hello = [0u8; protocol::HELLO_LEN];
        stream.read_exact(&mut hello).await?;
        protocol::check_server_hello(&hello).map_err(ConnError::Protocol)?;
        Ok(Connection {
            stream: BufReader::new(stream),
            out: Vec::with_capacity(64),
        })
    }

    /// Asks for `count` timestamps (split into pipelined requests of at most `MAX_COUNT`).
    pub async fn timestamps(&mut self, count: u32) -> Result<Ranges, ConnError> {
        self.out.clear();
        let mut left = count;
        while left > 0 {
            let chunk = left.min(protocol::MAX_COUNT);
            protocol::encode_timestamps_request(&mut self.out, chunk);
            left -= chunk;
        }
        self.stream.get_mut().write_all(&self.out).await?;
        let mut ranges = Vec::with_capacity(1);
        let mut left = count;
        while left > 0 {
            let chunk = left.min(protocol::MAX_COUNT);
            match self.stream.read_u8().await? {
                protocol::REP_TIMESTAMPS => {
                    let first = self.stream.read_u64().await?;
                    if first.checked_add(u64::from(chunk)).is_none() {
                        return Err(ConnError::Protocol(format!(
                            "range of {chunk} from {first} overflows"
                        )));
                    }
                    ranges.push((first, chunk));
                }
                tag => return Err(self.unexpected(tag).await),
            }
            left -= chunk;
        }
        Ok(Ranges(ranges))
    }

    pub async fn stats(&mut self) -> Result<StatsSnapshot, ConnError> {
        self.stream
            .get_mut()
            .write_all(&[protocol::REQ_STATS])
            .await?;
        match self.stream.read_u8().await? {
            protocol::REP_STATS => {
                let payload = self.read_message().await?;
                Ok(StatsSnapshot::from_fields(&protocol::decode_stats_fields(
                    &payload,
                )))
            }
            tag => Err(self.unexpected(tag).await),
        }
    }

    /// Turns a reply that is not the expected one into an error: the server's if it is an
    /// error reply, a protocol error otherwise.
    async fn unexpected(&mut self, tag: u8) -> ConnError {
        if tag != protocol::REP_ERROR {
            return ConnError::Protocol(format!("unexpected reply tag 0x{tag:02x}"));
        }
        let code = match self.stream.read_u16().await {
            Ok(c) => c,
            Err(e) => return e.into(),
        };
        let message = match self.read_message().await {
            Ok(m) => String::from_utf8_lossy(&m).into_owned(),
            Err(e) => return e,
        };
        match ErrorCode::from_u16(code) {
            Some(code) => ConnError::Server(code, message),
            None => ConnError::Protocol(format!("unknown error code {code}: {message}")),
        }
    }

    async fn read_message(&mut self) -> Result<Vec<u8>, ConnError> {
        let mut len = [0u8; 2];
        self.stream.read_exact(&mut len).await?;
        let len = protocol::decode_message_len(len).map_err(ConnError::Protocol)?;
        let mut buf = vec![0u8; len];
        self.stream.read_exact(&mut buf).await?;
        Ok(buf)
    }
}
