//! The oracle server: [`run`] serves a bound listener until a shutdown future resolves (or the
//! store fences it); [`OracleServer::start`] runs one in-process on its own thread, and
//! [`OracleServer::start_on`] as tasks on a runtime the caller runs.

mod auth;
mod conn;
mod core;
mod identity;
mod standby;
mod window;

use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use self::auth::Security;
use self::core::Core;
use self::window::Keeper;
use super::alloc::{Clock, SystemClock};
use super::auth::{OracleToken, ServerTls};
use super::protocol::{self, HelloStatus};
use super::store::{Claim, WindowStore};
use crate::{Error, Result};

/// Server tuning. The defaults suit production; tests shorten the timeouts.
///
/// ```
/// use std::sync::Arc;
/// use percolator::oracle::{physical_of, Clock, MemoryStore, OffsetClock, OracleClient};
/// use percolator::oracle::{OracleServer, ServerConfig, SystemClock};
/// let config = ServerConfig {
///     clock: Arc::new(OffsetClock { offset_ms: 3_600_000 }), // an hour ahead
///     ..ServerConfig::default()
/// };
/// let oracle = OracleServer::start("127.0.0.1:0", MemoryStore::new(), config)?;
/// let client = OracleClient::connect(&[oracle.local_addr().to_string()], Default::default())?;
/// assert!(physical_of(client.get_timestamp()?) > SystemClock.now_ms() + 3_000_000);
/// # Ok::<(), percolator::Error>(())
/// ```
#[derive(Clone)]
pub struct ServerConfig {
    /// How far ahead of the clock each extension moves the persisted top.
    pub window: Duration,
    /// Extend when less than this much window is left.
    pub extend_below: Duration,
    /// Connections beyond this are refused in the hello (status 2).
    pub max_connections: usize,
    /// A new connection must send its hello within this.
    pub handshake_timeout: Duration,
    /// A request that has started arriving must complete within this.
    pub frame_timeout: Duration,
    /// A connection with nothing to say is closed after this (also catches half-open peers).
    pub idle_timeout: Duration,
    /// How long a request may wait for a window before it is answered `Unavailable`.
    pub request_wait: Duration,
    /// Period of the stats log line.
    pub stats_interval: Duration,
    /// On shutdown, how long connections get to finish what they are doing.
    pub shutdown_grace: Duration,
    /// Runtime threads for [`OracleServer::start`].
    pub worker_threads: usize,
    /// The wall clock timestamps follow (tests step it).
    pub clock: Arc<dyn Clock>,
    /// Claim the (shared) store only once no live oracle holds it, turning clients away
    /// meanwhile; without it, starting displaces a serving oracle after its lease. See
    /// docs/oracle.md, "Standby oracles".
    pub standby: bool,
    /// Serve TLS only, with these files (see docs/oracle.md, "Securing the oracle").
    pub tls: Option<ServerTls>,
    /// Require clients to present this token in their hello.
    pub token: Option<OracleToken>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            window: Duration::from_secs(3),
            extend_below: Duration::from_millis(1500),
            max_connections: 1024,
            handshake_timeout: Duration::from_secs(5),
            frame_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(600),
            request_wait: Duration::from_secs(2),
            stats_interval: Duration::from_secs(10),
            shutdown_grace: Duration::from_secs(5),
            worker_threads: 1,
            clock: Arc::new(SystemClock),
            standby: false,
            tls: None,
            token: None,
        }
    }
}

impl fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerConfig")
            .field("window", &self.window)
            .field("extend_below", &self.extend_below)
            .field("max_connections", &self.max_connections)
            .field("handshake_timeout", &self.handshake_timeout)
            .field("frame_timeout", &self.frame_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("request_wait", &self.request_wait)
            .field("worker_threads", &self.worker_threads)
            .field("standby", &self.standby)
            .field("tls", &self.tls)
            .field("token", &self.token)
            .finish_non_exhaustive()
    }
}

/// Serves `listener` from `store` until `shutdown` resolves. Returns `Err(OracleFenced)` if
/// another oracle claimed the store (this one then stopped serving), or the claim's error.
/// This is the `percolator-oracle` binary's server, on the caller's runtime.
///
/// ```
/// use percolator::oracle::{run, ClientConfig, MemoryStore, OracleClient, ServerConfig};
/// # #[tokio::main]
/// # async fn main() -> percolator::Result<()> {
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
/// let addrs = [listener.local_addr().unwrap().to_string()];
/// let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
/// let server = tokio::spawn(run(listener, MemoryStore::new(), ServerConfig::default(), async {
///     let _ = stopped.await;
/// }));
/// let client = OracleClient::connect_async(&addrs, ClientConfig::default()).await?;
/// assert!(client.get_timestamp_async().await? > 0);
/// client.close().await;
/// stop.send(()).unwrap();
/// server.await.unwrap()?; // a clean stop, not fenced
/// # Ok(())
/// # }
/// ```
pub async fn run<S: WindowStore>(
    listener: TcpListener,
    store: S,
    config: ServerConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<()> {
    tokio::pin!(shutdown);
    let standby = config.standby;
    let security = Security::new(&config)?;
    let oracle = tokio::select! {
        opened = Oracle::open(store, config, Arc::clone(&security)) => opened?,
        _ = standby::turn_away(&listener, &security), if standby => unreachable!("turning away never ends"),
        _ = &mut shutdown => {
            tracing::info!("stopped while standing by");
            return Ok(());
        }
    };
    oracle.serve(listener, shutdown).await
}

/// An oracle that has claimed its store and is ready to serve.
pub(crate) struct Oracle<S> {
    core: Arc<Core>,
    store: Arc<Mutex<S>>,
    config: Arc<ServerConfig>,
    security: Arc<Security>,
    claim: Claim,
}

impl<S: WindowStore> Oracle<S> {
    /// Claims the store: from here on, no older oracle on it can extend its window. A standby
    /// first waits until the store is free.
    pub async fn open(store: S, config: ServerConfig, security: Arc<Security>) -> Result<Self> {
        let store = Arc::new(Mutex::new(store));
        let claim = if config.standby {
            standby::claim_when_free(&store).await?
        } else {
            let claiming = Arc::clone(&store);
            tokio::task::spawn_blocking(move || claiming.lock().claim())
                .await
                .map_err(|e| Error::OracleStore {
                    message: format!("claim task failed: {e}"),
                })??
        };
        let lease = store.lock().lease();
        let core = Core::new(claim.top, lease.is_some(), Arc::clone(&config.clock))?;
        tracing::info!(store = %store.lock().describe(), persisted_top = claim.top, "claimed the window store");
        Ok(Oracle {
            core: Arc::new(core),
            store,
            config: Arc::new(config),
            security,
            claim,
        })
    }

    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()>,
    ) -> Result<()> {
        let (stop_tx, stop_rx) = watch::channel(false);
        let mut keeper = tokio::spawn(
            Keeper {
                core: Arc::clone(&self.core),
                store: Arc::clone(&self.store),
                config: Arc::clone(&self.config),
                initial_wait: self.claim.wait,
                stop: stop_rx.clone(),
            }
            .run(),
        );
        let reporter = tokio::spawn(report_stats(
            Arc::clone(&self.core),
            self.config.stats_interval,
            stop_rx.clone(),
        ));
        if let Ok(addr) = listener.local_addr() {
            tracing::info!(%addr, tls = self.security.is_tls(), token = self.config.token.is_some(), "timestamp oracle listening");
        }
        let mut connections = JoinSet::new();
        let mut keeper_result = None;
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                _ = &mut shutdown => break,
                result = &mut keeper => {
                    keeper_result = Some(flatten(result));
                    break;
                }
                accepted = listener.accept() => match accepted {
                    Ok((stream, peer)) => {
                        if connections.len() >= self.config.max_connections {
                            self.core.stats.connection_rejected();
                            tracing::warn!(%peer, limit = self.config.max_connections, "too many connections: refusing");
                            // Best effort, never blocks: the peer learns why before the close.
                            let _ = stream.try_write(&protocol::server_hello(HelloStatus::TooManyConnections));
                            continue;
                        }
                        if let Err(e) = stream.set_nodelay(true) {
                            tracing::warn!(%peer, error = %e, "cannot set TCP_NODELAY");
                        }
                        connections.spawn(conn::serve_connection(
                            stream,
                            peer,
                            Arc::clone(&self.core),
                            Arc::clone(&self.config),
                            Arc::clone(&self.security),
                            stop_rx.clone(),
                        ));
                    }
                    Err(e) => {
                        // Typically out of file descriptors: back off instead of spinning.
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                },
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
            }
        }
        drop(listener);
        self.core.stop();
        let _ = stop_tx.send(true);
        let drained = tokio::time::timeout(self.config.shutdown_grace, async {
            while connections.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            tracing::warn!(
                left = connections.len(),
                "connections did not finish in time: aborting them"
            );
            connections.shutdown().await;
        }
        let keeper_result = match keeper_result {
            Some(r) => r,
            None => flatten(keeper.await),
        };
        let _ = reporter.await;
        tracing::info!(stats = ?self.core.stats.snapshot(), "timestamp oracle stopped");
        keeper_result
    }
}

fn flatten(joined: std::result::Result<Result<()>, tokio::task::JoinError>) -> Result<()> {
    joined.map_err(|e| Error::OracleStore {
        // Nothing aborts the keeper, so a cancelled keeper means its runtime is shutting
        // down; the serving task may see that before it is cancelled in turn.
        message: if e.is_cancelled() {
            RUNTIME_SHUT_DOWN.into()
        } else {
            format!("window keeper failed: {e}")
        },
    })?
}

const RUNTIME_SHUT_DOWN: &str = "the runtime the oracle served on shut down before it";

async fn report_stats(core: Arc<Core>, every: Duration, mut stop: watch::Receiver<bool>) {
    let mut last_requests = u64::MAX;
    loop {
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
        let s = core.stats.snapshot();
        if s.requests == last_requests {
            continue;
        }
        last_requests = s.requests;
        tracing::info!(
            requests = s.requests,
            timestamps = s.timestamps,
            mean_batch = format!("{:.1}", s.mean_batch()),
            window_top = s.window_top,
            window_extensions = s.window_extensions,
            connections = s.connections_open,
            rejected = s.connections_rejected,
            bad_requests = s.bad_requests,
            fenced = core.is_fenced(),
            "oracle stats"
        );
    }
}

/// Runs oracles in-process, each on its own thread and runtime or on a runtime the caller
/// runs: for tests, the demo and tools that embed an oracle.
///
/// ```
/// use percolator::OracleServer;
/// let oracle = OracleServer::start_local(percolator::oracle::MemoryStore::new())?;
/// assert!(oracle.local_addr().ip().is_loopback());
/// oracle.shutdown()?;
/// # Ok::<(), percolator::Error>(())
/// ```
pub struct OracleServer;

impl OracleServer {
    /// An oracle on an ephemeral loopback port with default settings.
    ///
    /// ```
    /// use percolator::oracle::{MemoryStore, OracleClient, OracleServer};
    /// let oracle = OracleServer::start_local(MemoryStore::new())?;
    /// let client = OracleClient::connect(&[oracle.local_addr().to_string()], Default::default())?;
    /// assert!(client.get_timestamp()? > 0);
    /// # Ok::<(), percolator::Error>(())
    /// ```
    pub fn start_local<S: WindowStore>(store: S) -> Result<OracleHandle> {
        Self::start("127.0.0.1:0", store, ServerConfig::default())
    }

    /// Binds `addr`, claims `store` and starts serving; returns once it accepts connections.
    /// A [standby](ServerConfig::standby) returns once bound, and claims in the background.
    ///
    /// ```
    /// use percolator::oracle::{MemoryStore, OracleClient, OracleServer, ServerConfig};
    /// let store = MemoryStore::new();
    /// let first = OracleServer::start("127.0.0.1:0", store.clone(), ServerConfig::default())?;
    /// let client = OracleClient::connect(&[first.local_addr().to_string()], Default::default())?;
    /// let before = client.get_timestamp()?;
    /// first.shutdown()?;
    /// // A restart on the same store continues above everything served before.
    /// let second = OracleServer::start("127.0.0.1:0", store, ServerConfig::default())?;
    /// let client = OracleClient::connect(&[second.local_addr().to_string()], Default::default())?;
    /// assert!(client.get_timestamp()? > before);
    /// # Ok::<(), percolator::Error>(())
    /// ```
    pub fn start<S: WindowStore>(
        addr: &str,
        store: S,
        config: ServerConfig,
    ) -> Result<OracleHandle> {
        let addr = addr.to_string();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<SocketAddr>>();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        // One worker needs no work-stealing scheduler: the current-thread one wakes once per
        // request where the multi-threaded one also hands work between its driver and worker.
        let mut builder = if config.worker_threads <= 1 {
            tokio::runtime::Builder::new_current_thread()
        } else {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            b.worker_threads(config.worker_threads);
            b
        };
        let runtime = builder
            .thread_name("percolator-oracle")
            .enable_all()
            .build()
            .map_err(|e| Error::io("building the oracle runtime", e))?;
        let thread = std::thread::Builder::new()
            .name("percolator-oracle".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let stop = async {
                        let _ = stop_rx.await;
                    };
                    if config.standby {
                        // Ready once bound: it turns clients away until it owns the store.
                        let listener = match bind(&addr).await {
                            Ok((listener, local)) => {
                                let _ = ready_tx.send(Ok(local));
                                listener
                            }
                            Err(e) => {
                                let _ = ready_tx.send(Err(e));
                                return Ok(());
                            }
                        };
                        return run(listener, store, config, stop).await;
                    }
                    match bind_and_open(&addr, store, config).await {
                        Ok((listener, local, oracle)) => {
                            let _ = ready_tx.send(Ok(local));
                            oracle.serve(listener, stop).await
                        }
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                            Ok(())
                        }
                    }
                })
            })
            .map_err(|e| Error::io("spawning the oracle thread", e))?;
        match ready_rx.recv() {
            Ok(Ok(local_addr)) => Ok(OracleHandle {
                local_addr,
                stop: Some(stop_tx),
                serving: Some(Serving::Thread(thread)),
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => Err(Error::OracleStore {
                message: "oracle thread died while starting".into(),
            }),
        }
    }

    /// Like [`start`](Self::start), but serves as tasks on `runtime`, a multi-thread runtime
    /// the caller already runs (a current-thread one is refused: it serves only while its
    /// thread blocks on it). In a process that is also the oracle's client, this spares every
    /// request the wake-up of a thread of its own: the client's workers serve it between their
    /// other tasks. Returns once the oracle accepts connections.
    ///
    /// ```
    /// use percolator::oracle::{MemoryStore, OracleClient, OracleServer, ServerConfig};
    /// let runtime = tokio::runtime::Runtime::new().unwrap();
    /// let oracle =
    ///     OracleServer::start_on(runtime.handle(), "127.0.0.1:0", MemoryStore::new(), ServerConfig::default())?;
    /// let client = OracleClient::connect(&[oracle.local_addr().to_string()], Default::default())?;
    /// assert!(client.get_timestamp()? > 0);
    /// oracle.shutdown()?; // stops its tasks and waits for them
    /// # Ok::<(), percolator::Error>(())
    /// ```
    pub fn start_on<S: WindowStore>(
        runtime: &tokio::runtime::Handle,
        addr: &str,
        store: S,
        config: ServerConfig,
    ) -> Result<OracleHandle> {
        if runtime.runtime_flavor() != tokio::runtime::RuntimeFlavor::MultiThread {
            return Err(Error::IllegalArgument {
                message: "an oracle served on a runtime needs a multi-thread runtime".into(),
            });
        }
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let stop = async {
            let _ = stop_rx.await;
        };
        let (local_addr, task) = if config.standby {
            let (listener, local) = crate::runtime::wait(runtime, bind(addr))?;
            (local, runtime.spawn(run(listener, store, config, stop)))
        } else {
            let (listener, local, oracle) =
                crate::runtime::wait(runtime, bind_and_open(addr, store, config))?;
            (local, runtime.spawn(oracle.serve(listener, stop)))
        };
        Ok(OracleHandle {
            local_addr,
            stop: Some(stop_tx),
            serving: Some(Serving::Task {
                runtime: runtime.clone(),
                task,
            }),
        })
    }
}

/// Binds `addr` and claims `store`: an oracle ready to serve, and the address it listens on.
async fn bind_and_open<S: WindowStore>(
    addr: &str,
    store: S,
    config: ServerConfig,
) -> Result<(TcpListener, SocketAddr, Oracle<S>)> {
    let security = Security::new(&config)?;
    let (listener, local) = bind(addr).await?;
    Ok((
        listener,
        local,
        Oracle::open(store, config, security).await?,
    ))
}

async fn bind(addr: &str) -> Result<(TcpListener, SocketAddr)> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|e| Error::io(format!("binding {addr}"), e))?;
    let local = listener
        .local_addr()
        .map_err(|e| Error::io("reading the bound address", e))?;
    Ok((listener, local))
}

/// A running in-process oracle. Dropping it shuts it down.
///
/// ```
/// use percolator::oracle::{MemoryStore, OracleServer};
/// let oracle = OracleServer::start_local(MemoryStore::new())?;
/// assert!(!oracle.is_finished());
/// drop(oracle); // stops it and waits for its thread
/// # Ok::<(), percolator::Error>(())
/// ```
pub struct OracleHandle {
    local_addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    serving: Option<Serving>,
}

/// Where an in-process oracle runs.
enum Serving {
    /// Its own thread and runtime ([`OracleServer::start`]).
    Thread(std::thread::JoinHandle<Result<()>>),
    /// A task on the caller's runtime ([`OracleServer::start_on`]).
    Task {
        runtime: tokio::runtime::Handle,
        task: tokio::task::JoinHandle<Result<()>>,
    },
}

impl OracleHandle {
    /// Where the oracle listens: the address to give clients.
    ///
    /// ```
    /// # use percolator::oracle::{MemoryStore, OracleServer};
    /// let oracle = OracleServer::start_local(MemoryStore::new())?;
    /// assert_ne!(oracle.local_addr().port(), 0, "the ephemeral port that was bound");
    /// # Ok::<(), percolator::Error>(())
    /// ```
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// True once the server stopped by itself (fenced).
    ///
    /// ```
    /// # use std::time::{Duration, Instant};
    /// use percolator::oracle::{MemoryStore, OracleServer};
    /// let store = MemoryStore::with_lease(Duration::from_millis(200));
    /// let old = OracleServer::start_local(store.clone())?;
    /// let _new = OracleServer::start_local(store)?; // claims the store: fences the old one
    /// let deadline = Instant::now() + Duration::from_secs(10);
    /// while !old.is_finished() && Instant::now() < deadline {
    ///     std::thread::sleep(Duration::from_millis(20));
    /// }
    /// assert!(old.is_finished());
    /// # Ok::<(), percolator::Error>(())
    /// ```
    pub fn is_finished(&self) -> bool {
        match &self.serving {
            None => true,
            Some(Serving::Thread(thread)) => thread.is_finished(),
            Some(Serving::Task { task, .. }) => task.is_finished(),
        }
    }

    /// Stops serving, drains connections, releases the store; returns how the server ended
    /// (`Err(OracleFenced)` if it had been fenced).
    ///
    /// ```
    /// # use percolator::oracle::{MemoryStore, OracleServer};
    /// let oracle = OracleServer::start_local(MemoryStore::new())?;
    /// assert!(oracle.shutdown().is_ok(), "it was never fenced");
    /// # Ok::<(), percolator::Error>(())
    /// ```
    pub fn shutdown(mut self) -> Result<()> {
        self.stop_and_join()
    }

    fn stop_and_join(&mut self) -> Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let panicked = || Error::OracleStore {
            message: "the oracle panicked".into(),
        };
        match self.serving.take() {
            None => Ok(()),
            Some(Serving::Thread(thread)) => thread.join().unwrap_or_else(|_| Err(panicked())),
            Some(Serving::Task { runtime, task }) => match crate::runtime::wait(&runtime, task) {
                Ok(result) => result,
                Err(e) if e.is_panic() => Err(panicked()),
                Err(_) => Err(Error::OracleStore {
                    message: RUNTIME_SHUT_DOWN.into(),
                }),
            },
        }
    }
}

impl Drop for OracleHandle {
    fn drop(&mut self) {
        if let Err(e) = self.stop_and_join() {
            tracing::warn!(error = %e, "in-process oracle ended with an error");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oracle::MemoryStore;

    fn start_on(runtime: &tokio::runtime::Runtime) -> Result<OracleHandle> {
        OracleServer::start_on(
            runtime.handle(),
            "127.0.0.1:0",
            MemoryStore::new(),
            ServerConfig::default(),
        )
    }

    #[test]
    fn an_oracle_is_not_served_on_a_current_thread_runtime() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert!(matches!(
            start_on(&runtime),
            Err(Error::IllegalArgument { .. })
        ));
    }

    #[test]
    fn a_runtime_shut_down_under_its_oracle_is_reported_not_waited_for() {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let oracle = start_on(&runtime).unwrap();
        drop(runtime);
        assert!(oracle.is_finished());
        let err = oracle.shutdown().unwrap_err();
        assert!(
            matches!(&err, Error::OracleStore { message } if message.contains("shut down")),
            "{err}"
        );
    }
}
