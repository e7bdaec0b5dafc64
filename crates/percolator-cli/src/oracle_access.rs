//! How every command reaches a secured timestamp oracle beyond its address: TLS trust, a client
//! certificate, the token. Each command that builds an oracle client from `--oracle` (or
//! `--addr`) passes its settings through [`client_config`], so the flags mean the same
//! everywhere. An oracle the command starts in-process is plain and needs none of them.

use std::path::PathBuf;
use std::sync::OnceLock;

use percolator::hbase::TlsOptions;
use percolator::oracle::{ClientConfig, OracleToken};
use percolator::Result;

/// The oracle flags every command takes.
///
/// ```
/// use clap::Parser;
/// let cli = percolator_cli::cli::Cli::parse_from([
///     "percolator", "--oracle-tls-ca", "ca.pem", "locks", "--hbase", "h:1", "t",
/// ]);
/// assert_eq!(cli.common.oracle_access.oracle_tls_ca.as_deref(), Some("ca.pem".as_ref()));
/// ```
#[derive(clap::Args, Clone, Debug, Default)]
#[command(next_help_heading = "Oracle TLS and token")]
pub struct OracleAccess {
    /// Speak TLS to the oracle, trusting the system's CA certificates (implied by the other
    /// --oracle-tls-* flags).
    #[arg(long, global = true, hide_short_help = true)]
    pub oracle_tls: bool,
    /// PEM file of the CA certificates the oracle's certificate is checked against; turns TLS
    /// on.
    #[arg(long, global = true, hide_short_help = true, value_name = "FILE")]
    pub oracle_tls_ca: Option<PathBuf>,
    /// Client certificate (PEM) for an oracle that requires one; with --oracle-tls-key.
    #[arg(
        long,
        global = true,
        hide_short_help = true,
        value_name = "FILE",
        requires = "oracle_tls_key"
    )]
    pub oracle_tls_cert: Option<PathBuf>,
    /// The client certificate's private key, PEM.
    #[arg(
        long,
        global = true,
        hide_short_help = true,
        value_name = "FILE",
        requires = "oracle_tls_cert"
    )]
    pub oracle_tls_key: Option<PathBuf>,
    /// Accept the oracle's certificate whatever host it names (it must still be signed by a
    /// trusted CA).
    #[arg(long, global = true, hide_short_help = true)]
    pub oracle_tls_no_verify_hostname: bool,
    /// File holding the token an oracle requires (default: env PERCOLATOR_ORACLE_TOKEN).
    #[arg(long, global = true, hide_short_help = true, value_name = "FILE")]
    pub oracle_token_file: Option<PathBuf>,
}

static OPTIONS: OnceLock<OracleAccess> = OnceLock::new();

/// Sets the flags [`client_config`] applies; a binary calls it once, after parsing.
pub fn set(options: OracleAccess) {
    let _ = OPTIONS.set(options);
}

/// `base` with the TLS and token of the flags (or of `$PERCOLATOR_ORACLE_TOKEN`). Unusable
/// files fail here, naming the file.
///
/// ```
/// use percolator::oracle::ClientConfig;
/// let config = percolator_cli::oracle_access::client_config(ClientConfig::default())?;
/// assert!(config.tls.is_none(), "plain unless a flag asks for TLS");
/// # Ok::<(), percolator::Error>(())
/// ```
pub fn client_config(base: ClientConfig) -> Result<ClientConfig> {
    let default = OracleAccess::default();
    apply(OPTIONS.get().unwrap_or(&default), base)
}

fn apply(flags: &OracleAccess, mut config: ClientConfig) -> Result<ClientConfig> {
    let client_cert = flags
        .oracle_tls_cert
        .clone()
        .zip(flags.oracle_tls_key.clone());
    if flags.oracle_tls
        || flags.oracle_tls_ca.is_some()
        || client_cert.is_some()
        || flags.oracle_tls_no_verify_hostname
    {
        config.tls = Some(TlsOptions {
            ca_file: flags.oracle_tls_ca.clone(),
            client_cert,
            verify_hostname: !flags.oracle_tls_no_verify_hostname,
        });
    }
    config.token = match &flags.oracle_token_file {
        Some(path) => Some(OracleToken::from_file(path)?),
        None => OracleToken::from_env()?.or(config.token),
    };
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_turn_tls_on_and_read_the_token_file() {
        let dir = tempfile::tempdir().unwrap();
        let token = dir.path().join("token");
        std::fs::write(&token, "s3cret\n").unwrap();
        let flags = OracleAccess {
            oracle_tls_ca: Some("ca.pem".into()),
            oracle_token_file: Some(token),
            ..OracleAccess::default()
        };
        let config = apply(&flags, ClientConfig::default()).unwrap();
        let tls = config.tls.unwrap();
        assert_eq!(tls.ca_file.as_deref(), Some("ca.pem".as_ref()));
        assert!(tls.verify_hostname);
        assert!(config.token.unwrap().matches(b"s3cret"));

        let missing = OracleAccess {
            oracle_token_file: Some(dir.path().join("missing")),
            ..OracleAccess::default()
        };
        let err = apply(&missing, ClientConfig::default()).unwrap_err();
        assert!(err.to_string().contains("missing"), "{err}");
    }
}
