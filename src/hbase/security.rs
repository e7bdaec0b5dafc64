//! What a secured gateway asks of the client: TLS trust and identity, Kerberos credentials,
//! the SASL protection level, and the end user to act as. Plain settings; the connection layer
//! (`link`) puts them to work.

use std::fmt;
use std::path::PathBuf;

/// How an `https://` gateway is trusted, and how the client proves itself to it.
///
/// ```
/// use percolator::hbase::TlsOptions;
/// let tls = TlsOptions::default();
/// assert!(tls.ca_file.is_none(), "the system's roots");
/// assert!(tls.verify_hostname, "on unless turned off");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsOptions {
    /// PEM file of the certificates to trust; `None`: the system's roots.
    pub ca_file: Option<PathBuf>,
    /// A client certificate chain and its private key (both PEM), for a gateway that asks
    /// for one.
    pub client_cert: Option<(PathBuf, PathBuf)>,
    /// Whether the certificate must name the host the client connected to (default true).
    /// Turning it off still checks that a trusted CA signed it.
    pub verify_hostname: bool,
}

impl Default for TlsOptions {
    fn default() -> Self {
        TlsOptions {
            ca_file: None,
            client_cert: None,
            verify_hostname: true,
        }
    }
}

/// Where the client's Kerberos credentials come from. With them set, a raw-socket gateway is
/// spoken to through SASL/GSSAPI (`hbase.thrift.security.qop`), and an HTTP one with SPNEGO
/// (`Authorization: Negotiate`). Needs the crate's `kerberos` feature and MIT Kerberos'
/// `libgssapi_krb5.so.2` at run time.
///
/// ```
/// use percolator::hbase::Kerberos;
/// let from_keytab = Kerberos::keytab("svc@EXAMPLE.COM", "/etc/svc.keytab");
/// assert_eq!(from_keytab.principal.as_deref(), Some("svc@EXAMPLE.COM"));
/// assert!(Kerberos::default().keytab.is_none(), "the ticket cache");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Kerberos {
    /// The client's principal; `None`: the keytab's first entry or the ticket cache's owner.
    pub principal: Option<String>,
    /// A keytab to obtain tickets from; `None`: the ticket cache.
    pub keytab: Option<PathBuf>,
    /// The ticket cache (`FILE:/tmp/krb5cc_1000`); `None`: the default (`KRB5CCNAME`).
    pub ccache: Option<String>,
    /// The gateway's service principal when it is not `hbase/<gateway host>` (raw socket) or
    /// `HTTP/<gateway host>` (HTTP), as behind a load balancer.
    pub service_principal: Option<String>,
}

impl Kerberos {
    /// Credentials obtained from a keytab for `principal`.
    pub fn keytab(principal: impl Into<String>, keytab: impl Into<PathBuf>) -> Self {
        Kerberos {
            principal: Some(principal.into()),
            keytab: Some(keytab.into()),
            ..Kerberos::default()
        }
    }
}

/// The SASL protection of a Kerberos raw-socket connection; it must be one the gateway offers
/// (`hbase.thrift.security.qop`).
///
/// ```
/// use percolator::hbase::Qop;
/// assert_eq!("auth-int".parse::<Qop>(), Ok(Qop::AuthInt));
/// assert_eq!(Qop::default().to_string(), "auth-conf");
/// assert_eq!("privacy".parse::<Qop>(), Ok(Qop::AuthConf), "HBase's own name for it");
/// assert!("secret".parse::<Qop>().is_err());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Qop {
    /// Authentication only: messages travel as they are.
    Auth,
    /// Authentication and integrity: every message is signed.
    AuthInt,
    /// Authentication, integrity and confidentiality: every message is encrypted.
    #[default]
    AuthConf,
}

impl fmt::Display for Qop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Qop::Auth => "auth",
            Qop::AuthInt => "auth-int",
            Qop::AuthConf => "auth-conf",
        })
    }
}

impl std::str::FromStr for Qop {
    type Err = String;

    /// `auth`, `auth-int`, `auth-conf`, or HBase's names for them (`authentication`,
    /// `integrity`, `privacy`), in any case.
    fn from_str(s: &str) -> Result<Qop, String> {
        match s.to_ascii_lowercase().as_str() {
            "auth" | "authentication" => Ok(Qop::Auth),
            "auth-int" | "integrity" => Ok(Qop::AuthInt),
            "auth-conf" | "privacy" => Ok(Qop::AuthConf),
            _ => Err(format!(
                "unknown SASL qop `{s}` (auth, auth-int or auth-conf)"
            )),
        }
    }
}
