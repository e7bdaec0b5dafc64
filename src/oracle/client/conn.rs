//! One client connection to an oracle: connect + TLS + handshake, and request/reply exchanges.

use std::fmt;
use std::time::Duration;

use rustls::pki_types::ServerName;
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;
use tokio_util::either::Either;

use super::batch::Ranges;
use crate::hbase::link::tls::{client_config_of, PemError};
use crate::hbase::TlsOptions;
use crate::oracle::auth::{AuthFailure, OracleToken};
use crate::oracle::protocol::{self, ErrorCode, HelloRefusal};
use crate::oracle::stats::StatsSnapshot;
use crate::{Error, Result};

/// Why an exchange failed. Everything but `Server(BadRequest, _)` and `Refused` is a reason
/// to fail over.
#[derive(Debug)]
pub(crate) enum ConnError {
    Io(std::io::Error),
    Timeout(&'static str),
    Server(ErrorCode, String),
    Protocol(String),
    /// The oracle refused our credentials, or we its certificate: no address will do better.
    Refused(AuthFailure),
}

impl fmt::Display for ConnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConnError::Io(e) => write!(f, "{e}"),
            ConnError::Timeout(what) => write!(f, "timed out {what}"),
            ConnError::Server(code, msg) => write!(f, "server said {code}: {msg}"),
            ConnError::Protocol(msg) => write!(f, "protocol error: {msg}"),
            ConnError::Refused(failure) => write!(f, "{failure}"),
        }
    }
}

impl From<std::io::Error> for ConnError {
    fn from(e: std::io::Error) -> Self {
        // A TLS alert over our certificate or a server certificate we do not trust is a
        // refusal, not a network failure: say so instead of failing over.
        if let Some(tls) = e.get_ref().and_then(|e| e.downcast_ref::<rustls::Error>())
            && let Some(failure) = refusal(tls)
        {
            return ConnError::Refused(failure);
        }
        ConnError::Io(e)
    }
}

fn refusal(error: &rustls::Error) -> Option<AuthFailure> {
    use rustls::AlertDescription as A;
    match error {
        rustls::Error::InvalidCertificate(cert) => Some(AuthFailure::UntrustedServer {
            detail: format!("{cert:?}"),
        }),
        rustls::Error::AlertReceived(
            alert @ (A::BadCertificate
            | A::UnsupportedCertificate
            | A::CertificateRevoked
            | A::CertificateExpired
            | A::CertificateUnknown
            | A::UnknownCA
            | A::AccessDenied
            | A::CertificateRequired),
        ) => Some(AuthFailure::CertificateRefused {
            alert: format!("{alert:?}"),
        }),
        _ => None,
    }
}

/// How every connection of one client is secured: built once per client from its
/// [`ClientConfig`](super::ClientConfig), so unusable files fail the connect, naming the file.
#[derive(Clone, Default)]
pub(crate) struct Security {
    tls: Option<TlsConnector>,
    token: Option<OracleToken>,
}

impl Security {
    pub fn new(tls: Option<&TlsOptions>, token: Option<OracleToken>) -> Result<Security> {
        let tls = tls
            .map(|options| {
                client_config_of(options)
                    .map(TlsConnector::from)
                    .map_err(|PemError { file, detail }| Error::OracleSettings { file, detail })
            })
            .transpose()?;
        Ok(Security { tls, token })
    }
}

type Stream = Either<TcpStream, TlsStream<TcpStream>>;

pub(crate) struct Connection {
    stream: BufReader<Stream>,
    out: Vec<u8>,
}

impl Connection {
    /// Connects and shakes hands, all within `timeout`.
    pub async fn open(
        addr: &str,
        timeout: Duration,
        security: &Security,
    ) -> std::result::Result<Self, ConnError> {
        tokio::time::timeout(timeout, Self::open_inner(addr, security))
            .await
            .map_err(|_| ConnError::Timeout("connecting"))?
    }

    async fn open_inner(addr: &str, security: &Security) -> std::result::Result<Self, ConnError> {
        let tcp = TcpStream::connect(addr).await.map_err(|e| {
            if e.kind() == std::io::ErrorKind::ConnectionRefused {
                std::io::Error::new(
                    e.kind(),
                    "connection refused: nothing listens there; check the address, and that the \
                     oracle is running",
                )
            } else {
                e
            }
        })?;
        tcp.set_nodelay(true)?;
        let mut stream = match &security.tls {
            None => Either::Left(tcp),
            Some(connector) => {
                let name = server_name(addr)?;
                let tls = connector.connect(name, tcp).await.map_err(|e| {
                    match ConnError::from(e) {
                        // A plain oracle reads our TLS hello as a bad hello and hangs up.
                        ConnError::Io(e)
                            if matches!(
                                e.kind(),
                                std::io::ErrorKind::UnexpectedEof
                                    | std::io::ErrorKind::ConnectionReset
                            ) =>
                        {
                            ConnError::Protocol(format!(
                                "{e} during the TLS handshake: does the oracle serve TLS?"
                            ))
                        }
                        other => other,
                    }
                })?;
                Either::Right(tls)
            }
        };
        match &security.token {
            None => stream.write_all(&protocol::client_hello()).await?,
            Some(token) => {
                let hello = protocol::client_hello_with_token(token.as_bytes());
                stream.write_all(&hello).await?;
            }
        }
        stream.flush().await?;
        let mut hello = [0u8; protocol::HELLO_LEN];
        stream.read_exact(&mut hello).await?;
        protocol::check_server_hello(&hello).map_err(|refusal| match refusal {
            HelloRefusal::Auth(failure) => ConnError::Refused(failure),
            HelloRefusal::Other(why) => ConnError::Protocol(why),
        })?;
        Ok(Connection {
            stream: BufReader::new(stream),
            out: Vec::with_capacity(64),
        })
    }

    async fn send(&mut self) -> std::result::Result<(), ConnError> {
        let stream = self.stream.get_mut();
        stream.write_all(&self.out).await?;
        // TLS holds written records until flushed; plain TCP has nothing to flush.
        stream.flush().await?;
        Ok(())
    }

    /// Asks for `count` timestamps (split into pipelined requests of at most `MAX_COUNT`).
    pub async fn timestamps(&mut self, count: u32) -> std::result::Result<Ranges, ConnError> {
        self.out.clear();
        let mut left = count;
        while left > 0 {
            let chunk = left.min(protocol::MAX_COUNT);
            protocol::encode_timestamps_request(&mut self.out, chunk);
            left -= chunk;
        }
        self.send().await?;
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

    pub async fn stats(&mut self) -> std::result::Result<StatsSnapshot, ConnError> {
        self.out.clear();
        self.out.push(protocol::REQ_STATS);
        self.send().await?;
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

    async fn read_message(&mut self) -> std::result::Result<Vec<u8>, ConnError> {
        let mut len = [0u8; 2];
        self.stream.read_exact(&mut len).await?;
        let len = protocol::decode_message_len(len).map_err(ConnError::Protocol)?;
        let mut buf = vec![0u8; len];
        self.stream.read_exact(&mut buf).await?;
        Ok(buf)
    }
}

/// The name the oracle's certificate must have: the host of `addr` (`host:port`, `[v6]:port`).
fn server_name(addr: &str) -> std::result::Result<ServerName<'static>, ConnError> {
    let host = addr.rsplit_once(':').map_or(addr, |(host, _)| host);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(host.to_owned())
        .map_err(|e| ConnError::Protocol(format!("`{host}` is not a TLS server name: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_names_are_the_host_of_the_address() {
        let name = |a: &str| server_name(a).map(|n| n.to_str().into_owned()).ok();
        assert_eq!(
            name("tso.example.com:7077").as_deref(),
            Some("tso.example.com")
        );
        assert_eq!(name("127.0.0.1:7077").as_deref(), Some("127.0.0.1"));
        assert_eq!(name("[::1]:7077").as_deref(), Some("::1"));
        assert_eq!(name("bad name:1"), None);
    }
}
