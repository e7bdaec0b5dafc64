//! One client connection: handshake, then a loop that decodes every complete request in the
//! read buffer, answers them all with one write, and reads again.
//!
//! Anything malformed or too slow closes this connection only, with a logged reason; the
//! buffers are reused, so steady-state serving allocates nothing.

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

use super::auth::{Opened, Refusal, Security};
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
    /// The peer's credentials were refused (told in the hello): logged as a warning, counted
    /// as a rejected connection. The reason never holds the token.
    Refused(String),
    Io(std::io::Error),
}

impl fmt::Display for End {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            End::Quiet(why) => f.write_str(why),
            End::BadInput(why) | End::Refused(why) => f.write_str(why),
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
    stream: TcpStream,
    peer: SocketAddr,
    core: Arc<Core>,
    config: Arc<ServerConfig>,
    security: Arc<Security>,
    stop: watch::Receiver<bool>,
) {
    core.stats.connection_opened();
    let end = match security.open(stream, config.handshake_timeout).await {
        // One code path for both, monomorphized: plain TCP pays nothing for TLS.
        Ok(Opened::Plain(stream)) => serve(stream, Ok(()), &core, &config, &security, stop).await,
        Ok(Opened::Tls(stream, verdict)) => {
            serve(*stream, verdict, &core, &config, &security, stop).await
        }
        Err(why) => End::Refused(why),
    };
    match &end {
        End::BadInput(_) => {
            core.stats.bad_request();
            tracing::warn!(%peer, reason = %end, "closing oracle connection");
        }
        End::Refused(_) => {
            core.stats.connection_rejected();
            tracing::warn!(%peer, reason = %end, "refused an oracle client");
        }
        _ => tracing::debug!(%peer, reason = %end, "oracle connection closed"),
    }
    core.stats.connection_closed();
}

async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    certificate: Result<(), Refusal>,
    core: &Core,
    config: &ServerConfig,
    security: &Security,
    mut stop: watch::Receiver<bool>,
) -> End {
    match handshake(&mut stream, certificate, config, security).await {
        Ok(()) => serve_requests(&mut stream, core, config, &mut stop).await,
        Err(end) => end,
    }
}

async fn handshake<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    certificate: Result<(), Refusal>,
    config: &ServerConfig,
    security: &Security,
) -> Result<(), End> {
    let limit = config.handshake_timeout;
    let read = async {
        let mut hello = [0u8; protocol::HELLO_LEN];
        stream.read_exact(&mut hello).await?;
        let token = match protocol::check_client_hello(&hello) {
            Ok(true) => {
                let mut len = [0u8; 2];
                stream.read_exact(&mut len).await?;
                match protocol::decode_token_len(len) {
                    Ok(len) => {
                        let mut token = vec![0u8; len];
                        stream.read_exact(&mut token).await?;
                        Some(token)
                    }
                    Err(e) => return Ok(Err(e)),
                }
            }
            Ok(false) => None,
            Err(e) => return Ok(Err(e)),
        };
        Ok::<_, std::io::Error>(Ok(token))
    };
    let checked = match tokio::time::timeout(limit, read).await {
        Err(_) => return Err(End::BadInput(format!("no hello within {limit:?}"))),
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            return Err(End::BadInput("closed during the hello".into()))
        }
        Ok(Err(e)) => return Err(End::Io(e)),
        Ok(Ok(checked)) => checked,
    };
    let token = match checked {
        Ok(token) => token,
        Err(e @ HelloError::UnsupportedVersion(_)) => {
            // Best effort: the peer learns why before the close.
            let _ = reply(stream, HelloStatus::UnsupportedVersion).await;
            return Err(End::BadInput(e.to_string()));
        }
        Err(e) => return Err(End::BadInput(e.to_string())),
    };
    let checked = certificate.and_then(|()| {
        security
            .check_token(token.as_deref())
            .map_err(Refusal::from)
    });
    if let Err(refusal) = checked {
        let _ = reply(stream, refusal.status).await;
        return Err(End::Refused(refusal.why));
    }
    reply(stream, HelloStatus::Ok).await?;
    Ok(())
}

async fn reply<S: AsyncWrite + Unpin>(stream: &mut S, status: HelloStatus) -> std::io::Result<()> {
    stream.write_all(&protocol::server_hello(status)).await?;
    // TLS holds written records until flushed; plain TCP has nothing to flush.
    stream.flush().await
}

async fn serve_requests<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
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
            if let Err(e) = write_out(stream, &output).await {
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

async fn write_out<S: AsyncWrite + Unpin>(stream: &mut S, bytes: &[u8]) -> std::io::Result<()> {
    stream.write_all(bytes).await?;
    stream.flush().await
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
