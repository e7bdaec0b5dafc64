//! Client configuration: where the gateway is, how to speak to it, and how to pool connections.

use std::time::Duration;

use super::security::{Kerberos, Qop, TlsOptions};

/// Thrift transport framing. The HBase gateway defaults to unframed (buffered on our side).
///
/// ```
/// use percolator::{hbase::Transport, HBaseConfig};
/// assert_eq!(Transport::default(), Transport::Buffered);
/// assert_eq!(HBaseConfig::new("gw:9090").transport(Transport::Framed).transport, Transport::Framed);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Transport {
    #[default]
    Buffered,
    Framed,
}

/// Thrift wire protocol. The HBase gateway defaults to binary.
///
/// ```
/// use percolator::{hbase::Protocol, HBaseConfig};
/// assert_eq!(Protocol::default(), Protocol::Binary);
/// assert_eq!(HBaseConfig::new("gw:9090").protocol(Protocol::Compact).protocol, Protocol::Compact);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Protocol {
    #[default]
    Binary,
    Compact,
}

/// How to reach one Thrift2 gateway, and how long to wait for it.
///
/// # Deadlines
///
/// Three settings bound how long a call can take against a gateway that is slow, or that
/// accepts connections and never answers. Every error they end in is an
/// [`Error::Transport`](crate::Error::Transport) of kind [`TimedOut`](std::io::ErrorKind::TimedOut)
/// that names the gateway's address and the limit that ran out (so
/// [`retry_class`](crate::Error::retry_class) is `Retry`), wrapped in
/// [`Error::OutcomeUnknown`](crate::Error::OutcomeUnknown) for a non-idempotent call whose
/// request had left.
///
/// | setting | default | bounds |
/// |---|---|---|
/// | [`connect_timeout`](Self#structfield.connect_timeout) | 5 s | opening one TCP connection to one address |
/// | [`read_timeout`](Self#structfield.read_timeout) | 30 s | waiting for one reply on one connection |
/// | [`call_timeout`](Self#structfield.call_timeout) | the read timeout | a whole call, replay included |
///
/// With the defaults, a gateway that never answers fails a call after 30 s, with
/// `transport error talking to the HBase gateway at gw:9090: no reply within the read timeout
/// of 30s`. A call that ran out of time is not replayed: only a call whose connection failed
/// early (closed by the gateway, reset) is, within the time left.
///
/// ```
/// use std::time::Duration;
/// use percolator::{hbase::{Protocol, Transport}, HBaseConfig};
/// let config = HBaseConfig::new("gw:9090");
/// assert_eq!(config.addr, "gw:9090");
/// assert_eq!((config.transport, config.protocol), (Transport::Buffered, Protocol::Binary));
/// assert_eq!(config.connect_timeout, Duration::from_secs(5));
/// assert_eq!(config.read_timeout, Duration::from_secs(30));
/// assert_eq!(config.call_timeout, None, "the read timeout bounds the whole call");
/// assert_eq!((config.pool_size, config.pipeline_per_connection), (16, 1));
/// assert!(config.max_idle < Duration::from_secs(60));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HBaseConfig {
    /// Where the gateway is: `host:port` (a raw Thrift socket), `http://host:port[/path]`
    /// (the gateway in HTTP mode), `https://host:port[/path]` (HTTP over TLS), or a
    /// comma-separated list of gateways, over which calls are spread (see
    /// [`Endpoint::parse_list`](super::Endpoint::parse_list)). A gateway that cannot be
    /// reached is left out for a while and probed again; a scanner stays on the gateway that
    /// opened it.
    pub addr: String,
    pub transport: Transport,
    pub protocol: Protocol,
    /// How long opening a TCP connection to one of the addresses `addr` resolves to may take
    /// (default 5 s); a name with several addresses tries each in turn, each for this long.
    /// A connection opened for a call is also bounded by the call's deadline
    /// ([`call_timeout`](Self#structfield.call_timeout)). When it runs out, the error says
    /// `connecting to ADDRESS timed out after 5s`.
    pub connect_timeout: Duration,
    /// How long a call waits for its reply on one connection (default 30 s), from when it
    /// queues its request, so writing it counts too. When it runs out, the connection is
    /// dropped (a late reply would be taken for the next call's) and the call fails with
    /// `no reply within the read timeout of 30s`, or `OutcomeUnknown` around that if it is a
    /// non-idempotent call whose request had left. Unless
    /// [`call_timeout`](Self#structfield.call_timeout) is set, it also bounds the whole call.
    pub read_timeout: Duration,
    /// How long a whole call may take, from when it is made (default `None`: the read
    /// timeout): waiting for a pooled connection or opening one, waiting for the reply, and
    /// the one replay on a fresh connection that the retry rules allow, which is made only
    /// while time is left. When it runs out, the call fails with `no reply within the call
    /// timeout of 60s` (or `no connection to the gateway within ...` if it was still
    /// connecting). Set it above the read timeout to let an idempotent call that got no reply
    /// on a stalled connection be replayed on a fresh one; the error then also says how long
    /// both tries took (`...; 2 tries took 60.2s in all`).
    pub call_timeout: Option<Duration>,
    /// Most connections open at once; calls beyond it wait for a free connection.
    pub pool_size: u32,
    /// A pooled connection idle for longer than this is replaced instead of reused. The gateway
    /// drops connections idle for 60 s, so this must stay below that. An HTTP gateway's Jetty
    /// drops them after 30 s, so over HTTP the client never keeps one idle longer than 20 s,
    /// whatever this says.
    pub max_idle: Duration,
    /// How many calls may share a connection, pipelined; a call over more rows than this (a
    /// fused read, a batch of puts) takes a connection of its own. A gateway answers one
    /// connection's requests one after another, so sharing costs latency on a real cluster and
    /// saves a gateway wake-up per request. The default, 1, spreads concurrent calls over
    /// connections: measured against a real HBase 2.6.1 gateway, 4 cost 18% of `txn_put1`
    /// throughput and 13% of `txn_transfer2` (README, "Against a real HBase"). Only a gateway
    /// whose calls cost less than its wake-ups (the loopback emulator) gains from more.
    pub pipeline_per_connection: usize,
    /// Trust and client identity for `https://` gateways (default: the system's roots,
    /// hostname verification on).
    pub tls: TlsOptions,
    /// Kerberos credentials: SASL/GSSAPI on a raw socket, SPNEGO over HTTP. `None`: the
    /// gateway is not secured.
    pub kerberos: Option<Kerberos>,
    /// The SASL protection asked of a Kerberos raw-socket gateway (default `auth-conf`).
    pub qop: Qop,
    /// The end user to act as on an HTTP gateway that allows impersonation
    /// (`hbase.thrift.support.proxyuser=true`); the client's own identity must be granted it
    /// (`hadoop.proxyuser.<client>.hosts` and `.groups`).
    pub do_as: Option<String>,
    /// Count the cells and bytes written, by family ([`AsyncHBaseClient::writes_by_family`](
    /// super::AsyncHBaseClient::writes_by_family)); off by default, as it takes a lock on
    /// every write.
    pub tally_writes: bool,
}

impl HBaseConfig {
    /// The defaults for the gateway at `addr` (`host:port`): buffered binary Thrift, 16
    /// connections.
    ///
    /// ```
    /// use percolator::HBaseConfig;
    /// assert_eq!(HBaseConfig::new("localhost:9090").addr, "localhost:9090");
    /// ```
    pub fn new(addr: impl Into<String>) -> Self {
        HBaseConfig {
            addr: addr.into(),
            transport: Transport::default(),
            protocol: Protocol::default(),
            connect_timeout: Duration::from_secs(5),
            read_timeout: Duration::from_secs(30),
            call_timeout: None,
            pool_size: 16,
            max_idle: Duration::from_secs(50),
            pipeline_per_connection: 1,
            tls: TlsOptions::default(),
            kerberos: None,
            qop: Qop::default(),
            do_as: None,
            tally_writes: false,
        }
    }

    /// This configuration with what the environment says of the gateway, as
    /// `scripts/real-hbase start` prints it and the `percolator` commands read it. Each
    /// variable that is set (and not empty) overrides its setting:
    ///
    /// | variable | setting |
    /// |---|---|
    /// | `HBASE_THRIFT_TRANSPORT` | `buffered` or `framed` ([`transport`](Self#structfield.transport)) |
    /// | `HBASE_THRIFT_PROTOCOL` | `binary` or `compact` ([`protocol`](Self#structfield.protocol)) |
    /// | `HBASE_CA_FILE` | PEM CA certificates to trust ([`TlsOptions::ca_file`]) |
    /// | `HBASE_CLIENT_CERT`, `HBASE_CLIENT_KEY` | a client certificate and key, PEM ([`TlsOptions::client_cert`]) |
    /// | `HBASE_KRB_CLIENT_PRINCIPAL` | the client's Kerberos principal |
    /// | `HBASE_KRB_CLIENT_KEYTAB` | a keytab to log in from |
    /// | `HBASE_KRB_CCACHE` | a ticket cache |
    /// | `HBASE_KRB_SERVICE_PRINCIPAL` | the gateway's principal, when not `hbase/<host>` or `HTTP/<host>` |
    /// | `HBASE_SASL_QOP` | `auth`, `auth-int` or `auth-conf` ([`qop`](Self#structfield.qop)) |
    /// | `HBASE_DO_AS` | the end user to act as ([`do_as`](Self#structfield.do_as)) |
    ///
    /// Any of the first three Kerberos variables turns Kerberos on. A value that cannot be
    /// used is an [`Error::IllegalArgument`](crate::Error::IllegalArgument) naming the variable.
    ///
    /// ```
    /// use percolator::HBaseConfig;
    /// // With none of the variables set, nothing changes.
    /// # for name in ["HBASE_THRIFT_TRANSPORT", "HBASE_THRIFT_PROTOCOL", "HBASE_CA_FILE", "HBASE_CLIENT_CERT", "HBASE_CLIENT_KEY", "HBASE_KRB_CLIENT_PRINCIPAL", "HBASE_KRB_CLIENT_KEYTAB", "HBASE_KRB_CCACHE", "HBASE_KRB_SERVICE_PRINCIPAL", "HBASE_SASL_QOP", "HBASE_DO_AS"] {
    /// #     // SAFETY: the example runs alone in its process, before anything reads them.
    /// #     unsafe { std::env::remove_var(name) };
    /// # }
    /// let config = HBaseConfig::new("gw:9090");
    /// assert_eq!(config.clone().with_env().unwrap(), config);
    /// ```
    pub fn with_env(self) -> Result<Self, crate::Error> {
        self.with_vars(|name| std::env::var(name).ok().filter(|v| !v.is_empty()))
    }

    /// [`with_env`](Self::with_env) over any source of variables.
    fn with_vars(mut self, var: impl Fn(&str) -> Option<String>) -> Result<Self, crate::Error> {
        let invalid = |name: &str, value: &str, expected: &str| crate::Error::IllegalArgument {
            message: format!("{name}={value}: expected {expected}"),
        };
        if let Some(v) = var("HBASE_THRIFT_TRANSPORT") {
            self.transport = match v.as_str() {
                "buffered" => Transport::Buffered,
                "framed" => Transport::Framed,
                _ => return Err(invalid("HBASE_THRIFT_TRANSPORT", &v, "buffered or framed")),
            };
        }
        if let Some(v) = var("HBASE_THRIFT_PROTOCOL") {
            self.protocol = match v.as_str() {
                "binary" => Protocol::Binary,
                "compact" => Protocol::Compact,
                _ => return Err(invalid("HBASE_THRIFT_PROTOCOL", &v, "binary or compact")),
            };
        }
        if let Some(v) = var("HBASE_CA_FILE") {
            self.tls.ca_file = Some(v.into());
        }
        match (var("HBASE_CLIENT_CERT"), var("HBASE_CLIENT_KEY")) {
            (Some(cert), Some(key)) => self.tls.client_cert = Some((cert.into(), key.into())),
            (None, None) => {}
            _ => {
                return Err(crate::Error::IllegalArgument {
                    message: "HBASE_CLIENT_CERT and HBASE_CLIENT_KEY go together".into(),
                })
            }
        }
        let principal = var("HBASE_KRB_CLIENT_PRINCIPAL");
        let keytab = var("HBASE_KRB_CLIENT_KEYTAB");
        let ccache = var("HBASE_KRB_CCACHE");
        if principal.is_some() || keytab.is_some() || ccache.is_some() {
            let mut kerberos = self.kerberos.take().unwrap_or_default();
            kerberos.principal = principal.or(kerberos.principal);
            kerberos.keytab = keytab.map(Into::into).or(kerberos.keytab);
            kerberos.ccache = ccache.or(kerberos.ccache);
            self.kerberos = Some(kerberos);
        }
        if let Some(v) = var("HBASE_KRB_SERVICE_PRINCIPAL")
            && let Some(kerberos) = self.kerberos.as_mut()
        {
            kerberos.service_principal = Some(v);
        }
        if let Some(v) = var("HBASE_SASL_QOP") {
            self.qop = v
                .parse()
                .map_err(|_| invalid("HBASE_SASL_QOP", &v, "auth, auth-int or auth-conf"))?;
        }
        if let Some(v) = var("HBASE_DO_AS") {
            self.do_as = Some(v);
        }
        Ok(self)
    }

    /// Sets how `https://` gateways are trusted and how the client proves itself to them.
    ///
    /// ```
    /// use percolator::{hbase::TlsOptions, HBaseConfig};
    /// let tls = TlsOptions { ca_file: Some("ca.pem".into()), ..TlsOptions::default() };
    /// let config = HBaseConfig::new("https://gw:9090").tls(tls.clone());
    /// assert_eq!(config.tls, tls);
    /// ```
    pub fn tls(mut self, tls: TlsOptions) -> Self {
        self.tls = tls;
        self
    }

    /// Sets the Kerberos credentials (SASL on a raw socket, SPNEGO over HTTP).
    ///
    /// ```
    /// use percolator::{hbase::Kerberos, HBaseConfig};
    /// let config = HBaseConfig::new("gw:9090").kerberos(Kerberos::default());
    /// assert!(config.kerberos.is_some());
    /// ```
    pub fn kerberos(mut self, kerberos: Kerberos) -> Self {
        self.kerberos = Some(kerberos);
        self
    }

    /// Sets the SASL protection asked of a Kerberos raw-socket gateway.
    ///
    /// ```
    /// use percolator::{hbase::Qop, HBaseConfig};
    /// assert_eq!(HBaseConfig::new("gw:1").qop(Qop::Auth).qop, Qop::Auth);
    /// ```
    pub fn qop(mut self, qop: Qop) -> Self {
        self.qop = qop;
        self
    }

    /// Acts as `user` on an HTTP gateway that allows impersonation.
    ///
    /// ```
    /// use percolator::HBaseConfig;
    /// let config = HBaseConfig::new("http://gw:9090").do_as("alice");
    /// assert_eq!(config.do_as.as_deref(), Some("alice"));
    /// ```
    pub fn do_as(mut self, user: impl Into<String>) -> Self {
        self.do_as = Some(user.into());
        self
    }

    /// Sets the Thrift framing; it must match the gateway's.
    ///
    /// ```
    /// use percolator::{hbase::Transport, HBaseConfig};
    /// assert_eq!(HBaseConfig::new("gw:1").transport(Transport::Framed).transport, Transport::Framed);
    /// ```
    pub fn transport(mut self, transport: Transport) -> Self {
        self.transport = transport;
        self
    }

    /// Sets the Thrift protocol; it must match the gateway's.
    ///
    /// ```
    /// use percolator::{hbase::Protocol, HBaseConfig};
    /// assert_eq!(HBaseConfig::new("gw:1").protocol(Protocol::Compact).protocol, Protocol::Compact);
    /// ```
    pub fn protocol(mut self, protocol: Protocol) -> Self {
        self.protocol = protocol;
        self
    }

    /// Sets [`HBaseConfig::connect_timeout`](HBaseConfig#structfield.connect_timeout), the bound
    /// on opening a connection to one address.
    ///
    /// ```
    /// use std::time::Duration;
    /// use percolator::HBaseConfig;
    /// let config = HBaseConfig::new("gw:1").connect_timeout(Duration::from_secs(1));
    /// assert_eq!(config.connect_timeout, Duration::from_secs(1));
    /// ```
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets [`HBaseConfig::read_timeout`](HBaseConfig#structfield.read_timeout).
    ///
    /// ```
    /// use std::time::Duration;
    /// use percolator::HBaseConfig;
    /// let config = HBaseConfig::new("gw:1").read_timeout(Duration::from_secs(2));
    /// assert_eq!(config.read_timeout, Duration::from_secs(2));
    /// ```
    pub fn read_timeout(mut self, timeout: Duration) -> Self {
        self.read_timeout = timeout;
        self
    }

    /// Sets [`HBaseConfig::call_timeout`](HBaseConfig#structfield.call_timeout), the bound on a
    /// whole call.
    ///
    /// ```
    /// use std::time::Duration;
    /// use percolator::HBaseConfig;
    /// let config = HBaseConfig::new("gw:1").call_timeout(Duration::from_secs(60));
    /// assert_eq!(config.call_timeout, Some(Duration::from_secs(60)));
    /// ```
    pub fn call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = Some(timeout);
        self
    }

    /// Sets the most connections open at once; must be at least 1.
    ///
    /// ```
    /// use percolator::HBaseConfig;
    /// assert_eq!(HBaseConfig::new("gw:1").pool_size(4).pool_size, 4);
    /// ```
    pub fn pool_size(mut self, size: u32) -> Self {
        self.pool_size = size;
        self
    }

    /// Sets how long a pooled connection may sit idle and still be reused.
    ///
    /// ```
    /// use std::time::Duration;
    /// use percolator::HBaseConfig;
    /// let config = HBaseConfig::new("gw:1").max_idle(Duration::from_secs(10));
    /// assert_eq!(config.max_idle, Duration::from_secs(10));
    /// ```
    pub fn max_idle(mut self, max_idle: Duration) -> Self {
        self.max_idle = max_idle;
        self
    }

    /// Sets how many calls may share a connection.
    ///
    /// ```
    /// use percolator::HBaseConfig;
    /// assert_eq!(HBaseConfig::new("gw:1").pipeline_per_connection(4).pipeline_per_connection, 4);
    /// ```
    pub fn pipeline_per_connection(mut self, requests: usize) -> Self {
        self.pipeline_per_connection = requests;
        self
    }

    /// This configuration counting what the client writes, by family.
    ///
    /// ```
    /// assert!(percolator::HBaseConfig::new("gw:9090").tally_writes(true).tally_writes);
    /// ```
    pub fn tally_writes(mut self, on: bool) -> Self {
        self.tally_writes = on;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_gateway_defaults_and_stay_below_its_idle_drop() {
        let config = HBaseConfig::new("gw:9090");
        assert_eq!(config.transport, Transport::Buffered);
        assert_eq!(config.protocol, Protocol::Binary);
        assert!(config.max_idle < Duration::from_secs(60));
        assert!(config.pool_size > 0);
    }

    #[test]
    fn the_environment_overrides_what_it_names_and_refuses_bad_values() {
        let vars = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        let config = HBaseConfig::new("https://gw:1")
            .with_vars(vars(&[
                ("HBASE_THRIFT_PROTOCOL", "compact"),
                ("HBASE_CA_FILE", "/ca.pem"),
                ("HBASE_KRB_CLIENT_KEYTAB", "/c.keytab"),
                ("HBASE_KRB_CLIENT_PRINCIPAL", "c@R"),
                ("HBASE_KRB_SERVICE_PRINCIPAL", "HTTP/gw@R"),
                ("HBASE_SASL_QOP", "auth-int"),
                ("HBASE_DO_AS", "alice"),
            ]))
            .unwrap();
        assert_eq!(config.protocol, Protocol::Compact);
        assert_eq!(config.transport, Transport::Buffered);
        assert_eq!(config.tls.ca_file.as_deref(), Some("/ca.pem".as_ref()));
        let kerberos = config.kerberos.unwrap();
        assert_eq!(kerberos.principal.as_deref(), Some("c@R"));
        assert_eq!(kerberos.keytab.as_deref(), Some("/c.keytab".as_ref()));
        assert_eq!(kerberos.service_principal.as_deref(), Some("HTTP/gw@R"));
        assert_eq!(config.qop, Qop::AuthInt);
        assert_eq!(config.do_as.as_deref(), Some("alice"));
        for bad in [
            &[("HBASE_THRIFT_TRANSPORT", "http")][..],
            &[("HBASE_SASL_QOP", "secret")],
            &[("HBASE_CLIENT_CERT", "/c.pem")],
        ] {
            let err = HBaseConfig::new("gw:1").with_vars(vars(bad)).unwrap_err();
            assert!(err.to_string().contains(bad[0].0), "{err}");
        }
    }

    #[test]
    fn setters_override_each_field() {
        let config = HBaseConfig::new("gw:1")
            .transport(Transport::Framed)
            .protocol(Protocol::Compact)
            .connect_timeout(Duration::from_millis(10))
            .read_timeout(Duration::from_millis(20))
            .pool_size(3)
            .max_idle(Duration::from_millis(30))
            .pipeline_per_connection(1);
        assert_eq!(config.transport, Transport::Framed);
        assert_eq!(config.protocol, Protocol::Compact);
        assert_eq!(config.connect_timeout, Duration::from_millis(10));
        assert_eq!(config.read_timeout, Duration::from_millis(20));
        assert_eq!(config.pool_size, 3);
        assert_eq!(config.max_idle, Duration::from_millis(30));
        assert_eq!(config.pipeline_per_connection, 1);
    }
}
