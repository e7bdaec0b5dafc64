//! One client connection: handshake, then a loop that decodes every complete request in the
//! read buffer, answers them all with one write, and reads again.
//!
//! Anything malformed or too slow closes this connection only, with a logged reason; the
//! buffers are reused, so steady-state serving allocates nothing.

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

use super::core::Core;
use super::ServerConfig;
use crate::oracle::protocol::{self, ErrorCode, HelloError, HelloStatus, Request};

/// Reads never ask for less room than this.
const READ_CHUNK: usize = 4096;

/// Why a connection ended.
enum End {
    /// Normal: the peer left, the server is stopping, or the connection idled out.
    Quiet(&'static str),
    /// The peer misbehaved: logged as a warning and counted.
    BadInput(String),
    Io(std::io::Error),
}

impl fmt::Display for End {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            End::Quiet(why) => f.write_str(why),
            End::BadInput(why) => f.write_str(why),
            End::Io(e) => write!(f, "I/O error: {e}"),
        }
    }
}

impl From<std::io::Error> for End {
    fn from(e: std::io::Error) -> Self {
        End::Io(e)
    }
}

pub(crate) async fn serve_connection(
    mut stream: TcpStream,
    peer: SocketAddr,
    core: Arc<Core>,
    config: Arc<ServerConfig>,
    mut stop: watch::Receiver<bool>,
) {
    core.stats.connection_opened();
    let end = match handshake(&mut stream, &config).await {
        Ok(()) => serve_requests(&mut stream, &core, &config, &mut stop).await,
        Err(end) => end,
    };
    match &end {
        End::BadInput(_) => {
            core.stats.bad_request();
            tracing::warn!(%peer, reason = %end, "closing oracle connection");
        }
        _ => tracing::debug!(%peer, reason = %end, "oracle connection closed"),
    }
    core.stats.connection_closed();
}

async fn handshake(stream: &mut TcpStream, config: &ServerConfig) -> Result<(), End> {
    let mut hello = [0u8; protocol::HELLO_LEN];
    match tokio::time::timeout(config.handshake_timeout, stream.read_exact(&mut hello)).await {
        Err(_) => {
            return Err(End::BadInput(format!(
                "no hello within {:?}",
                config.handshake_timeout
            )))
        }
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            return Err(End::BadInput("closed during the hello".into()))
        }
        Ok(Err(e)) => return Err(End::Io(e)),
        Ok(Ok(_)) => {}
    }
    match protocol::check_client_hello(&hello) {
        Ok(()) => {
            stream
                .write_all(&protocol::server_hello(HelloStatus::Ok))
                .await?;
            Ok(())
        }
        Err(e @ HelloError::UnsupportedVersion(_)) => {
            let reply = protocol::server_hello(HelloStatus::UnsupportedVersion);
            // Best effort: the peer learns why before the close.
            let _ = stream.write_all(&reply).await;
            Err(End::BadInput(e.to_string()))
        }
        Err(e) => Err(End::BadInput(e.to_string())),
    }
}

async fn serve_requests(
    stream: &mut TcpStream,
    core: &Core,
    config: &ServerConfig,
    stop: &mut watch::Receiver<bool>,
) -> End {
    let mut input: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    let mut output: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    loop {
        let (consumed, verdict) = answer_all(&input, &mut output, core, config).await;
        input.drain(..consumed);
        if !output.is_empty() {
            if let Err(e) = stream.write_all(&output).await {
                return End::Io(e);
            }
            output.clear();
        }
        if let Some(end) = verdict {
            return end;
        }
        // A half-written request must complete quickly; an idle connection may wait longer.
        let limit = if input.is_empty() {
            config.idle_timeout
        } else {
            config.frame_timeout
        };
        if input.capacity() - input.len() < protocol::TIMESTAMPS_REQUEST_LEN {
            input.reserve(READ_CHUNK);
        }
        tokio::select! {
            biased;
            _ = stop.wait_for(|s| *s) => return End::Quiet("server stopping"),
            read = tokio::time::timeout(limit, stream.read_buf(&mut input)) => match read {
                Err(_) if input.is_empty() => return End::Quiet("idle timeout"),
                Err(_) => return End::BadInput(stalled(&input, limit)),
                Ok(Ok(0)) if input.is_empty() => return End::Quiet("peer closed"),
                Ok(Ok(0)) => return End::BadInput("peer closed in the middle of a request".into()),
                Ok(Ok(_)) => {}
                Ok(Err(e)) => return End::Io(e),
            }
        }
    }
}

fn stalled(input: &[u8], limit: Duration) -> String {
    format!(
        "partial request ({} bytes) stalled for {limit:?}",
        input.len()
    )
}

/// Answers every complete request at the front of `input` into `output`. Returns how many bytes
/// were consumed, and why the connection must end after the replies are written, if it must.
async fn answer_all(
    input: &[u8],
    output: &mut Vec<u8>,
    core: &Core,
    config: &ServerConfig,
) -> (usize, Option<End>) {
    let mut pos = 0;
    loop {
        match protocol::decode_request(&input[pos..]) {
            Ok(None) => return (pos, None),
            Ok(Some((request, len))) => {
                pos += len;
                match request {
                    Request::Timestamps(count) => {
                        match core.allocate(count, config.request_wait).await {
                            Ok(first) => protocol::encode_timestamps_reply(output, first),
                            Err((code, why)) => {
                                protocol::encode_error_reply(output, code, why);
                                if matches!(code, ErrorCode::Fenced | ErrorCode::ShuttingDown) {
                                    return (pos, Some(End::Quiet(why)));
                                }
                            }
                        }
                    }
                    Request::Stats => {
                        protocol::encode_stats_reply(output, &core.stats.snapshot().to_fields())
                    }
                }
            }
            Err(e) => {
                let why = e.to_string();
                protocol::encode_error_reply(output, ErrorCode::BadRequest, &why);
                return (input.len(), Some(End::BadInput(why)));
            }
        }
    }
}
