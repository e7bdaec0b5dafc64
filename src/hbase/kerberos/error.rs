//! What can go wrong in Kerberos: each variant says what to fix. No variant ever carries a
//! token, a key or a ticket's bytes; server-supplied text is cleaned and shortened first.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use super::Qop;

/// A Kerberos failure: loading the GSSAPI library, finding credentials, or authenticating to
/// the gateway.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KerberosError {
    /// The GSSAPI library could not be loaded (install MIT Kerberos' `libgssapi-krb5-2`, or
    /// point `PERCOLATOR_GSSAPI_LIBRARY` at it).
    #[error("cannot load the GSSAPI library {path}: {reason} (install MIT Kerberos' libgssapi-krb5-2, or set PERCOLATOR_GSSAPI_LIBRARY)")]
    LibraryNotFound { path: String, reason: String },

    /// The library was found but lacks a function this client needs (not MIT Kerberos, or too
    /// old: `gss_acquire_cred_from` needs MIT 1.11).
    #[error("the GSSAPI library {path} has no {symbol} (MIT Kerberos 1.11 or later is needed)")]
    MissingSymbol { path: String, symbol: &'static str },

    /// No ticket in the ticket cache: run `kinit`, or configure a keytab.
    #[error("no Kerberos ticket in the ticket cache {ccache}{for_principal}: {message} (run kinit, or configure a keytab)",
        for_principal = principal.as_deref().map(|p| format!(" for {p}")).unwrap_or_default())]
    NoTicket {
        ccache: String,
        principal: Option<String>,
        message: String,
    },

    /// The keytab cannot be read (missing, or not readable by this process).
    #[error("cannot read the keytab {}: {source}", path.display())]
    KeytabUnreadable {
        path: PathBuf,
        source: std::io::Error,
    },

    /// The keytab has no key for the principal (or, with no principal configured, no entry).
    #[error("the keytab {} has no key for {}: {message}", keytab.display(), principal.as_deref().unwrap_or("any principal"))]
    PrincipalNotInKeytab {
        keytab: PathBuf,
        principal: Option<String>,
        message: String,
    },

    /// The ticket has expired: run `kinit` again, or use a keytab (its tickets are renewed).
    #[error("the Kerberos ticket{for_principal} in {ccache} expired{at} (run kinit again, or use a keytab)",
        for_principal = principal.as_deref().map(|p| format!(" for {p}")).unwrap_or_default(),
        at = expired_at.map(|t| format!(" at {}", super::ccache::format_utc(t))).unwrap_or_default())]
    TicketExpired {
        principal: Option<String>,
        ccache: String,
        expired_at: Option<SystemTime>,
    },

    /// The KDC does not know the gateway's service principal: set `service_principal` (e.g. a
    /// gateway behind a load balancer) or check the host name the client connects to.
    #[error("the KDC does not know the service {service}: {message} (set Kerberos::service_principal if the gateway's principal is not <service>/<host>)")]
    UnknownService { service: String, message: String },

    /// A GSSAPI call failed: its major and minor status codes and the library's message.
    #[error("{call} failed: {message} (major {major:#x}, minor {minor})")]
    Gss {
        call: &'static str,
        major: u32,
        minor: u32,
        message: String,
    },

    /// The gateway refused the SASL negotiation (status BAD or ERROR), with its message.
    #[error("the gateway refused the SASL negotiation ({status}): {message}")]
    ServerRefused {
        status: &'static str,
        message: String,
    },

    /// The gateway does not offer the requested quality of protection (its
    /// `hbase.thrift.security.qop` differs): what it offered.
    #[error(
        "the gateway does not offer qop {requested}; it offers {}",
        Qop::list(offered)
    )]
    QopNotOffered { requested: Qop, offered: Vec<Qop> },

    /// A SASL frame with a status byte that does not belong where it came.
    #[error("unexpected SASL status byte {status:#04x} {during}")]
    UnexpectedStatus { status: u8, during: &'static str },

    /// A frame longer than the limit (a corrupt stream, or not a SASL peer).
    #[error("a SASL frame of {size} bytes exceeds the {max}-byte limit")]
    FrameTooLarge { size: u64, max: u64 },

    /// Any other breach of the SASL or RFC 4752 protocol.
    #[error("SASL protocol error: {0}")]
    Protocol(String),

    /// The configuration or a host name cannot be used (e.g. contains a NUL byte).
    #[error("invalid Kerberos setting: {0}")]
    InvalidConfig(String),

    /// The negotiation did not finish in time.
    #[error("the SASL negotiation did not finish within {0:?}")]
    Timeout(Duration),

    /// The connection failed during the negotiation.
    #[error("I/O error during the SASL negotiation: {0}")]
    Io(#[from] std::io::Error),
}

/// Text from the network made safe for an error message: lossy UTF-8, control characters
/// replaced, at most 512 characters.
pub(super) fn clean_remote_text(bytes: &[u8]) -> String {
    const MAX: usize = 512;
    let text = String::from_utf8_lossy(bytes);
    let mut out: String = text
        .chars()
        .take(MAX)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if text.chars().count() > MAX {
        out.push('…');
    }
    out
}
