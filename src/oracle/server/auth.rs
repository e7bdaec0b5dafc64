//! The server's side of securing a connection: TLS (with client certificates when configured)
//! before the hello, then the checks on the hello's credentials. Built once from the
//! [`ServerConfig`], when the oracle starts, so unusable files fail the start, naming the file.

use std::sync::Arc;
use std::time::Duration;

use rustls::server::WebPkiClientVerifier;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

use super::identity;
use super::ServerConfig;
use crate::hbase::link::tls::{load_chain, load_key, load_roots, PemError};
use crate::oracle::auth::{OracleToken, ServerTls};
use crate::oracle::protocol::{self, HelloStatus};
use crate::{Error, Result};

/// How connections are secured and what a hello must carry.
pub(crate) struct Security {
    tls: Option<TlsAcceptor>,
    /// Clients must show a certificate (a client CA is configured).
    require_cert: bool,
    allowed: Vec<String>,
    token: Option<OracleToken>,
}

/// A connection after its TLS handshake, if any: the stream and what the certificate check
/// decided (a refusal is sent in the hello's status, so the client learns why).
pub(crate) enum Opened {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>, Result<(), Refusal>),
}

/// A refused client: the hello status it gets, and what the log says (which check failed,
/// never what was presented as a token).
pub(crate) struct Refusal {
    pub status: HelloStatus,
    pub why: String,
}

impl From<HelloStatus> for Refusal {
    fn from(status: HelloStatus) -> Refusal {
        let why = match status {
            HelloStatus::TokenRequired => "no token in the hello",
            HelloStatus::TokenRejected => "wrong token",
            HelloStatus::CertificateRequired => "no client certificate",
            HelloStatus::IdentityNotAllowed => "client certificate identity not allowed",
            _ => "refused",
        };
        Refusal {
            status,
            why: why.into(),
        }
    }
}

impl Security {
    pub fn new(config: &ServerConfig) -> Result<Arc<Security>> {
        let tls = config.tls.as_ref().map(acceptor).transpose()?;
        let tls_settings = config.tls.as_ref();
        if tls_settings.is_some_and(|t| !t.allowed_clients.is_empty() && t.client_ca.is_none()) {
            return Err(Error::OracleSettings {
                file: None,
                detail: "allowed client identities need a client CA to verify certificates against (--tls-client-ca)".into(),
            });
        }
        if config.token.is_some() && tls.is_none() {
            tracing::warn!("the oracle requires a token without TLS: the token crosses the network in the clear");
        }
        Ok(Arc::new(Security {
            tls,
            require_cert: tls_settings.is_some_and(|t| t.client_ca.is_some()),
            allowed: tls_settings
                .map(|t| t.allowed_clients.clone())
                .unwrap_or_default(),
            token: config.token.clone(),
        }))
    }

    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// Runs the TLS handshake within `timeout` (nothing for plain TCP). A plain client on a
    /// TLS port is told so in the clear, with hello status 8, and `Err` says why it ended.
    pub async fn open(
        &self,
        mut stream: TcpStream,
        timeout: Duration,
    ) -> std::result::Result<Opened, String> {
        let Some(acceptor) = &self.tls else {
            return Ok(Opened::Plain(stream));
        };
        let opening = async {
            // A TLS client starts with a handshake record (0x16); an oracle client speaking
            // plain TCP starts with the magic's `P`, which is no TLS record type.
            let mut first = [0u8; 1];
            stream
                .peek(&mut first)
                .await
                .map_err(|e| format!("I/O error: {e}"))?;
            if first[0] == protocol::MAGIC[0] {
                turn_plain_away(&mut stream).await;
                return Err("a plain TCP client on the TLS port: told to use TLS".to_string());
            }
            let tls = acceptor
                .accept(stream)
                .await
                .map_err(|e| format!("TLS handshake failed: {e}"))?;
            let verdict = self.check_certificate(&tls);
            Ok(Opened::Tls(Box::new(tls), verdict))
        };
        tokio::time::timeout(timeout, opening)
            .await
            .unwrap_or_else(|_| Err(format!("no TLS handshake within {timeout:?}")))
    }

    fn check_certificate(&self, tls: &TlsStream<TcpStream>) -> Result<(), Refusal> {
        if !self.require_cert {
            return Ok(());
        }
        // The verifier already checked the chain against the client CAs.
        let Some(cert) = tls.get_ref().1.peer_certificates().and_then(|c| c.first()) else {
            return Err(HelloStatus::CertificateRequired.into());
        };
        if !self.allowed.is_empty() && !identity::is_allowed(cert, &self.allowed) {
            let name = identity::common_name(cert).unwrap_or_else(|| "none".into());
            return Err(Refusal {
                status: HelloStatus::IdentityNotAllowed,
                why: format!("client certificate identity not allowed (common name {name:?})"),
            });
        }
        Ok(())
    }

    /// Checks the hello's token (if the server requires one).
    pub fn check_token(&self, presented: Option<&[u8]>) -> Result<(), HelloStatus> {
        match (&self.token, presented) {
            (None, _) => Ok(()),
            (Some(_), None) => Err(HelloStatus::TokenRequired),
            (Some(token), Some(presented)) if token.matches(presented) => Ok(()),
            (Some(_), Some(_)) => Err(HelloStatus::TokenRejected),
        }
    }
}

/// Answers a plain client's hello with status 8. Best effort: the peer may be anything.
async fn turn_plain_away(stream: &mut TcpStream) {
    if skip_hello(stream).await.is_ok() {
        let _ = stream
            .write_all(&protocol::server_hello(HelloStatus::TlsRequired))
            .await;
    }
}

/// Reads a client's hello and token without looking at them, for a connection about to be
/// turned away: closing with them unread would send a reset, which can lose the reply.
pub(crate) async fn skip_hello<S: AsyncRead + Unpin>(stream: &mut S) -> std::io::Result<()> {
    let mut hello = [0u8; protocol::HELLO_LEN];
    stream.read_exact(&mut hello).await?;
    if let Ok(true) = protocol::check_client_hello(&hello) {
        let mut len = [0u8; 2];
        stream.read_exact(&mut len).await?;
        if let Ok(len) = protocol::decode_token_len(len) {
            let mut discard = vec![0u8; len];
            stream.read_exact(&mut discard).await?;
        }
    }
    Ok(())
}

fn settings(e: PemError) -> Error {
    Error::OracleSettings {
        file: e.file,
        detail: e.detail,
    }
}

fn acceptor(tls: &ServerTls) -> Result<TlsAcceptor> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let chain = load_chain(&tls.cert_chain, "certificate").map_err(settings)?;
    let key = load_key(&tls.key, "private key").map_err(settings)?;
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::OracleSettings {
            file: None,
            detail: e.to_string(),
        })?;
    let builder = match &tls.client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let roots = load_roots(Some(ca)).map_err(settings)?;
            // A client without a certificate gets through the handshake, to be refused in the
            // hello with a status saying so instead of an alert it would have to interpret.
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .allow_unauthenticated()
                .build()
                .map_err(|e| Error::OracleSettings {
                    file: Some(ca.clone()),
                    detail: format!("client CA file {}: {e}", ca.display()),
                })?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let config = builder
        .with_single_cert(chain, key)
        .map_err(|e| Error::OracleSettings {
            file: Some(tls.key.clone()),
            detail: format!(
                "certificate {} and key {}: {e}",
                tls.cert_chain.display(),
                tls.key.display()
            ),
        })?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_token(token: Option<&str>) -> Security {
        Security {
            tls: None,
            require_cert: false,
            allowed: Vec::new(),
            token: token.map(|t| OracleToken::new(t).unwrap()),
        }
    }

    #[test]
    fn tokens_are_required_and_compared() {
        let open = with_token(None);
        assert_eq!(open.check_token(None), Ok(()));
        assert_eq!(open.check_token(Some(b"anything")), Ok(()));
        let guarded = with_token(Some("right"));
        assert_eq!(guarded.check_token(Some(b"right")), Ok(()));
        assert_eq!(guarded.check_token(None), Err(HelloStatus::TokenRequired));
        assert_eq!(
            guarded.check_token(Some(b"wrong")),
            Err(HelloStatus::TokenRejected)
        );
        assert_eq!(
            guarded.check_token(Some(b"right-and-more")),
            Err(HelloStatus::TokenRejected)
        );
    }

    #[test]
    fn unusable_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("garbage.pem");
        std::fs::write(&bad, "not a certificate").unwrap();
        let config = ServerConfig {
            tls: Some(ServerTls::new(&bad, &bad)),
            ..ServerConfig::default()
        };
        let err = Security::new(&config).err().unwrap();
        assert!(
            matches!(&err, Error::OracleSettings { file: Some(f), .. } if *f == bad),
            "{err}"
        );
        assert!(err.to_string().contains("garbage.pem"), "{err}");
        let missing = ServerConfig {
            tls: Some(ServerTls::new(dir.path().join("nope.pem"), &bad)),
            ..ServerConfig::default()
        };
        assert!(Security::new(&missing)
            .err()
            .unwrap()
            .to_string()
            .contains("nope.pem"));
    }
}
