//! Kerberos for the gateway: SASL/GSSAPI on Thrift's binary transports, SPNEGO on HTTP.
//!
//! MIT Kerberos' `libgssapi_krb5.so.2` is loaded at run time (no headers or bindgen at build
//! time); `PERCOLATOR_GSSAPI_LIBRARY` names another file. The library reads `KRB5_CONFIG`
//! (krb5.conf), `KRB5CCNAME` (the default ticket cache) and `KRB5_TRACE` (a trace of every
//! exchange, with no secrets) as usual.
//!
//! - `gss`: the FFI and the RAII types over GSSAPI handles (all of the unsafe code).
//! - `sasl`: Thrift's SASL negotiation and the RFC 4752 security layer (`SaslLayer`).
//! - `spnego`: the `Authorization: Negotiate` header for the HTTP transport.
//! - `ccache`: when an expired ticket expired, read from a `FILE:` cache.
//! - `error`: [`KerberosError`].
//!
//! Use from the connection layer:
//! - One `Gss::new` per client (it blocks: with a keytab it fetches the first ticket from the
//!   KDC), shared by its connections (`Gss` is Send + Sync).
//! - Binary transports: SASL runs on the unframed (buffered) transport only (HBase refuses to
//!   start a framed gateway with a qop). After connecting, `sasl_connect`; then every request's
//!   bytes go through `SaslLayer::seal` and every read through `SaslLayer::open`. Both take
//!   `&mut` on one GSS context: a connection with a reader and a writer task shares the layer
//!   behind a mutex (an MIT context must not be used from two threads at once).
//! - `host` is the name in the gateway's principal (`hbase/<host>@REALM`), not an address,
//!   unless `service_principal` is set.
//! - HTTP: `spnego_header` for every request (tens of microseconds once the service ticket is
//!   cached; the first call per host asks the KDC).

mod ccache;
mod error;
mod gss;
mod sasl;
mod spnego;
#[cfg(any(test, feature = "testing"))]
#[doc(hidden)]
pub mod testkit;
#[cfg(test)]
mod tests;

use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

pub use error::KerberosError;
pub(crate) use sasl::SaslLayer;

pub use super::security::{Kerberos, Qop};

impl Qop {
    /// Its bit in RFC 4752's security layer mask.
    pub(crate) fn bit(self) -> u8 {
        match self {
            Qop::Auth => 1,
            Qop::AuthInt => 2,
            Qop::AuthConf => 4,
        }
    }

    /// The qops a mask offers, weakest first.
    pub(crate) fn from_mask(mask: u8) -> Vec<Qop> {
        [Qop::Auth, Qop::AuthInt, Qop::AuthConf]
            .into_iter()
            .filter(|q| mask & q.bit() != 0)
            .collect()
    }

    fn list(qops: &[Qop]) -> String {
        if qops.is_empty() {
            return "none".into();
        }
        qops.iter()
            .map(Qop::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The loaded library and the acquired credentials: one per client, shared by its
/// connections.
pub(crate) struct Gss {
    lib: &'static gss::Lib,
    cred: Arc<gss::Cred>,
    config: Kerberos,
    /// The credentials' principal, as the library names it.
    principal: String,
    /// The ticket cache in use (for messages).
    ccache: String,
    /// When the credentials expire (None: renewed from a keytab, or no limit).
    expires: Option<SystemTime>,
}

impl std::fmt::Debug for Gss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gss")
            .field("principal", &self.principal)
            .field("ccache", &self.ccache)
            .field("expires", &self.expires)
            .finish_non_exhaustive()
    }
}

/// MIT's krb5 error codes (com_err table base -1765328384) that say what to fix.
mod krb5_codes {
    pub const KDC_ERR_S_PRINCIPAL_UNKNOWN: i32 = -1_765_328_377;
    pub const KRB_AP_ERR_TKT_EXPIRED: i32 = -1_765_328_352;
    pub const CC_NOTFOUND: i32 = -1_765_328_243;
    pub const KT_NOTFOUND: i32 = -1_765_328_203;
    pub const FCC_NOFILE: i32 = -1_765_328_189;
    pub const CC_NOSUPP: i32 = -1_765_328_137;
}

impl Gss {
    /// Loads the library and acquires the credentials (fails at once if there is no ticket /
    /// the keytab has no such principal / the ticket expired). With a keytab this obtains the
    /// first ticket, so it contacts the KDC and blocks for that long.
    pub(crate) fn new(config: &Kerberos) -> Result<Arc<Gss>, KerberosError> {
        let lib = gss::load()?;
        if let Some(keytab) = &config.keytab {
            std::fs::File::open(keytab).map_err(|source| KerberosError::KeytabUnreadable {
                path: keytab.clone(),
                source,
            })?;
        }
        let keytab = config
            .keytab
            .as_ref()
            .map(|k| k.to_string_lossy().into_owned());
        let ccache = match (&config.ccache, &keytab) {
            (Some(cc), _) => Some(cc.clone()),
            // A keytab's tickets go to an in-memory cache of the process's own, not the user's
            // default. MIT keeps a MEMORY cache until the process ends, so clients with the
            // same keytab and principal share one (and its tickets) rather than each leaving
            // one behind.
            (None, Some(keytab)) => {
                let mut hasher = std::collections::hash_map::DefaultHasher::new();
                (keytab, &config.principal).hash(&mut hasher);
                Some(format!("MEMORY:percolator-{:016x}", hasher.finish()))
            }
            (None, None) => None,
        };
        let ccache_label = ccache
            .clone()
            .or_else(|| std::env::var("KRB5CCNAME").ok())
            .unwrap_or_else(|| "(the default ticket cache)".into());
        let name = config
            .principal
            .as_deref()
            .map(|p| gss::Name::import(lib, p, gss::NT_KRB5_PRINCIPAL))
            .transpose()?;
        let store = gss::CredStore {
            ccache: ccache.as_deref(),
            client_keytab: keytab.as_deref(),
            keytab: None,
        };
        let classify = |call, (major, minor, message): (u32, u32, String)| {
            Self::credential_error(config, &ccache_label, call, major, minor, message)
        };
        let cred = gss::Cred::acquire(lib, name.as_ref(), &store, false)
            .map_err(|e| classify("gss_acquire_cred_from", e))?;
        let (principal, lifetime) = cred
            .inquire()
            .map_err(|e| classify("gss_inquire_cred", e))?;
        if lifetime == 0 {
            return Err(Self::expired(config, &ccache_label, Some(principal)));
        }
        let expires = (keytab.is_none() && lifetime != u32::MAX)
            .then(|| SystemTime::now() + Duration::from_secs(lifetime.into()));
        tracing::debug!(%principal, ccache = %ccache_label, ?expires, "Kerberos credentials acquired");
        Ok(Arc::new(Gss {
            lib,
            cred: Arc::new(cred),
            config: config.clone(),
            principal,
            ccache: ccache_label,
            expires,
        }))
    }

    #[cfg(any(test, feature = "testing"))]
    /// The client's principal ("client@REALM").
    pub(crate) fn principal(&self) -> &str {
        &self.principal
    }

    #[cfg(any(test, feature = "testing"))]
    /// When a ticket-cache credential expires (None with a keytab: its tickets are renewed).
    pub(crate) fn expires(&self) -> Option<SystemTime> {
        self.expires
    }

    fn expired(config: &Kerberos, ccache: &str, principal: Option<String>) -> KerberosError {
        let from_file = if config.keytab.is_none() {
            ccache::file_of(config.ccache.as_deref()).and_then(|f| ccache::tgt_end_time(&f))
        } else {
            None
        };
        let (owner, expired_at) = from_file.unzip();
        KerberosError::TicketExpired {
            principal: principal.or_else(|| config.principal.clone()).or(owner),
            ccache: ccache.to_owned(),
            expired_at,
        }
    }

    fn credential_error(
        config: &Kerberos,
        ccache: &str,
        call: &'static str,
        major: u32,
        minor: u32,
        message: String,
    ) -> KerberosError {
        use krb5_codes::*;
        if major == 0 {
            // Refused before the library was called (a NUL byte in a setting).
            return KerberosError::InvalidConfig(message);
        }
        let routine = gss::routine_error(major);
        let minor_code = minor as i32;
        if routine == gss::E_CREDENTIALS_EXPIRED || minor_code == KRB_AP_ERR_TKT_EXPIRED {
            return Self::expired(config, ccache, None);
        }
        if let Some(keytab) = &config.keytab {
            if routine == gss::E_NO_CRED || minor_code == KT_NOTFOUND {
                return KerberosError::PrincipalNotInKeytab {
                    keytab: keytab.clone(),
                    principal: config.principal.clone(),
                    message,
                };
            }
        } else if routine == gss::E_NO_CRED
            || [CC_NOTFOUND, FCC_NOFILE, CC_NOSUPP].contains(&minor_code)
        {
            return KerberosError::NoTicket {
                ccache: ccache.to_owned(),
                principal: config.principal.clone(),
                message,
            };
        }
        KerberosError::Gss {
            call,
            major,
            minor,
            message,
        }
    }

    /// The target for `service` on `host`: the configured service principal, else
    /// "service@host" (which the library turns into "service/host@REALM").
    fn target(&self, service: &str, host: &str) -> Result<(String, gss::Oid), KerberosError> {
        match &self.config.service_principal {
            Some(p) => Ok((p.clone(), gss::NT_KRB5_PRINCIPAL)),
            None if host.is_empty() => {
                Err(KerberosError::InvalidConfig("an empty host name".into()))
            }
            None => Ok((format!("{service}@{host}"), gss::NT_HOSTBASED_SERVICE)),
        }
    }

    /// A failed gss_init_sec_context, as the error a user can act on.
    fn init_error(
        &self,
        service: &str,
        (major, minor, message): (u32, u32, String),
    ) -> KerberosError {
        let minor_code = minor as i32;
        // Through SPNEGO the minor code is SPNEGO's own, and only the krb5 mechanism's message
        // (MIT's text for KRB5KDC_ERR_S_PRINCIPAL_UNKNOWN) says what went wrong.
        if minor_code == krb5_codes::KDC_ERR_S_PRINCIPAL_UNKNOWN
            || gss::routine_error(major) == gss::E_BAD_NAME
            || message.contains("not found in Kerberos database")
        {
            return KerberosError::UnknownService {
                service: service.to_owned(),
                message,
            };
        }
        if gss::routine_error(major) == gss::E_CREDENTIALS_EXPIRED
            || minor_code == krb5_codes::KRB_AP_ERR_TKT_EXPIRED
            || message.contains("Ticket expired")
        {
            return Self::expired(&self.config, &self.ccache, Some(self.principal.clone()));
        }
        KerberosError::Gss {
            call: "gss_init_sec_context",
            major,
            minor,
            message,
        }
    }

    /// An `Authorization` header value for one HTTP request to `host` ("Negotiate <base64>"),
    /// a fresh SPNEGO context each time (the server's replay cache would refuse a reused
    /// token). Service name: "HTTP@host" unless `service_principal` is set. The first call
    /// for a host fetches its service ticket from the KDC (blocking); later ones use the
    /// cached ticket and only compute.
    pub(crate) fn spnego_header(&self, host: &str) -> Result<String, KerberosError> {
        let (service, kind) = self.target("HTTP", host)?;
        let target = gss::Name::import(self.lib, &service, kind)?;
        let mut ctx = gss::Context::new(self.lib);
        let step = ctx
            .init_step(&self.cred, &target, gss::MECH_SPNEGO, spnego::FLAGS, None)
            .map_err(|e| self.init_error(&service, e))?;
        Ok(spnego::header(&step.token))
    }

    /// The client side of Thrift's SASL transport (TSaslClientTransport) with mechanism
    /// GSSAPI on a fresh TCP connection to `host` (service "hbase@host" unless
    /// service_principal), bounded by `timeout`; see the `sasl` module for the exchange. The
    /// first GSSAPI step, which may fetch a service ticket from the KDC, runs on tokio's
    /// blocking pool.
    pub(crate) async fn sasl_connect(
        &self,
        stream: &mut tokio::net::TcpStream,
        host: &str,
        qop: Qop,
        timeout: Duration,
    ) -> Result<SaslLayer, KerberosError> {
        let connect = async {
            let (service, kind) = self.target("hbase", host)?;
            let (lib, cred) = (self.lib, Arc::clone(&self.cred));
            let name = service.clone();
            let first = tokio::task::spawn_blocking(move || {
                let target = gss::Name::import(lib, &name, kind)?;
                let mut ctx = gss::Context::new(lib);
                let step = ctx.init_step(&cred, &target, gss::MECH_KRB5, sasl::SASL_FLAGS, None);
                Ok::<_, KerberosError>((ctx, target, step))
            })
            .await
            .map_err(|e| KerberosError::Protocol(format!("the GSSAPI task failed: {e}")))??;
            let (ctx, target, step) = first;
            let step = step.map_err(|e| self.init_error(&service, e))?;
            let cred = Arc::clone(&self.cred);
            sasl::negotiate(
                stream,
                ctx,
                step,
                |ctx, token| {
                    ctx.init_step(
                        &cred,
                        &target,
                        gss::MECH_KRB5,
                        sasl::SASL_FLAGS,
                        Some(token),
                    )
                    .map_err(|e| self.init_error(&service, e))
                },
                qop,
            )
            .await
        };
        tokio::time::timeout(timeout, connect)
            .await
            .map_err(|_| KerberosError::Timeout(timeout))?
    }
}
