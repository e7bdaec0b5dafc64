//! How every command reaches the HBase gateway beyond its address: TLS trust, Kerberos, the
//! end user to act as, the Thrift framing. Each flag falls back on the environment variable
//! [`HBaseConfig::with_env`] reads (the names `scripts/real-hbase start` prints), and the
//! address itself takes the forms [`HBaseConfig::addr`] lists (`http://`, `https://`, lists).

use std::path::PathBuf;
use std::sync::OnceLock;

use percolator::hbase::{Kerberos, Qop};
use percolator::{HBaseConfig, Result};

/// The gateway flags every `percolator` command takes.
///
/// ```
/// use clap::Parser;
/// let cli = percolator_cli::cli::Cli::parse_from([
///     "percolator", "--hbase-ca", "ca.pem", "--do-as", "alice", "locks", "--hbase", "h:1", "t",
/// ]);
/// assert_eq!(cli.common.gateway.do_as.as_deref(), Some("alice"));
/// ```
#[derive(clap::Args, Clone, Debug, Default)]
#[command(next_help_heading = "Gateway TLS, Kerberos and impersonation")]
pub struct GatewayOptions {
    /// PEM file of the CA certificates an https:// gateway is checked against (default: the
    /// system's roots; env HBASE_CA_FILE).
    #[arg(long, global = true, hide_short_help = true, value_name = "FILE")]
    pub hbase_ca: Option<PathBuf>,
    /// Client certificate (PEM) for a gateway that asks for one; with --hbase-client-key
    /// (env HBASE_CLIENT_CERT).
    #[arg(
        long,
        global = true,
        hide_short_help = true,
        value_name = "FILE",
        requires = "hbase_client_key"
    )]
    pub hbase_client_cert: Option<PathBuf>,
    /// The client certificate's private key, PEM (env HBASE_CLIENT_KEY).
    #[arg(
        long,
        global = true,
        hide_short_help = true,
        value_name = "FILE",
        requires = "hbase_client_cert"
    )]
    pub hbase_client_key: Option<PathBuf>,
    /// Accept an https:// gateway's certificate whatever host it names (it must still be
    /// signed by a trusted CA).
    #[arg(long, global = true, hide_short_help = true)]
    pub hbase_no_verify_hostname: bool,
    /// The client's Kerberos principal; turns Kerberos on: SASL/GSSAPI on a raw socket,
    /// SPNEGO over HTTP (env HBASE_KRB_CLIENT_PRINCIPAL).
    #[arg(long, global = true, hide_short_help = true, value_name = "PRINCIPAL")]
    pub kerberos_principal: Option<String>,
    /// A keytab to log in from; turns Kerberos on (env HBASE_KRB_CLIENT_KEYTAB).
    #[arg(long, global = true, hide_short_help = true, value_name = "FILE")]
    pub kerberos_keytab: Option<PathBuf>,
    /// A Kerberos ticket cache, e.g. FILE:/tmp/krb5cc_1000; turns Kerberos on (env
    /// HBASE_KRB_CCACHE; default: KRB5CCNAME's).
    #[arg(long, global = true, hide_short_help = true, value_name = "CCACHE")]
    pub kerberos_ccache: Option<String>,
    /// Turns Kerberos on with the default ticket cache.
    #[arg(long, global = true, hide_short_help = true)]
    pub kerberos: bool,
    /// The gateway's Kerberos principal when it is not hbase/HOST (raw socket) or HTTP/HOST
    /// (HTTP), as behind a load balancer (env HBASE_KRB_SERVICE_PRINCIPAL).
    #[arg(long, global = true, hide_short_help = true, value_name = "PRINCIPAL")]
    pub kerberos_service_principal: Option<String>,
    /// SASL protection on a Kerberos raw socket: auth, auth-int or auth-conf (default; env
    /// HBASE_SASL_QOP). It must be the gateway's hbase.thrift.security.qop.
    #[arg(long, global = true, hide_short_help = true, value_name = "QOP")]
    pub sasl_qop: Option<Qop>,
    /// Act as this end user on an HTTP gateway that allows impersonation
    /// (hbase.thrift.support.proxyuser; env HBASE_DO_AS).
    #[arg(long, global = true, hide_short_help = true, value_name = "USER")]
    pub do_as: Option<String>,
}

static OPTIONS: OnceLock<GatewayOptions> = OnceLock::new();

/// Sets the flags [`config`] applies; the binary calls it once, after parsing.
pub fn set(options: GatewayOptions) {
    let _ = OPTIONS.set(options);
}

/// The configuration for the gateway at `addr`: the environment's settings, then the flags'.
///
/// ```
/// let config = percolator_cli::gateway::config("http://127.0.0.1:9090").unwrap();
/// assert_eq!(config.addr, "http://127.0.0.1:9090");
/// ```
pub fn config(addr: &str) -> Result<HBaseConfig> {
    let mut config = HBaseConfig::new(addr).with_env()?;
    let Some(flags) = OPTIONS.get() else {
        return Ok(config);
    };
    if let Some(ca) = &flags.hbase_ca {
        config.tls.ca_file = Some(ca.clone());
    }
    if let (Some(cert), Some(key)) = (&flags.hbase_client_cert, &flags.hbase_client_key) {
        config.tls.client_cert = Some((cert.clone(), key.clone()));
    }
    if flags.hbase_no_verify_hostname {
        config.tls.verify_hostname = false;
    }
    let wants_kerberos = flags.kerberos
        || flags.kerberos_principal.is_some()
        || flags.kerberos_keytab.is_some()
        || flags.kerberos_ccache.is_some();
    if wants_kerberos {
        let mut kerberos: Kerberos = config.kerberos.take().unwrap_or_default();
        if let Some(principal) = &flags.kerberos_principal {
            kerberos.principal = Some(principal.clone());
        }
        if let Some(keytab) = &flags.kerberos_keytab {
            kerberos.keytab = Some(keytab.clone());
        }
        if let Some(ccache) = &flags.kerberos_ccache {
            kerberos.ccache = Some(ccache.clone());
        }
        config.kerberos = Some(kerberos);
    }
    if let (Some(kerberos), Some(service)) =
        (config.kerberos.as_mut(), &flags.kerberos_service_principal)
    {
        kerberos.service_principal = Some(service.clone());
    }
    if let Some(qop) = flags.sasl_qop {
        config.qop = qop;
    }
    if let Some(user) = &flags.do_as {
        config.do_as = Some(user.clone());
    }
    Ok(config)
}
