//! The async Thrift2 client and its retry rules.
//!
//! Retry rules, per call: a call whose request never fully left is replayed once on a fresh
//! connection, whatever it is. After the request was sent, idempotent calls are replayed once;
//! non-idempotent ones (check-and-mutate, check-and-put/delete, increment, append) fail with
//! `OutcomeUnknown`, and calls that advance server state (scanner pages, schema changes) fail
//! as they are (a replay would skip the rows the server already handed out, or hide whether
//! the first try ran).
//!
//! Every call has a deadline (`HBaseConfig::call_timeout`, by default the read timeout) that
//! bounds all of it: waiting for a connection or opening one, the reply, and the replay, which
//! is made only while time is left. So a gateway that accepts connections and never answers
//! fails a call once the read timeout has passed, not after a second read timeout on a fresh
//! connection. A server that answers with something that is not Thrift is never replayed to.
//!
//! The data methods are in `data.rs`, the blocking face in `blocking.rs`.

use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::config::{HBaseConfig, Transport};
use super::conn::{later, Deadline, Failure, Settings};
use super::endpoint::{Endpoint, Scheme};
use super::errors::{self, Cause};
use super::gateways::{Gateway, Gateways};
use super::link::{tls, Plan};
use super::pool::{Lease, Limits, Pool};
use super::tally::{FamilyWrites, WriteTally};
use super::wire::{self, Arg, Codec, Request, Success};
use crate::runtime;
use crate::{Error, Peer, Result, RetryClass};

/// The longest an HTTP gateway's connection is reused after sitting idle. HBase's gateway
/// runs Jetty with its default idle timeout, 30 s, after which it closes the connection
/// without a word; a call written to it then would lose its reply.
const HTTP_MAX_IDLE: Duration = Duration::from_secs(20);

/// Whether a call may be sent again after a connection failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Replay {
    /// Idempotent: replay once on a fresh connection.
    Safe,
    /// Non-idempotent: once sent, a lost reply is `OutcomeUnknown`.
    OutcomeUnknown,
    /// Advances server state: once sent, fail with the transport error.
    NotAfterSend,
}

/// What a call is, for its retry rule, its errors and its share of a connection.
pub(crate) struct CallSpec<'a> {
    pub method: &'static str,
    pub table: &'a str,
    pub row: &'a [u8],
    pub replay: Replay,
    /// Rows the call reads or writes at most: the pool keeps a call over many rows from
    /// sharing a connection (see `pool`).
    pub rows: usize,
    /// The gateway the call must go to (a scanner's), when there are several.
    pub gateway: Option<usize>,
}

impl<'a> CallSpec<'a> {
    pub(crate) fn safe(method: &'static str, table: &'a str, row: &'a [u8]) -> Self {
        CallSpec {
            method,
            table,
            row,
            replay: Replay::Safe,
            rows: 1,
            gateway: None,
        }
    }

    /// Non-idempotent: at most once once sent.
    pub(crate) fn once(method: &'static str, table: &'a str, row: &'a [u8]) -> Self {
        CallSpec {
            method,
            table,
            row,
            replay: Replay::OutcomeUnknown,
            rows: 1,
            gateway: None,
        }
    }

    /// Not sent again once it left.
    pub(crate) fn not_after_send(method: &'static str, table: &'a str) -> Self {
        CallSpec {
            method,
            table,
            row: &[],
            replay: Replay::NotAfterSend,
            rows: 1,
            gateway: None,
        }
    }

    /// A call over `rows` rows (at least one counts).
    pub(crate) fn rows(mut self, rows: usize) -> Self {
        self.rows = rows.max(1);
        self
    }

    /// A call that must go to the gateway at `index`.
    pub(crate) fn on(mut self, index: usize) -> Self {
        self.gateway = Some(index);
        self
    }
}

enum Attempt<T> {
    Done(Result<T>),
    Replay(Error),
}

struct Inner {
    gateways: Gateways,
    codec: Codec,
    config: HBaseConfig,
    rpc_count: AtomicU64,
    next_seq: AtomicI32,
    /// What the client wrote, when the configuration asks for it.
    tally: Option<WriteTally>,
}

/// The Thrift2 client for async code: pooled, pipelined connections and per-call retry rules.
/// Cheap to clone; clones share the pool and the RPC counter. Every future it returns is
/// `Send` and may be polled by any executor.
///
/// ```
/// use percolator::hbase::{Get, Put};
/// # let emulator = hbase_emulator::start_local()?;
/// # tokio::runtime::Runtime::new()?.block_on(async {
/// # let config = percolator::HBaseConfig::new(emulator.local_addr().to_string());
/// let hbase = percolator::AsyncHBaseClient::connect(config).await?;
/// # hbase.blocking().admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
/// hbase.put("t", &Put::new("r").add("f", "q", "v")).await?;
/// let row = hbase.get("t", &Get::new("r")).await?;
/// assert_eq!(row.value(b"f", b"q"), Some(&b"v"[..]));
/// # Ok::<(), percolator::Error>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct AsyncHBaseClient {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for AsyncHBaseClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncHBaseClient")
            .field("addr", &self.inner.config.addr)
            .field("rpc_count", &self.rpc_count())
            .finish()
    }
}

impl AsyncHBaseClient {
    /// Builds the pool and opens one connection, so an unreachable gateway fails here. The
    /// connections run on the caller's runtime if it is a multi-thread one, else on a shared
    /// I/O runtime (see `runtime`).
    ///
    /// ```
    /// let emulator = hbase_emulator::start_local()?;
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// let config = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// let hbase = percolator::AsyncHBaseClient::connect(config).await?;
    /// assert_eq!(hbase.config().pool_size, 16);
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn connect(config: HBaseConfig) -> Result<AsyncHBaseClient> {
        Self::connect_on(config, runtime::ambient_or_io()?).await
    }

    pub(crate) async fn connect_on(
        config: HBaseConfig,
        handle: tokio::runtime::Handle,
    ) -> Result<AsyncHBaseClient> {
        if config.pool_size == 0 {
            return Err(Error::IllegalArgument {
                message: "HBaseConfig.pool_size must be at least 1".to_owned(),
            });
        }
        let endpoints = Endpoint::parse_list(&config.addr)?;
        let scheme = endpoints[0].scheme;
        if endpoints.iter().any(|e| e.scheme != scheme) {
            return Err(Error::IllegalArgument {
                message: format!(
                    "the gateways in `{}` mix schemes; a client speaks one way to all of them",
                    config.addr
                ),
            });
        }
        let codec = Codec {
            protocol: config.protocol,
            // An HTTP body is one message, unframed.
            transport: if scheme == Scheme::Tcp {
                config.transport
            } else {
                Transport::Buffered
            },
        };
        let tls = match scheme {
            Scheme::Https => {
                Some(
                    tls::client_config(&config.tls).map_err(|failure| Error::Tls {
                        addr: config.addr.clone(),
                        failure,
                    })?,
                )
            }
            _ => None,
        };
        let kerberos = kerberos(&config, &handle).await?;
        let limits = Limits {
            size: config.pool_size as usize,
            pipeline: config.pipeline_per_connection.max(1),
            max_idle: if scheme == Scheme::Tcp {
                config.max_idle
            } else {
                config.max_idle.min(HTTP_MAX_IDLE)
            },
        };
        let gateways = endpoints
            .into_iter()
            .map(|endpoint| {
                // `host:port` for a raw socket, the URL for HTTP: as the user wrote it.
                let name = endpoint.to_string();
                let plan = Plan {
                    tls: tls.clone(),
                    do_as: config.do_as.clone(),
                    ..Plan::plain(endpoint.clone())
                };
                let settings = Settings {
                    addr: endpoint.authority(),
                    codec,
                    plan: with_kerberos(plan, kerberos.as_ref(), config.qop),
                    connect_timeout: config.connect_timeout,
                    read_timeout: config.read_timeout,
                };
                Gateway::new(Pool::new(settings, limits, handle.clone()), name)
            })
            .collect();
        let tally = config.tally_writes.then(WriteTally::default);
        let client = AsyncHBaseClient {
            inner: Arc::new(Inner {
                gateways: Gateways::new(gateways),
                codec,
                config,
                rpc_count: AtomicU64::new(0),
                next_seq: AtomicI32::new(0),
                tally,
            }),
        };
        client.reach_one().await?;
        Ok(client)
    }

    /// Opens a connection to the first gateway that answers, leaving out those that do not;
    /// fails with the last one's error if none does.
    async fn reach_one(&self) -> Result<()> {
        let gateways = &self.inner.gateways;
        let mut last = None;
        for index in 0..gateways.len() {
            match gateways.get(index).pool.lease(1).await {
                Ok(lease) => {
                    drop(lease);
                    return Ok(());
                }
                Err(e) => {
                    gateways.failed(index);
                    last = Some(self.transport(index, e));
                }
            }
        }
        Err(last.expect("at least one gateway"))
    }

    /// The configuration the client was built with.
    ///
    /// ```
    /// # let emulator = hbase_emulator::start_local()?;
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// # let config = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// let hbase = percolator::AsyncHBaseClient::connect(config).await?;
    /// # hbase.blocking().admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// assert_eq!(hbase.config().addr, emulator.local_addr().to_string());
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn config(&self) -> &HBaseConfig {
        &self.inner.config
    }

    /// Thrift calls made through this client and its clones, including replays.
    ///
    /// ```
    /// use percolator::hbase::Get;
    /// # let emulator = hbase_emulator::start_local()?;
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// # let config = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// let hbase = percolator::AsyncHBaseClient::connect(config).await?;
    /// # hbase.blocking().admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// let before = hbase.rpc_count();
    /// hbase.get("t", &Get::new("r")).await?;
    /// assert_eq!(hbase.rpc_count(), before + 1);
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn rpc_count(&self) -> u64 {
        self.inner.rpc_count.load(Ordering::Relaxed)
    }

    /// The cells and bytes this client (and its clones) wrote, by family, when its
    /// configuration has [`tally_writes`](HBaseConfig::tally_writes); empty otherwise.
    ///
    /// ```
    /// use percolator::hbase::Put;
    /// # let emulator = hbase_emulator::start_local()?;
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// let config = percolator::HBaseConfig::new(emulator.local_addr().to_string()).tally_writes(true);
    /// let hbase = percolator::AsyncHBaseClient::connect(config).await?;
    /// # hbase.blocking().admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// hbase.put("t", &Put::new("r").add("f", "q", "v")).await?;
    /// let written = hbase.writes_by_family();
    /// assert_eq!((written[0].family.as_str(), written[0].cells, written[0].bytes), ("f", 1, 1 + 1 + 1 + 1 + 8));
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn writes_by_family(&self) -> Vec<FamilyWrites> {
        self.inner
            .tally
            .as_ref()
            .map_or_else(Vec::new, WriteTally::snapshot)
    }

    /// Runs `count` on the tally, when there is one.
    pub(crate) fn tally(&self, count: impl FnOnce(&WriteTally)) {
        if let Some(tally) = &self.inner.tally {
            count(tally);
        }
    }

    /// Whether requests go out in Thrift frames (a raw socket with the framed transport).
    /// HBase 2.6's gateway then reads the byte fields of some admin calls through the frame's
    /// whole buffer (`ByteBuffer.array()`): a family name in `deleteColumnFamily`, every
    /// attribute of a table or family descriptor.
    pub(crate) fn frames_requests(&self) -> bool {
        self.inner.codec.transport == Transport::Framed
    }

    /// The runtime the connections live on.
    pub(crate) fn handle(&self) -> &tokio::runtime::Handle {
        self.inner.gateways.first().pool.handle()
    }

    pub(crate) fn gateways(&self) -> &Gateways {
        &self.inner.gateways
    }

    /// Encodes a call (its arguments as field id and value, under a fresh sequence id) and
    /// runs it under the retry rules in the module docs.
    pub(crate) async fn call<T: Success>(
        &self,
        spec: CallSpec<'_>,
        args: &[(i16, Arg<'_>)],
    ) -> Result<T> {
        self.call_at(spec, args).await.map(|(value, _)| value)
    }

    /// [`call`](Self::call), and the gateway that answered it.
    pub(crate) async fn call_at<T: Success>(
        &self,
        spec: CallSpec<'_>,
        args: &[(i16, Arg<'_>)],
    ) -> Result<(T, usize)> {
        let started = Instant::now();
        let method = spec.method;
        if let Some(e) = region_away(method, spec.table) {
            return Err(e);
        }
        let result = self.call_once_or_replayed(spec, args).await;
        crate::metrics::hbase_call(method, started.elapsed(), result.as_ref().err());
        result
    }

    async fn call_once_or_replayed<T: Success>(
        &self,
        spec: CallSpec<'_>,
        args: &[(i16, Arg<'_>)],
    ) -> Result<(T, usize)> {
        let seq = self.inner.next_seq.fetch_add(1, Ordering::Relaxed);
        let method = spec.method;
        let request =
            wire::encode(self.inner.codec, method, seq, args).map_err(|e| Error::Protocol {
                peer: Peer::HBase,
                message: format!("encoding {method}: {e}"),
            })?;
        let started = Instant::now();
        let deadline = self.deadline(started);
        let gateways = &self.inner.gateways;
        let first_at = spec.gateway.unwrap_or_else(|| gateways.pick(None));
        let lease = self
            .bounded(&deadline, gateways.get(first_at).pool.lease(spec.rows))
            .await;
        let first = match self
            .attempt(first_at, &spec, &request, lease, &deadline)
            .await
        {
            Attempt::Done(result) => return result.map(|value| (value, first_at)),
            Attempt::Replay(error) => error,
        };
        if Instant::now() >= deadline.at {
            // No time is left: a replay would outlast the deadline the configuration promises.
            return Err(first);
        }
        // Another gateway, if there is one to go to: the first may be the one that failed.
        let second_at = spec
            .gateway
            .unwrap_or_else(|| gateways.pick(Some(first_at)));
        tracing::debug!(method, table = spec.table, error = %first, gateway = %gateways.get(second_at).name, "replaying once on a fresh connection");
        let fresh = self
            .bounded(&deadline, gateways.get(second_at).pool.fresh(spec.rows))
            .await;
        let second = match self
            .attempt(second_at, &spec, &request, fresh, &deadline)
            .await
        {
            Attempt::Done(result) => result,
            Attempt::Replay(error) => Err(error),
        };
        second
            .map(|value| (value, second_at))
            .map_err(|e| with_tries(e, 2, started.elapsed()))
    }

    /// The deadline of a call made at `started`: see `HBaseConfig::call_timeout`.
    fn deadline(&self, started: Instant) -> Deadline {
        let config = &self.inner.config;
        let (limit, setting) = match config.call_timeout {
            Some(limit) => (limit, "call timeout"),
            None => (config.read_timeout, "read timeout"),
        };
        Deadline {
            at: later(started, limit),
            limit,
            setting,
        }
    }

    /// `connect` (a lease from the pool, which may open a connection), given up at `deadline`.
    async fn bounded<L>(
        &self,
        deadline: &Deadline,
        connect: impl Future<Output = io::Result<L>>,
    ) -> io::Result<L> {
        let expired = {
            // Bound to the pool's runtime, so any executor may poll it.
            let _runtime = self.handle().enter();
            tokio::time::sleep_until(deadline.at.into())
        };
        tokio::select! {
            biased;
            got = connect => got,
            () = expired => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "no connection to the gateway within the {} of {:?}",
                    deadline.setting, deadline.limit
                ),
            )),
        }
    }

    async fn attempt<T: Success>(
        &self,
        gateway: usize,
        spec: &CallSpec<'_>,
        request: &Request,
        lease: io::Result<Lease>,
        deadline: &Deadline,
    ) -> Attempt<T> {
        let gateways = &self.inner.gateways;
        let lease = match lease {
            Ok(lease) => lease,
            Err(e) => {
                let error = self.transport(gateway, e);
                if error.retry_class() != RetryClass::Retry {
                    // TLS or authentication refused: another try would be refused the same.
                    return Attempt::Done(Err(error));
                }
                gateways.failed(gateway);
                // Nothing was sent: another gateway, if there is one, may take it.
                return if gateways.len() > 1 && spec.gateway.is_none() {
                    Attempt::Replay(error)
                } else {
                    Attempt::Done(Err(error))
                };
            }
        };
        self.inner.rpc_count.fetch_add(1, Ordering::Relaxed);
        let arm = spec.replay == Replay::OutcomeUnknown;
        match lease.call::<T>(request, arm, deadline).await {
            Ok(answer) => {
                gateways.succeeded(gateway);
                match answer {
                    Ok(value) => Attempt::Done(Ok(value)),
                    Err(e) => Attempt::Done(Err(errors::server_error(e, spec.method, spec.table))),
                }
            }
            Err(failure) => {
                if let Cause::Io(..) = failure.cause {
                    gateways.failed(gateway);
                }
                self.classify(gateway, failure, spec)
            }
        }
    }

    /// What a call that got no answer means under the retry rules.
    fn classify<T>(&self, gateway: usize, failure: Failure, spec: &CallSpec<'_>) -> Attempt<T> {
        let error = failure.cause.error(&self.inner.gateways.get(gateway).name);
        if failure.cause.is_refusal() {
            // Not a gateway that takes this request (not Thrift, or refused by HTTP status):
            // it applied nothing, and would answer a replay the same.
            return Attempt::Done(Err(error));
        }
        match (failure.sent, spec.replay) {
            (false, _) | (true, Replay::Safe) => Attempt::Replay(error),
            (true, Replay::NotAfterSend) => Attempt::Done(Err(error)),
            (true, Replay::OutcomeUnknown) => Attempt::Done(Err(Error::OutcomeUnknown {
                method: spec.method,
                table: spec.table.to_owned(),
                row: spec.row.to_vec(),
                source: Box::new(error),
            })),
        }
    }

    /// The error for a failure to reach the gateway at `index`: a TLS failure as itself, any
    /// other as a transport error.
    fn transport(&self, index: usize, source: io::Error) -> Error {
        let addr = self.inner.gateways.get(index).name.clone();
        if let Some(failure) = source
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<super::errors::TlsFailure>())
        {
            return Error::Tls {
                addr,
                failure: failure.clone(),
            };
        }
        #[cfg(feature = "kerberos")]
        if let Some(failure) = source
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<Arc<super::kerberos::KerberosError>>())
        {
            return Error::Kerberos {
                addr,
                source: Arc::clone(failure),
            };
        }
        Error::Transport {
            peer: Peer::HBase,
            addr,
            source: Arc::new(source),
        }
    }
}

/// The client's Kerberos credentials, acquired once (it may ask the KDC, so off the async
/// threads), when the configuration asks for Kerberos.
#[cfg(feature = "kerberos")]
async fn kerberos(
    config: &HBaseConfig,
    handle: &tokio::runtime::Handle,
) -> Result<Option<Arc<super::kerberos::Gss>>> {
    let Some(kerberos) = config.kerberos.clone() else {
        return Ok(None);
    };
    let acquired = handle
        .spawn_blocking(move || super::kerberos::Gss::new(&kerberos))
        .await
        .map_err(|e| Error::Protocol {
            peer: Peer::HBase,
            message: format!("acquiring Kerberos credentials: {e}"),
        })?;
    acquired.map(Some).map_err(|source| Error::Kerberos {
        addr: config.addr.clone(),
        source: Arc::new(source),
    })
}

#[cfg(not(feature = "kerberos"))]
async fn kerberos(config: &HBaseConfig, _handle: &tokio::runtime::Handle) -> Result<Option<()>> {
    match config.kerberos {
        Some(_) => Err(Error::IllegalArgument {
            message: "Kerberos needs the percolator crate's `kerberos` feature".into(),
        }),
        None => Ok(None),
    }
}

/// `plan` with what Kerberos adds to it: SASL on a raw socket, SPNEGO over HTTP.
#[cfg(feature = "kerberos")]
fn with_kerberos(mut plan: Plan, gss: Option<&Arc<super::kerberos::Gss>>, qop: super::Qop) -> Plan {
    let Some(gss) = gss else {
        return plan;
    };
    if plan.endpoint.is_http() {
        let (gss, host) = (Arc::clone(gss), plan.endpoint.host.clone());
        plan.authorize = Some(Arc::new(move || {
            gss.spnego_header(&host)
                .map_err(|e| Cause::Kerberos(Arc::new(e)))
        }));
    } else {
        plan.sasl = Some((Arc::clone(gss), qop));
    }
    plan
}

#[cfg(not(feature = "kerberos"))]
fn with_kerberos(plan: Plan, _gss: Option<&()>, _qop: super::Qop) -> Plan {
    plan
}

/// A timeout's error after `tries` tries of one call, with the time they took in all: each
/// try's message names only the limit that ended it.
fn with_tries(error: Error, tries: u32, elapsed: Duration) -> Error {
    match error {
        Error::Transport { peer, addr, source } if source.kind() == io::ErrorKind::TimedOut => {
            let elapsed =
                Duration::from_millis(u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX));
            Error::Transport {
                peer,
                addr,
                source: Arc::new(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("{source}; {tries} tries took {elapsed:?} in all"),
                )),
            }
        }
        Error::OutcomeUnknown {
            method,
            table,
            row,
            source,
        } => Error::OutcomeUnknown {
            method,
            table,
            row,
            source: Box::new(with_tries(*source, tries, elapsed)),
        },
        other => other,
    }
}

/// Failpoint `hbase::region_away::METHOD` (feature `failpoints`): the call is not sent and
/// fails as the gateway reports a region in transition its HBase client gave up on.
#[cfg(feature = "failpoints")]
fn region_away(method: &str, table: &str) -> Option<Error> {
    fail::eval(&format!("hbase::region_away::{method}"), |_| {
        Error::ServerIo {
            message: format!(
                "org.apache.hadoop.hbase.NotServingRegionException: {table},,1.0f. is not online \
                 (failpoint hbase::region_away::{method})"
            ),
            can_retry: false,
            exception: Some("org.apache.hadoop.hbase.NotServingRegionException".into()),
        }
    })
}

#[cfg(not(feature = "failpoints"))]
fn region_away(_method: &str, _table: &str) -> Option<Error> {
    None
}
