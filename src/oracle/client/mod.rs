//! Timestamp sources: the batching [`OracleClient`] and the in-process [`LocalTimestamps`].
//!
//! The client keeps `connections` lanes, each a connection with at most one request in flight
//! (the paper's pending-RPC batching): whoever asks while a request is in flight joins the
//! lane's next batch, and that batch goes out as one request for all of them. Each thread
//! asks through one lane (threads are dealt out round-robin), which keeps a lane's state in
//! one core's cache. The lanes run as tasks on the caller's multi-thread runtime, or else on
//! the crate's shared one, so the synchronous API works from any thread and the asynchronous
//! one from any runtime.

mod batch;
mod conn;
mod spares;
mod worker;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use self::batch::{block_on, Lane};
use self::conn::{Connection, Security};
use self::spares::Spares;
use super::alloc::{compose, Clock, SystemClock};
use super::auth::OracleToken;
use super::protocol::MAX_COUNT;
use super::stats::StatsSnapshot;
use crate::{Error, Peer, Result};

/// Where transactions get their timestamps: strictly increasing, from an oracle or a local
/// counter. Implement [`timestamp`](Self::timestamp) (e.g. to inject faults in tests); the
/// blocking form has a default.
///
/// ```
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use std::sync::Arc;
/// use percolator::oracle::{LocalTimestamps, TimestampSource};
///
/// /// Fails every other call: a flaky oracle for tests.
/// struct Flaky(LocalTimestamps, AtomicBool);
///
/// #[async_trait::async_trait]
/// impl TimestampSource for Flaky {
///     async fn timestamp(&self) -> percolator::Result<u64> {
///         if self.1.fetch_xor(true, Ordering::SeqCst) {
///             return Err(percolator::Error::Shutdown);
///         }
///         self.0.timestamp().await
///     }
/// }
///
/// let source: Arc<dyn TimestampSource> =
///     Arc::new(Flaky(LocalTimestamps::starting_after(9), AtomicBool::new(false)));
/// assert_eq!(source.get_timestamp()?, 10);
/// assert!(source.get_timestamp().is_err());
/// assert_eq!(source.get_timestamp()?, 11);
/// # Ok::<(), percolator::Error>(())
/// ```
#[async_trait::async_trait]
pub trait TimestampSource: Send + Sync {
    /// A timestamp greater than every one this source returned before it was called.
    ///
    /// ```
    /// use percolator::oracle::{LocalTimestamps, TimestampSource};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> percolator::Result<()> {
    /// let source = LocalTimestamps::new();
    /// let a = source.timestamp().await?;
    /// assert!(source.timestamp().await? > a);
    /// # Ok(())
    /// # }
    /// ```
    async fn timestamp(&self) -> Result<u64>;

    /// [`timestamp`](Self::timestamp) for synchronous callers: blocks the calling thread.
    ///
    /// ```
    /// use percolator::oracle::{LocalTimestamps, TimestampSource};
    /// let source = LocalTimestamps::starting_after(99);
    /// assert_eq!(TimestampSource::get_timestamp(&source)?, 100);
    /// # Ok::<(), percolator::Error>(())
    /// ```
    fn get_timestamp(&self) -> Result<u64> {
        block_on(self.timestamp())
    }

    /// A timestamp at hand, without a round trip: issued at most `max_age` ago and greater than
    /// every one this source returned before, or `None` (ask [`timestamp`](Self::timestamp)).
    /// A transaction that read nothing takes its start_ts so (`TxnOptions::blind_write_start_age`).
    /// The default has none at hand.
    ///
    /// ```
    /// use std::time::Duration;
    /// use percolator::oracle::{LocalTimestamps, TimestampSource};
    /// assert_eq!(LocalTimestamps::new().recent_timestamp(Duration::from_millis(2)), None);
    /// ```
    fn recent_timestamp(&self, max_age: Duration) -> Option<u64> {
        let _ = max_age;
        None
    }
}

/// How an [`OracleClient`] connects and how long it waits.
///
/// ```
/// use std::time::Duration;
/// use percolator::oracle::{ClientConfig, OracleClient};
/// let config = ClientConfig {
///     connect_timeout: Duration::from_millis(100),
///     ..ClientConfig::default()
/// };
/// // Nothing listens on port 1: the client gives up after the connect timeout.
/// let err = OracleClient::connect(&["127.0.0.1:1".to_string()], config).err().unwrap();
/// assert!(matches!(err, percolator::Error::OracleUnavailable { .. }));
/// ```
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// Connections (lanes) per server; each has one request in flight at a time.
    pub connections: usize,
    /// How long opening one connection (and its handshake) may take.
    pub connect_timeout: Duration,
    /// How long one batch may take, fail-overs and reconnects included, before its askers get
    /// `OracleUnavailable`.
    pub request_timeout: Duration,
    /// TLS to the oracle: the CA its certificate is checked against (`None`: the system's
    /// roots), whether it must name the host connected to, and a client certificate for an
    /// oracle that asks for one. `None`: plain TCP.
    pub tls: Option<crate::hbase::TlsOptions>,
    /// The token to present to an oracle that requires one.
    pub token: Option<OracleToken>,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            connections: 2,
            connect_timeout: Duration::from_secs(1),
            request_timeout: Duration::from_secs(5),
            tls: None,
            token: None,
        }
    }
}

/// Hands each thread that asks for timestamps its seat, which picks its lane.
static NEXT_SEAT: AtomicUsize = AtomicUsize::new(0);

pub(crate) struct Shared {
    addrs: Vec<String>,
    config: ClientConfig,
    lanes: Vec<Lane>,
    /// Index into `addrs` of the server the lanes use; moves on failures.
    preferred: AtomicUsize,
    spares: Spares,
    security: Security,
}

/// A batching, failing-over client of `percolator-oracle`. Cheap to share (`Arc`) between
/// threads and tasks; dropping it fails whatever is still pending with `Error::Shutdown`.
///
/// ```
/// use percolator::oracle::{ClientConfig, MemoryStore, OracleClient, OracleServer};
/// let oracle = OracleServer::start_local(MemoryStore::new())?;
/// let client = OracleClient::connect(&[oracle.local_addr().to_string()], ClientConfig::default())?;
/// let a = client.get_timestamp()?;
/// let b = client.get_timestamp()?;
/// assert!(a < b);
/// # Ok::<(), percolator::Error>(())
/// ```
pub struct OracleClient {
    shared: Arc<Shared>,
    /// Where the lanes run, and where the blocking methods wait.
    runtime: tokio::runtime::Handle,
    stop: watch::Sender<bool>,
    lanes: Vec<tokio::task::JoinHandle<()>>,
}

impl OracleClient {
    /// Connects to the first reachable address of `addrs` (a fail-over list, preferred first).
    /// Usable from any thread or runtime: the lanes run on the caller's multi-thread runtime,
    /// or else on the crate's shared one, beside the HBase connections, so a transaction's
    /// task and the lane that answers it wake each other without a thread of their own.
    ///
    /// ```
    /// # use percolator::oracle::{ClientConfig, MemoryStore, OracleClient, OracleServer};
    /// let oracle = OracleServer::start_local(MemoryStore::new())?;
    /// // A dead address first: the client fails over to the live one.
    /// let addrs = ["127.0.0.1:1".to_string(), oracle.local_addr().to_string()];
    /// let client = OracleClient::connect(&addrs, ClientConfig::default())?;
    /// assert!(client.get_timestamp()? > 0);
    /// # Ok::<(), percolator::Error>(())
    /// ```
    pub fn connect(addrs: &[String], config: ClientConfig) -> Result<OracleClient> {
        let runtime = crate::runtime::ambient_or_io()?;
        crate::runtime::wait(&runtime, Self::connect_async(addrs, config))
    }

    /// Like [`connect`](Self::connect), but the lanes run as tasks on the current runtime.
    ///
    /// ```
    /// # use percolator::oracle::{ClientConfig, MemoryStore, OracleClient, OracleServer};
    /// # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
    /// # async fn main() -> percolator::Result<()> {
    /// # let oracle = OracleServer::start_local(MemoryStore::new())?;
    /// let addrs = [oracle.local_addr().to_string()];
    /// let client = OracleClient::connect_async(&addrs, ClientConfig::default()).await?;
    /// assert!(client.get_timestamp_async().await? > 0);
    /// client.close().await;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn connect_async(addrs: &[String], config: ClientConfig) -> Result<OracleClient> {
        let shared = Shared::new(addrs, config)?;
        let (stop, stop_rx) = watch::channel(false);
        let lanes = start_lanes(&shared, &stop_rx).await?;
        Ok(OracleClient {
            shared,
            runtime: tokio::runtime::Handle::current(),
            stop,
            lanes,
        })
    }

    /// Stops the lanes and waits for them: pending askers get `Error::Shutdown`.
    ///
    /// ```
    /// # use percolator::oracle::{ClientConfig, MemoryStore, OracleClient, OracleServer};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> percolator::Result<()> {
    /// # let oracle = OracleServer::start_local(MemoryStore::new())?;
    /// # let addrs = [oracle.local_addr().to_string()];
    /// let client = OracleClient::connect_async(&addrs, ClientConfig::default()).await?;
    /// client.close().await; // the lanes are gone: nothing runs on after this
    /// # Ok(())
    /// # }
    /// ```
    pub async fn close(mut self) {
        let _ = self.stop.send(true);
        for lane in self.lanes.drain(..) {
            let _ = lane.await;
        }
    }

    /// One timestamp, batched with whatever other askers on this lane want meanwhile.
    ///
    /// ```
    /// # use percolator::oracle::{ClientConfig, MemoryStore, OracleClient, OracleServer};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> percolator::Result<()> {
    /// # let oracle = OracleServer::start_local(MemoryStore::new())?;
    /// # let addrs = [oracle.local_addr().to_string()];
    /// # let client = OracleClient::connect_async(&addrs, ClientConfig::default()).await?;
    /// let (a, b) = tokio::join!(client.get_timestamp_async(), client.get_timestamp_async());
    /// assert_ne!(a?, b?);
    /// # client.close().await;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn get_timestamp_async(&self) -> Result<u64> {
        let (batch, slot) = self.lane().join(1)?;
        batch.wait_one(slot).await
    }

    /// `n` (1..=65536) strictly increasing timestamps, from one batch.
    ///
    /// ```
    /// # use percolator::oracle::{ClientConfig, MemoryStore, OracleClient, OracleServer};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> percolator::Result<()> {
    /// # let oracle = OracleServer::start_local(MemoryStore::new())?;
    /// # let addrs = [oracle.local_addr().to_string()];
    /// # let client = OracleClient::connect_async(&addrs, ClientConfig::default()).await?;
    /// let ts = client.get_timestamps_async(3).await?;
    /// assert!(ts[0] < ts[1] && ts[1] < ts[2]);
    /// assert!(client.get_timestamps_async(0).await.is_err());
    /// # client.close().await;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn get_timestamps_async(&self, n: u32) -> Result<Vec<u64>> {
        if n == 0 || n > MAX_COUNT {
            return Err(Error::IllegalArgument {
                message: format!("asked for {n} timestamps; allowed 1..={MAX_COUNT}"),
            });
        }
        let (batch, slot) = self.lane().join(n)?;
        batch.wait(slot, n).await
    }

    /// One timestamp; blocks the calling thread. Also available as
    /// [`TimestampSource::get_timestamp`].
    ///
    /// ```
    /// # use percolator::oracle::{ClientConfig, MemoryStore, OracleClient, OracleServer};
    /// # let oracle = OracleServer::start_local(MemoryStore::new())?;
    /// # let client = OracleClient::connect(&[oracle.local_addr().to_string()], ClientConfig::default())?;
    /// let first = client.get_timestamp()?;
    /// assert!(client.get_timestamp()? > first);
    /// # Ok::<(), percolator::Error>(())
    /// ```
    pub fn get_timestamp(&self) -> Result<u64> {
        crate::runtime::wait(&self.runtime, self.get_timestamp_async())
    }

    /// [`get_timestamps_async`](Self::get_timestamps_async) for synchronous callers.
    ///
    /// ```
    /// # use percolator::oracle::{ClientConfig, MemoryStore, OracleClient, OracleServer};
    /// # let oracle = OracleServer::start_local(MemoryStore::new())?;
    /// # let client = OracleClient::connect(&[oracle.local_addr().to_string()], ClientConfig::default())?;
    /// let ts = client.get_timestamps(100)?;
    /// assert!(ts.windows(2).all(|w| w[0] < w[1]));
    /// # Ok::<(), percolator::Error>(())
    /// ```
    pub fn get_timestamps(&self, n: u32) -> Result<Vec<u64>> {
        crate::runtime::wait(&self.runtime, self.get_timestamps_async(n))
    }

    /// The counters of the server the client currently prefers (over a connection of its own).
    ///
    /// ```
    /// # use percolator::oracle::{ClientConfig, MemoryStore, OracleClient, OracleServer};
    /// # let oracle = OracleServer::start_local(MemoryStore::new())?;
    /// # let client = OracleClient::connect(&[oracle.local_addr().to_string()], ClientConfig::default())?;
    /// client.get_timestamp()?;
    /// assert_eq!(client.server_stats()?.timestamps, 1);
    /// # Ok::<(), percolator::Error>(())
    /// ```
    pub fn server_stats(&self) -> Result<StatsSnapshot> {
        let (addr, timeout) = self.stats_target();
        let security = &self.shared.security;
        crate::runtime::wait(&self.runtime, fetch_stats(&addr, timeout, security))
    }

    /// [`server_stats`](Self::server_stats) for asynchronous callers.
    ///
    /// ```
    /// # use percolator::oracle::{ClientConfig, MemoryStore, OracleClient, OracleServer};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> percolator::Result<()> {
    /// # let oracle = OracleServer::start_local(MemoryStore::new())?;
    /// # let addrs = [oracle.local_addr().to_string()];
    /// # let client = OracleClient::connect_async(&addrs, ClientConfig::default()).await?;
    /// client.get_timestamps_async(5).await?;
    /// assert_eq!(client.server_stats_async().await?.timestamps, 5);
    /// # client.close().await;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn server_stats_async(&self) -> Result<StatsSnapshot> {
        let (addr, timeout) = self.stats_target();
        fetch_stats(&addr, timeout, &self.shared.security).await
    }

    fn stats_target(&self) -> (String, Duration) {
        let at = self.shared.preferred.load(Ordering::Relaxed) % self.shared.addrs.len();
        (
            self.shared.addrs[at].clone(),
            self.shared.config.request_timeout,
        )
    }

    /// The calling thread's lane: each thread sticks to one, so a lane's queue, batch and
    /// waiter list stay in one core's cache instead of bouncing between cores. Threads are
    /// dealt out to lanes round-robin.
    fn lane(&self) -> &Lane {
        thread_local! {
            static SEAT: usize = NEXT_SEAT.fetch_add(1, Ordering::Relaxed);
        }
        let seat = SEAT.with(|s| *s);
        &self.shared.lanes[seat % self.shared.lanes.len()]
    }
}

#[async_trait::async_trait]
impl TimestampSource for OracleClient {
    async fn timestamp(&self) -> Result<u64> {
        self.get_timestamp_async().await
    }

    fn get_timestamp(&self) -> Result<u64> {
        OracleClient::get_timestamp(self)
    }

    /// A spare of a recent batch. The first call finds none and has the next batch carry some,
    /// so a client that keeps asking gets them from then on.
    fn recent_timestamp(&self, max_age: Duration) -> Option<u64> {
        self.shared.spares.take(max_age, Instant::now())
    }
}

impl Drop for OracleClient {
    /// The lanes finish by themselves, failing what is pending with `Error::Shutdown` (use
    /// [`close`](OracleClient::close) to wait for them).
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

impl Shared {
    fn new(addrs: &[String], config: ClientConfig) -> Result<Arc<Shared>> {
        if addrs.is_empty() || config.connections == 0 {
            return Err(Error::IllegalArgument {
                message: "an oracle client needs at least one address and one connection".into(),
            });
        }
        let security = Security::new(config.tls.as_ref(), config.token.clone())?;
        Ok(Arc::new(Shared {
            security,
            addrs: addrs.to_vec(),
            lanes: (0..config.connections).map(|_| Lane::new()).collect(),
            config,
            preferred: AtomicUsize::new(0),
            spares: Spares::default(),
        }))
    }
}

/// Connects the first lane (proving an oracle is reachable) and spawns every lane's task on the
/// current runtime.
async fn start_lanes(
    shared: &Arc<Shared>,
    stop: &watch::Receiver<bool>,
) -> Result<Vec<tokio::task::JoinHandle<()>>> {
    let mut first = Some(probe(shared).await?);
    Ok((0..shared.lanes.len())
        .map(|index| {
            tokio::spawn(worker::run_lane(
                Arc::clone(shared),
                index,
                first.take(),
                stop.clone(),
            ))
        })
        .collect())
}

/// Opens one connection to the first address that answers, and makes it the preferred one.
async fn probe(shared: &Shared) -> Result<Connection> {
    let mut reasons = Vec::new();
    for (i, addr) in shared.addrs.iter().enumerate() {
        match Connection::open(addr, shared.config.connect_timeout, &shared.security).await {
            Ok(conn) => {
                shared.preferred.store(i, Ordering::Relaxed);
                return Ok(conn);
            }
            // The oracles of a list are secured alike: the next would refuse us as well.
            Err(conn::ConnError::Refused(failure)) => {
                return Err(Error::OracleAuth {
                    addr: addr.clone(),
                    failure,
                })
            }
            Err(e) => reasons.push(format!("{addr}: {e}")),
        }
    }
    Err(Error::OracleUnavailable {
        addrs: shared.addrs.clone(),
        reason: reasons.join("; "),
    })
}

/// Asks the oracle at `addr` for its counters over a fresh connection.
pub(crate) async fn fetch_stats(
    addr: &str,
    timeout: Duration,
    security: &Security,
) -> Result<StatsSnapshot> {
    let exchange = async {
        let mut conn = Connection::open(addr, timeout, security).await?;
        conn.stats().await
    };
    let result = tokio::time::timeout(timeout, exchange)
        .await
        .unwrap_or(Err(conn::ConnError::Timeout("waiting for stats")));
    result.map_err(|e| match e {
        conn::ConnError::Io(source) => Error::Transport {
            peer: Peer::Oracle,
            addr: addr.to_string(),
            source: std::sync::Arc::new(source),
        },
        conn::ConnError::Refused(failure) => Error::OracleAuth {
            addr: addr.to_string(),
            failure,
        },
        other => Error::Protocol {
            peer: Peer::Oracle,
            message: format!("{addr}: {other}"),
        },
    })
}

/// Timestamps from an in-process counter seeded from the clock: for unit tests and
/// single-process tools that need no oracle. Unique and increasing within this process only.
///
/// ```
/// use percolator::{LocalTimestamps, TimestampSource};
/// let source = LocalTimestamps::new();
/// let a = source.get_timestamp()?;
/// assert!(source.get_timestamp()? > a);
/// # Ok::<(), percolator::Error>(())
/// ```
#[derive(Debug)]
pub struct LocalTimestamps {
    last: AtomicU64,
}

impl LocalTimestamps {
    /// Starts at the current wall-clock millisecond, like a fresh oracle would.
    ///
    /// ```
    /// use percolator::oracle::{physical_of, Clock, LocalTimestamps, SystemClock, TimestampSource};
    /// let before = SystemClock.now_ms();
    /// let ts = LocalTimestamps::new().get_timestamp()?;
    /// assert!(physical_of(ts) >= before);
    /// # Ok::<(), percolator::Error>(())
    /// ```
    pub fn new() -> Self {
        Self::starting_after(compose(SystemClock.now_ms(), 0))
    }

    /// The first timestamp handed out will be `ts + 1`: for tests that want known values.
    ///
    /// ```
    /// use percolator::oracle::{LocalTimestamps, TimestampSource};
    /// let source = LocalTimestamps::starting_after(41);
    /// assert_eq!(source.get_timestamp()?, 42);
    /// # Ok::<(), percolator::Error>(())
    /// ```
    pub fn starting_after(ts: u64) -> Self {
        LocalTimestamps {
            last: AtomicU64::new(ts),
        }
    }

    /// The next timestamp, in the same form as [`OracleClient::get_timestamp_async`].
    ///
    /// ```
    /// use percolator::oracle::LocalTimestamps;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> percolator::Result<()> {
    /// let source = LocalTimestamps::starting_after(7);
    /// assert_eq!(source.get_timestamp_async().await?, 8);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn get_timestamp_async(&self) -> Result<u64> {
        self.next()
    }

    fn next(&self) -> Result<u64> {
        let prev = self.last.fetch_add(1, Ordering::SeqCst);
        if prev == u64::MAX {
            return Err(Error::OracleStore {
                message: "local timestamp counter exhausted".into(),
            });
        }
        Ok(prev + 1)
    }
}

impl Default for LocalTimestamps {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait::async_trait]
impl TimestampSource for LocalTimestamps {
    async fn timestamp(&self) -> Result<u64> {
        self.next()
    }

    fn get_timestamp(&self) -> Result<u64> {
        self.next()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_timestamps_increase_across_threads() {
        let source = Arc::new(LocalTimestamps::starting_after(41));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let source = Arc::clone(&source);
                std::thread::spawn(move || {
                    let got: Vec<u64> =
                        (0..1000).map(|_| source.get_timestamp().unwrap()).collect();
                    assert!(got.windows(2).all(|w| w[0] < w[1]));
                    got
                })
            })
            .collect();
        let mut all: Vec<u64> = threads
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect();
        all.sort_unstable();
        assert_eq!(all, (42..42 + 4000).collect::<Vec<_>>());
    }

    #[test]
    fn connect_needs_an_address_and_reports_unreachable_ones() {
        assert!(matches!(
            OracleClient::connect(&[], ClientConfig::default()),
            Err(Error::IllegalArgument { .. })
        ));
        // A port that was just free: nothing listens there.
        let addr = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .to_string();
        let err = OracleClient::connect(&[addr], ClientConfig::default())
            .err()
            .unwrap();
        assert!(matches!(err, Error::OracleUnavailable { .. }), "{err}");
    }
}
