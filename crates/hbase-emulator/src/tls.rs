//! A TLS server configuration from PEM files' contents.

use std::io;
use std::sync::Arc;

use rustls::crypto::{ring, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};

fn invalid(what: &str, e: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, format!("{what}: {e}"))
}

/// A TLS server configuration (TLS 1.2 and 1.3, rustls with *ring*) for
/// [`EmulatorConfig::tls`](crate::EmulatorConfig::tls): the certificate chain and private key
/// in PEM (the key as PKCS#8, PKCS#1 or SEC1), and, if `client_ca_pem` is given, the PEM
/// certificates of the authorities that client certificates must chain to, which makes a
/// client certificate required.
///
/// ```
/// let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()])?;
/// let config = hbase_emulator::tls_config_from_pem(
///     cert.cert.pem().as_bytes(),
///     cert.key_pair.serialize_pem().as_bytes(),
///     None,
/// )?;
/// assert!(config.alpn_protocols.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn tls_config_from_pem(
    cert_chain_pem: &[u8],
    key_pem: &[u8],
    client_ca_pem: Option<&[u8]>,
) -> io::Result<Arc<ServerConfig>> {
    let chain = CertificateDer::pem_slice_iter(cert_chain_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| invalid("certificate PEM", e))?;
    if chain.is_empty() {
        return Err(invalid("certificate PEM", "no CERTIFICATE block"));
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| invalid("key PEM", e))?;
    // Explicit, so that another crypto provider in the same build changes nothing.
    let provider = Arc::new(ring::default_provider());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| invalid("TLS versions", e))?;
    let builder = match client_ca_pem {
        None => builder.with_no_client_auth(),
        Some(pem) => {
            let mut roots = RootCertStore::empty();
            for cert in CertificateDer::pem_slice_iter(pem) {
                roots
                    .add(cert.map_err(|e| invalid("client CA PEM", e))?)
                    .map_err(|e| invalid("client CA certificate", e))?;
            }
            if roots.is_empty() {
                return Err(invalid("client CA PEM", "no CERTIFICATE block"));
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider as Arc<CryptoProvider>,
            )
            .build()
            .map_err(|e| invalid("client verifier", e))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let config = builder
        .with_single_cert(chain, key)
        .map_err(|e| invalid("certificate and key", e))?;
    Ok(Arc::new(config))
}
