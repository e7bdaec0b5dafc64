//! TLS to an `https://` gateway, with rustls: the client configuration built once per client
//! from [`TlsOptions`], the handshake when a connection opens, and the record layer after it.

use std::io::{self, BufRead as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore,
    SignatureScheme,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::Layer;
use crate::hbase::errors::{Cause, TlsFailure};
use crate::hbase::security::TlsOptions;

impl TlsFailure {
    fn of(error: &rustls::Error, host: &str) -> TlsFailure {
        match error {
            rustls::Error::InvalidCertificate(cert) => match cert {
                CertificateError::UnknownIssuer
                | CertificateError::BadSignature
                | CertificateError::InvalidPurpose => TlsFailure::UntrustedCertificate {
                    detail: format!("{cert:?}"),
                },
                CertificateError::NotValidForName
                | CertificateError::NotValidForNameContext { .. } => TlsFailure::HostnameMismatch {
                    host: host.to_owned(),
                },
                CertificateError::Expired
                | CertificateError::ExpiredContext { .. }
                | CertificateError::NotValidYet
                | CertificateError::NotValidYetContext { .. } => TlsFailure::CertificateExpired,
                other => TlsFailure::UntrustedCertificate {
                    detail: format!("{other:?}"),
                },
            },
            rustls::Error::AlertReceived(alert) => TlsFailure::Refused {
                alert: format!("{alert:?}"),
            },
            rustls::Error::InvalidMessage(_) | rustls::Error::InappropriateMessage { .. } => {
                TlsFailure::NotTls {
                    detail: error.to_string(),
                }
            }
            other => TlsFailure::Other {
                detail: other.to_string(),
            },
        }
    }

    fn settings(detail: String) -> TlsFailure {
        TlsFailure::Settings { detail }
    }
}

/// A PEM file (or the system's certificate store, `file: None`) that cannot be used; the
/// detail names the file. Shared with the oracle, whose TLS loads the same kinds of files.
#[derive(Clone, Debug)]
pub(crate) struct PemError {
    pub file: Option<PathBuf>,
    pub detail: String,
}

impl std::fmt::Display for PemError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.detail)
    }
}

impl PemError {
    fn at(path: &Path, detail: String) -> PemError {
        PemError {
            file: Some(path.to_path_buf()),
            detail,
        }
    }
}

/// The certificates of `ca_file` (all of them must parse), or the system's store for `None`.
pub(crate) fn load_roots(ca_file: Option<&Path>) -> Result<RootCertStore, PemError> {
    let mut roots = RootCertStore::empty();
    match ca_file {
        Some(path) => {
            let bad = |e: &dyn std::fmt::Display| {
                PemError::at(path, format!("CA file {}: {e}", path.display()))
            };
            for cert in CertificateDer::pem_file_iter(path).map_err(|e| bad(&e))? {
                roots.add(cert.map_err(|e| bad(&e))?).map_err(|e| bad(&e))?;
            }
            if roots.is_empty() {
                return Err(PemError::at(
                    path,
                    format!("CA file {} holds no certificate", path.display()),
                ));
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            let (added, _ignored) = roots.add_parsable_certificates(found.certs);
            if added == 0 {
                return Err(PemError {
                    file: None,
                    detail: "no CA certificate in the system's store; give one with a CA file"
                        .into(),
                });
            }
        }
    }
    Ok(roots)
}

/// The certificate chain in the PEM file `path` (`what` names it in errors: "client
/// certificate").
pub(crate) fn load_chain(
    path: &Path,
    what: &str,
) -> Result<Vec<CertificateDer<'static>>, PemError> {
    let chain = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| PemError::at(path, format!("{what} {}: {e}", path.display())))?;
    if chain.is_empty() {
        return Err(PemError::at(
            path,
            format!("{what} {} holds no certificate", path.display()),
        ));
    }
    Ok(chain)
}

/// The private key in the PEM file `path`.
pub(crate) fn load_key(path: &Path, what: &str) -> Result<PrivateKeyDer<'static>, PemError> {
    PrivateKeyDer::from_pem_file(path)
        .map_err(|e| PemError::at(path, format!("{what} {}: {e}", path.display())))
}

/// The rustls client configuration for `options`, built once per client. Errors name the file
/// at fault.
pub(crate) fn client_config_of(options: &TlsOptions) -> Result<Arc<ClientConfig>, PemError> {
    let settings = |detail: String| PemError { file: None, detail };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let roots = load_roots(options.ca_file.as_deref())?;
    let verifier = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(|e| settings(e.to_string()))?;
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| settings(e.to_string()))?;
    let builder = if options.verify_hostname {
        builder.with_webpki_verifier(verifier)
    } else {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyName { inner: verifier }))
    };
    let config = match &options.client_cert {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => {
            let chain = load_chain(cert, "client certificate")?;
            let key = load_key(key, "client key")?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| PemError::at(cert, format!("client certificate: {e}")))?
        }
    };
    Ok(Arc::new(config))
}

/// The rustls client configuration for `options`, built once per client.
pub(crate) fn client_config(options: &TlsOptions) -> Result<Arc<ClientConfig>, TlsFailure> {
    client_config_of(options).map_err(|e| TlsFailure::settings(e.detail))
}

/// Checks the chain as usual but accepts a certificate for any name: what
/// `verify_hostname: false` asks for.
#[derive(Debug)]
struct AnyName {
    inner: Arc<WebPkiServerVerifier>,
}

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// Runs the handshake with the gateway at `host` on a fresh `stream`; the returned layer
/// carries the connection's data after it.
pub(crate) async fn connect(
    config: &Arc<ClientConfig>,
    host: &str,
    stream: &mut TcpStream,
) -> io::Result<Tls> {
    let name = ServerName::try_from(host.to_owned())
        .map_err(|e| TlsFailure::settings(format!("`{host}` is not a TLS server name: {e}")))?;
    let mut conn =
        ClientConnection::new(Arc::clone(config), name).map_err(|e| TlsFailure::of(&e, host))?;
    conn.set_buffer_limit(None);
    let mut buf = vec![0u8; 16 << 10];
    loop {
        flush(&mut conn, stream).await?;
        if !conn.is_handshaking() {
            break;
        }
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the gateway closed the connection during the TLS handshake, as a gateway \
                 that does not serve TLS (raw Thrift or plain HTTP) does; if it serves none, \
                 give its address as host:port or http://host:port, without https://",
            ));
        }
        let mut rest = &buf[..n];
        while !rest.is_empty() {
            conn.read_tls(&mut rest)?;
            if let Err(e) = conn.process_new_packets() {
                // Tell the gateway why, as TLS asks; it may already be gone.
                let _ = flush(&mut conn, stream).await;
                return Err(TlsFailure::of(&e, host).into());
            }
        }
    }
    Ok(Tls {
        conn,
        host: host.to_owned(),
    })
}

async fn flush(conn: &mut ClientConnection, stream: &mut TcpStream) -> io::Result<()> {
    while conn.wants_write() {
        let mut out = Vec::new();
        conn.write_tls(&mut out)?;
        stream.write_all(&out).await?;
    }
    Ok(())
}

/// The record layer of an established TLS connection.
pub(crate) struct Tls {
    conn: ClientConnection,
    host: String,
}

impl Tls {
    fn failed(&self, error: &rustls::Error) -> Cause {
        Cause::Tls(TlsFailure::of(error, &self.host))
    }
}

impl Layer for Tls {
    fn seal(&mut self, request: &[u8], out: &mut Vec<u8>) -> Result<(), Cause> {
        self.conn
            .writer()
            .write_all(request)
            .map_err(|e| Cause::io(&e))?;
        self.pending(out)
    }

    fn open(&mut self, wire: &[u8], plain: &mut Vec<u8>) -> Result<usize, Cause> {
        let mut rest = wire;
        while !rest.is_empty() {
            let n = self.conn.read_tls(&mut rest).map_err(|e| Cause::io(&e))?;
            if n == 0 {
                break;
            }
            self.conn
                .process_new_packets()
                .map_err(|e| self.failed(&e))?;
            // Decrypted bytes are copied straight out of rustls's buffer: a bounce buffer
            // would cost a 16 KiB fill per read, more than the reply it carries.
            loop {
                let mut reader = self.conn.reader();
                let taken = match reader.fill_buf() {
                    // The gateway ended the session (close_notify): what came before it is
                    // passed on, and the end of the stream says the rest.
                    Ok([]) => return Ok(wire.len() - rest.len()),
                    Ok(chunk) => {
                        plain.extend_from_slice(chunk);
                        chunk.len()
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) => return Err(Cause::io(&e)),
                };
                reader.consume(taken);
            }
        }
        Ok(wire.len() - rest.len())
    }

    fn pending(&mut self, out: &mut Vec<u8>) -> Result<(), Cause> {
        while self.conn.wants_write() {
            self.conn.write_tls(out).map_err(|e| Cause::io(&e))?;
        }
        Ok(())
    }
}
