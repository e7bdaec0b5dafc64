//! What secures an oracle, shared by its server and its client: the token both sides hold,
//! the server's TLS files, and why an oracle refused a client.
//!
//! A token is compared as SHA-256 digests in constant time, so neither its bytes nor its
//! length leak through the time a refusal takes; it is never logged or shown by `Debug`.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use subtle::ConstantTimeEq;

use crate::{Error, Result};

/// The environment variable a token is read from when no token file is given (the CLIs).
pub const TOKEN_ENV: &str = "PERCOLATOR_ORACLE_TOKEN";

/// The longest token the protocol carries, in bytes.
pub const MAX_TOKEN_LEN: usize = 1024;

/// A shared secret clients present to an oracle that requires it. `Debug` never shows it.
///
/// ```
/// use percolator::oracle::OracleToken;
/// let token = OracleToken::new("s3cret")?;
/// assert_eq!(format!("{token:?}"), "OracleToken(<redacted>)");
/// assert!(token.matches(b"s3cret"));
/// assert!(!token.matches(b"s3cre"));
/// assert!(OracleToken::new("").is_err());
/// # Ok::<(), percolator::Error>(())
/// ```
#[derive(Clone)]
pub struct OracleToken {
    bytes: Arc<[u8]>,
    digest: [u8; 32],
}

impl OracleToken {
    /// A token of 1..=1024 bytes. Surrounding whitespace (a file's trailing newline) is
    /// dropped.
    pub fn new(token: impl AsRef<[u8]>) -> Result<OracleToken> {
        let bytes = token.as_ref().trim_ascii();
        if bytes.is_empty() || bytes.len() > MAX_TOKEN_LEN {
            return Err(Error::IllegalArgument {
                message: format!(
                    "an oracle token has 1..={MAX_TOKEN_LEN} bytes besides surrounding whitespace, not {}",
                    bytes.len()
                ),
            });
        }
        Ok(OracleToken {
            bytes: bytes.into(),
            digest: digest(bytes),
        })
    }

    /// The token in the file `path` (surrounding whitespace dropped).
    ///
    /// ```
    /// use percolator::oracle::OracleToken;
    /// let err = OracleToken::from_file("/nonexistent/token").unwrap_err();
    /// assert!(matches!(&err, percolator::Error::OracleSettings { file: Some(f), .. }
    ///     if f.ends_with("token")), "{err}");
    /// ```
    pub fn from_file(path: impl AsRef<Path>) -> Result<OracleToken> {
        let path = path.as_ref();
        let settings = |detail: String| Error::OracleSettings {
            file: Some(path.to_path_buf()),
            detail,
        };
        let bytes = std::fs::read(path)
            .map_err(|e| settings(format!("token file {}: {e}", path.display())))?;
        OracleToken::new(bytes).map_err(|e| settings(format!("token file {}: {e}", path.display())))
    }

    /// The token in `$PERCOLATOR_ORACLE_TOKEN`, if it is set and not empty.
    pub fn from_env() -> Result<Option<OracleToken>> {
        match std::env::var_os(TOKEN_ENV) {
            Some(v) if !v.is_empty() => {
                OracleToken::new(v.as_encoded_bytes())
                    .map(Some)
                    .map_err(|e| Error::OracleSettings {
                        file: None,
                        detail: format!("{TOKEN_ENV}: {e}"),
                    })
            }
            _ => Ok(None),
        }
    }

    /// Whether `presented` is this token, in time that depends on neither.
    pub fn matches(&self, presented: &[u8]) -> bool {
        bool::from(self.digest.ct_eq(&digest(presented)))
    }

    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }
}

impl fmt::Debug for OracleToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Not even the length: the comparison hides it too.
        f.write_str("OracleToken(<redacted>)")
    }
}

fn digest(bytes: &[u8]) -> [u8; 32] {
    let d = ring::digest::digest(&ring::digest::SHA256, bytes);
    let mut out = [0u8; 32];
    out.copy_from_slice(d.as_ref());
    out
}

/// The oracle's TLS: its certificate, and whether and which clients must show one.
///
/// ```
/// use percolator::oracle::ServerTls;
/// let tls = ServerTls::new("oracle.pem", "oracle.key");
/// assert!(tls.client_ca.is_none(), "client certificates not asked for");
/// assert!(tls.allowed_clients.is_empty());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerTls {
    /// The server's certificate chain, PEM, its own certificate first.
    pub cert_chain: PathBuf,
    /// The certificate's private key, PEM.
    pub key: PathBuf,
    /// PEM file of the CAs client certificates must be signed by. With it, every client must
    /// present a certificate (mutual TLS).
    pub client_ca: Option<PathBuf>,
    /// Identities a client certificate must have one of: its subject's common name or one of
    /// its DNS names. Empty: any certificate the CAs signed. Needs `client_ca`.
    pub allowed_clients: Vec<String>,
}

impl ServerTls {
    /// TLS with the certificate chain and key in these PEM files, client certificates not
    /// asked for.
    pub fn new(cert_chain: impl Into<PathBuf>, key: impl Into<PathBuf>) -> ServerTls {
        ServerTls {
            cert_chain: cert_chain.into(),
            key: key.into(),
            client_ca: None,
            allowed_clients: Vec::new(),
        }
    }
}

/// Why an oracle and a client would not talk: the client's settings do not match the
/// server's. Retrying cannot help, and other oracles of a fail-over list are configured alike,
/// so the client fails at once ([`Error::OracleAuth`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthFailure {
    /// The oracle requires a token and the client sent none.
    #[error(
        "the oracle requires a token (--oracle-token-file or {TOKEN_ENV}; ClientConfig::token)"
    )]
    TokenRequired,
    /// The token the client sent is not the oracle's.
    #[error("the oracle rejected the token")]
    TokenRejected,
    /// The oracle requires a client certificate and the client showed none.
    #[error("the oracle requires a client certificate (--oracle-tls-cert and --oracle-tls-key)")]
    CertificateRequired,
    /// The client certificate is signed by a trusted CA, but its identity is not on the
    /// oracle's list of allowed clients.
    #[error(
        "the oracle does not allow this client certificate's identity (its --allow-client list)"
    )]
    IdentityNotAllowed,
    /// The oracle ended the TLS handshake over the client's certificate (not signed by a CA it
    /// trusts, expired, ...).
    #[error("the oracle refused the client certificate (TLS alert {alert})")]
    CertificateRefused {
        /// The alert the server sent.
        alert: String,
    },
    /// The oracle serves TLS only and the client spoke plain TCP.
    #[error("the oracle requires TLS (give its CA with --oracle-tls-ca; ClientConfig::tls)")]
    TlsRequired,
    /// The client does not trust the oracle's certificate (unknown CA, another name, expired).
    #[error("the oracle's certificate is not trusted: {detail}")]
    UntrustedServer {
        /// What was wrong with it.
        detail: String,
    },
}
