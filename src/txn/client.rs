//! `AsyncClient`: the entry point of the async API. Owns the HBase access, the timestamp
//! source, the liveness row and its heartbeat, and the background commits.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::error::{Error, Result, RetryClass};
use crate::hbase::{AsyncHBaseClient, HBaseConfig};
use crate::key::CellKey;
use crate::oracle::{OracleClient, TimestampSource};
use crate::txn::context::Context;
use crate::txn::heartbeat::Heartbeat;
use crate::txn::liveness::Liveness;
use crate::txn::options::{RetryPolicy, TxnOptions};
use crate::txn::resolver::LockResolver;
use crate::txn::safe_point;
use crate::txn::session::Session;
use crate::txn::stats::ClientStats;
use crate::txn::store::HBaseAccess;
use crate::txn::transaction::AsyncTransaction;
use crate::txn::until_settled;

/// What all clones of a client share.
struct Shared {
    ctx: Arc<Context>,
    heartbeat: Mutex<Option<Heartbeat>>,
    shut_down: AtomicBool,
}

impl Shared {
    async fn shutdown(&self) {
        self.shut_down.store(true, Ordering::SeqCst);
        let ctx = &self.ctx;
        ctx.background().drain().await;
        let heartbeat = self.heartbeat.lock().take();
        if let Some(mut heartbeat) = heartbeat {
            heartbeat.stop().await;
            if !ctx.is_dead()
                && let Err(e) = ctx.liveness().remove(ctx.store()).await
            {
                tracing::warn!(error = %e, "could not remove liveness row");
            }
        }
    }
}

/// A transactional client for tokio code. Cheap to clone; clones share connections, the
/// heartbeat and the liveness row. Call [`shutdown`](Self::shutdown) when done: it waits for
/// background commits and removes the liveness row (dropping the last clone starts the same
/// shutdown in the background).
///
/// ```no_run
/// # async fn demo() -> percolator::Result<()> {
/// use percolator::{AsyncClient, HBaseConfig, TxnOptions};
/// let client = AsyncClient::connect(
///     HBaseConfig::new("127.0.0.1:9090"),
///     &["127.0.0.1:7070".to_string()],
///     TxnOptions::default(),
/// )
/// .await?;
/// let moved = client
///     .run(async |txn| {
///         txn.set("accounts", "bob", "f", "balance", b"5".to_vec())?;
///         Ok(true)
///     })
///     .await?;
/// client.shutdown().await;
/// # let _ = moved; Ok(()) }
/// ```
#[derive(Clone)]
pub struct AsyncClient {
    shared: Arc<Shared>,
    /// Counts user handles only (transactions and background tasks hold the context).
    handles: Arc<()>,
}

impl Drop for AsyncClient {
    fn drop(&mut self) {
        if Arc::strong_count(&self.handles) == 1 && !self.shared.shut_down.load(Ordering::SeqCst) {
            let shared = Arc::clone(&self.shared);
            let runtime = self.shared.ctx.background().runtime().clone();
            // The last handle is gone: nobody is left to await the shutdown. The task holds
            // no client handle: a runtime shutting down drops it unpolled, and a handle's drop
            // would spawn it again, without end.
            runtime.spawn(async move { shared.shutdown().await });
        }
    }
}

impl AsyncClient {
    /// Builds a client over any HBase access and timestamp source (production: the pooled
    /// HBase client and `OracleClient`). Registers the liveness row and starts the heartbeat.
    ///
    /// ```
    /// let emulator = hbase_emulator::start_local()?;
    /// let hbase = percolator::HBaseClient::connect(
    ///     percolator::HBaseConfig::new(emulator.local_addr().to_string()),
    /// )?;
    /// percolator::txn::setup::create_liveness_table(&hbase, &Default::default())?;
    /// tokio::runtime::Runtime::new()?.block_on(async move {
    ///     let tso = std::sync::Arc::new(percolator::LocalTimestamps::new());
    ///     let client =
    ///         percolator::AsyncClient::new(std::sync::Arc::new(hbase), tso, Default::default()).await?;
    ///     client.shutdown().await;
    ///     Ok::<(), percolator::Error>(())
    /// })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn new(
        store: Arc<dyn HBaseAccess>,
        tso: Arc<dyn TimestampSource>,
        options: TxnOptions,
    ) -> Result<AsyncClient> {
        Self::on_runtime(store, tso, options, crate::runtime::ambient_or_io()?).await
    }

    pub(crate) async fn on_runtime(
        store: Arc<dyn HBaseAccess>,
        tso: Arc<dyn TimestampSource>,
        options: TxnOptions,
        runtime: tokio::runtime::Handle,
    ) -> Result<AsyncClient> {
        let owner = format!(
            "{}-{}-{}",
            hostname(),
            std::process::id(),
            uuid::Uuid::new_v4()
        );
        let liveness = Liveness::new(options.liveness.clone(), owner);
        // The first liveness row, written before any lock can name it: a client replaced after
        // a crash writes it while the table's region may be moving.
        until_settled(options.start_timeout, || {
            liveness.refresh(store.as_ref(), options.clock.now_ms(), None)
        })
        .await?;
        let ctx = Arc::new(Context::new(store, tso, options, liveness, runtime));
        let heartbeat = Heartbeat::start(&ctx);
        Ok(AsyncClient {
            shared: Arc::new(Shared {
                ctx,
                heartbeat: Mutex::new(Some(heartbeat)),
                shut_down: AtomicBool::new(false),
            }),
            handles: Arc::new(()),
        })
    }

    /// Connects to an HBase Thrift2 gateway and a timestamp oracle (a fail-over list of
    /// addresses), creating the liveness table if it is missing. The gateway's reports of a
    /// region in transition (a move, a split, a crashed server) are waited out for up to the
    /// config's `read_timeout`; an unreachable gateway or oracle fails at once.
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let rt = tokio::runtime::Runtime::new()?;
    /// # rt.block_on(async {
    /// # let client = percolator::AsyncClient::connect(hbase, &oracles, Default::default()).await?;
    /// assert!(!client.is_dead());
    /// # client.shutdown().await;
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn connect(
        hbase: HBaseConfig,
        oracle_addrs: &[String],
        options: TxnOptions,
    ) -> Result<AsyncClient> {
        // A service starting while a region of the liveness table moves (a split, a balancer
        // run, a crashed server) must not fail: its HBase steps are retried while what they
        // meet clears by itself, within the start timeout.
        let budget = options.start_timeout;
        let hbase = Arc::new(AsyncHBaseClient::connect(hbase).await?);
        let tso: Arc<dyn TimestampSource> =
            Arc::new(OracleClient::connect_async(oracle_addrs, options.oracle.clone()).await?);
        until_settled(budget, || {
            let (admin, config) = (hbase.blocking(), options.liveness.clone());
            async move {
                // Once per client, at start: the admin calls may stay blocking.
                tokio::task::spawn_blocking(move || {
                    crate::txn::setup::create_liveness_table_once(&admin, &config)
                })
                .await
                .map_err(|_| Error::Shutdown)?
            }
        })
        .await?;
        Self::new(hbase, tso, options).await
    }

    /// What this client's transactions share (GC resolves locks through it, observer runs read
    /// raw cells through it).
    pub(crate) fn ctx(&self) -> &Arc<Context> {
        &self.shared.ctx
    }

    /// The runtime this client's connections and background tasks run on.
    pub(crate) fn runtime(&self) -> &tokio::runtime::Handle {
        self.shared.ctx.background().runtime()
    }

    /// True for the last user handle of this client (clones and blocking wrappers count).
    pub(crate) fn is_last_handle(&self) -> bool {
        Arc::strong_count(&self.handles) == 1
    }

    /// This client's liveness id, stored in every lock it takes.
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let rt = tokio::runtime::Runtime::new()?;
    /// # rt.block_on(async {
    /// # let client = percolator::AsyncClient::connect(hbase, &oracles, Default::default()).await?;
    /// assert!(!client.owner_id().is_empty());
    /// # client.shutdown().await;
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn owner_id(&self) -> &str {
        self.shared.ctx.liveness().owner()
    }

    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let rt = tokio::runtime::Runtime::new()?;
    /// # rt.block_on(async {
    /// # let client = percolator::AsyncClient::connect(hbase, &oracles, Default::default()).await?;
    /// assert!(!client.options().sync_secondaries());
    /// # client.shutdown().await;
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn options(&self) -> &TxnOptions {
        self.shared.ctx.opts()
    }

    /// Starts a transaction. Its snapshot is taken after this call, by its first operation
    /// (the timestamp travels with that operation's round trip, not ahead of it).
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let rt = tokio::runtime::Runtime::new()?;
    /// # rt.block_on(async {
    /// # let client = percolator::AsyncClient::connect(hbase, &oracles, Default::default()).await?;
    /// let mut txn = client.begin().await?;
    /// txn.set("t", "row", "f", "q", b"v".to_vec())?;
    /// txn.commit().await?;
    /// # client.shutdown().await;
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn begin(&self) -> Result<AsyncTransaction> {
        self.begin_now()
    }

    pub(crate) fn begin_now(&self) -> Result<AsyncTransaction> {
        if self.shared.ctx.is_dead() || self.shared.shut_down.load(Ordering::SeqCst) {
            return Err(Error::Shutdown);
        }
        Ok(AsyncTransaction::new(Session::new(self.shared.ctx.clone())))
    }

    /// A read-only transaction whose snapshot is `ts` (an earlier commit timestamp, say):
    /// reads see exactly what was committed at or below it. Writes are refused.
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let rt = tokio::runtime::Runtime::new()?;
    /// # rt.block_on(async {
    /// # let client = percolator::AsyncClient::connect(hbase, &oracles, Default::default()).await?;
    /// let first = client.begin().await?;
    /// let ts = first.start_ts().await?;
    /// client.run(async |txn| txn.set("t", "row", "f", "q", b"new".to_vec())).await?;
    /// let old = client.snapshot(ts)?;
    /// assert_eq!(old.get("t", "row", "f", "q").await?, None, "the write came after ts");
    /// # client.shutdown().await;
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn snapshot(&self, ts: u64) -> Result<AsyncTransaction> {
        if self.shared.ctx.is_dead() {
            return Err(Error::Shutdown);
        }
        Ok(AsyncTransaction::read_only_at(
            Session::new(self.shared.ctx.clone()),
            ts,
        ))
    }

    /// Runs `body` in a transaction and commits it, retrying with backoff while the error is
    /// classified `Retry` (conflicts, live locks, transient I/O); stops on `Fatal` and
    /// `Undetermined` errors and after `retry.max_attempts`. No thread is held while it waits.
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let rt = tokio::runtime::Runtime::new()?;
    /// # rt.block_on(async {
    /// # let client = percolator::AsyncClient::connect(hbase, &oracles, Default::default()).await?;
    /// let n = client
    ///     .run(async |txn| {
    ///         let n = txn.get("t", "counter", "f", "q").await?.map_or(0, |v| v.len());
    ///         txn.set("t", "counter", "f", "q", vec![b'x'; n + 1])?;
    ///         Ok(n + 1)
    ///     })
    ///     .await?;
    /// assert_eq!(n, 1);
    /// # client.shutdown().await;
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// The body borrows what it needs (the caller's locals, a shared counter), and the future
    /// `run` returns is `Send` whenever the body's is, so a request handler that calls it can
    /// be spawned:
    ///
    /// ```
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let oracle = percolator::OracleServer::start_local(percolator::oracle::MemoryStore::new())?;
    /// # let hbase = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// # let admin = percolator::HBaseClient::connect(hbase.clone())?;
    /// # percolator::txn::setup::create_table(&admin, &Default::default(), "accounts", &["f"])?;
    /// # let oracles = [oracle.local_addr().to_string()];
    /// # let rt = tokio::runtime::Runtime::new()?;
    /// # rt.block_on(async {
    /// # let client = percolator::AsyncClient::connect(hbase, &oracles, Default::default()).await?;
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use std::sync::Arc;
    ///
    /// let transfers = Arc::new(AtomicU64::new(0));
    /// let handler = tokio::spawn({
    ///     let (client, transfers) = (client.clone(), Arc::clone(&transfers));
    ///     async move {
    ///         let (from, to, amount) = ("alice".to_string(), "bob".to_string(), 10);
    ///         client
    ///             .run(async |txn| {
    ///                 txn.set("accounts", &from, "f", "balance", (100 - amount).to_string())?;
    ///                 txn.set("accounts", &to, "f", "balance", amount.to_string())?;
    ///                 transfers.fetch_add(1, Ordering::Relaxed);
    ///                 Ok(())
    ///             })
    ///             .await
    ///     }
    /// });
    /// handler.await.expect("the handler panicked")?;
    /// assert_eq!(transfers.load(Ordering::Relaxed), 1);
    /// # client.shutdown().await;
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Why the body is bounded by [`TxnBody`] as well as `AsyncFnMut`
    ///
    /// With an `AsyncFnMut` bound alone, a spawned task like the one above fails to compile on
    /// stable Rust: "implementation of `Send` is not general enough", naming `&AsyncClient`,
    /// `&RetryPolicy` or the closure's captures. An `AsyncFnMut` call returns a future that
    /// borrows the closure itself, for a lifetime the compiler's `Send` check of the task
    /// treats as "any lifetime", and it cannot relate that lifetime to the closure's own
    /// borrows (rust-lang/rust#134997; a nightly compiler with `-Zhigher-ranked-assumptions`
    /// proves it). Nor can a bound say the future is `Send`: stable Rust cannot name it. So
    /// `run` calls the body as an `FnMut` returning a future that [`TxnBody`] names, which the
    /// check proves `Send` from the concrete types; the `AsyncFnMut` bound remains only so
    /// that the closure's argument type is inferred.
    ///
    /// The price: the body's future must not borrow from the closure itself. Write
    /// `async |txn|`, not `async move |txn|` (a `move` closure owns its captures, and its
    /// future would borrow them), and do not assign to captured variables: count with an
    /// atomic, or return the value as `T`. The compiler reports such a body as "async closure
    /// does not implement `FnMut` because it captures state from its environment". An
    /// `async fn(&mut AsyncTransaction) -> Result<T>` is a body too.
    pub async fn run<T, F>(&self, mut body: F) -> Result<T>
    where
        F: AsyncFnMut(&mut AsyncTransaction) -> Result<T> + for<'t> TxnBody<'t, T>,
    {
        let mut attempts = Attempts::new(&self.shared.ctx.opts().retry);
        loop {
            let result = async {
                let mut txn = self.begin_now()?;
                let value = call(&mut body, &mut txn).await?;
                txn.commit().await?;
                Ok(value)
            }
            .await;
            match attempts.after(result) {
                Ok(done) => return done,
                Err(pause) => tokio::time::sleep(pause).await,
            }
        }
    }

    /// Whether the transaction that started at `start_ts` with primary `primary` committed:
    /// `Some(commit_ts)`, or `None` when it is rolled back or not (yet) committed. Resolves the
    /// primary if its owner is gone, so the answer is final unless the owner is alive. Below
    /// the GC safe point the record may have been collected: `None` there is
    /// `SnapshotTooOld` instead, never a guess.
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let rt = tokio::runtime::Runtime::new()?;
    /// # rt.block_on(async {
    /// # let client = percolator::AsyncClient::connect(hbase, &oracles, Default::default()).await?;
    /// let mut txn = client.begin().await?;
    /// txn.set("t", "row", "f", "q", b"v".to_vec())?;
    /// let start_ts = txn.start_ts().await?;
    /// let commit_ts = txn.commit().await?;
    /// let primary = percolator::CellKey::new("t", "row", "f", "q")?;
    /// assert_eq!(client.transaction_status(&primary, start_ts).await?, Some(commit_ts));
    /// # client.shutdown().await;
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn transaction_status(
        &self,
        primary: &CellKey,
        start_ts: u64,
    ) -> Result<Option<u64>> {
        let session = Session::new(self.shared.ctx.clone());
        let status = LockResolver::new(&session)
            .settle_transaction(primary, start_ts)
            .await?;
        if status.is_none() {
            safe_point::check_snapshot(&self.shared.ctx, start_ts).await?;
        }
        Ok(status)
    }

    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let rt = tokio::runtime::Runtime::new()?;
    /// # rt.block_on(async {
    /// # let client = percolator::AsyncClient::connect(hbase, &oracles, Default::default()).await?;
    /// client.run(async |txn| txn.set("t", "row", "f", "q", b"v".to_vec())).await?;
    /// assert_eq!(client.stats().committed, 1);
    /// # client.shutdown().await;
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stats(&self) -> ClientStats {
        self.shared.ctx.stats().snapshot()
    }

    /// Waits for background secondary commits to finish.
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let rt = tokio::runtime::Runtime::new()?;
    /// # rt.block_on(async {
    /// # let client = percolator::AsyncClient::connect(hbase, &oracles, Default::default()).await?;
    /// client
    ///     .run(async |txn| {
    ///         txn.set("t", "a", "f", "q", b"1".to_vec())?;
    ///         txn.set("t", "b", "f", "q", b"1".to_vec())
    ///     })
    ///     .await?;
    /// client.drain().await; // b's commit record is written now
    /// # client.shutdown().await;
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn drain(&self) {
        self.shared.ctx.background().drain().await;
    }

    /// Clean shutdown: drains background commits, stops the heartbeat, removes the liveness
    /// row (a killed client leaves it to expire). Idempotent.
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let rt = tokio::runtime::Runtime::new()?;
    /// # rt.block_on(async {
    /// # let client = percolator::AsyncClient::connect(hbase, &oracles, Default::default()).await?;
    /// client.shutdown().await;
    /// assert!(client.begin().await.is_err());
    /// # client.shutdown().await;
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn shutdown(&self) {
        self.shared.shutdown().await
    }

    /// Simulates a crash: the client stops on the spot, leaving its locks and letting its
    /// liveness row expire.
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let rt = tokio::runtime::Runtime::new()?;
    /// # rt.block_on(async {
    /// # let client = percolator::AsyncClient::connect(hbase, &oracles, Default::default()).await?;
    /// client.kill();
    /// assert!(client.is_dead());
    /// # client.shutdown().await;
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(feature = "testing")]
    pub fn kill(&self) {
        self.shared.ctx.die();
        if let Some(heartbeat) = self.shared.heartbeat.lock().as_ref() {
            heartbeat.signal_stop();
        }
    }

    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let rt = tokio::runtime::Runtime::new()?;
    /// # rt.block_on(async {
    /// # let client = percolator::AsyncClient::connect(hbase, &oracles, Default::default()).await?;
    /// assert!(!client.is_dead());
    /// # client.shutdown().await;
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_dead(&self) -> bool {
        self.shared.ctx.is_dead()
    }
}

/// The body [`AsyncClient::run`] takes: called with the transaction, it returns a future of
/// the result. Every `async |txn| { ... }` closure whose future does not borrow from the
/// closure itself is one (see `run`), and so is an `async fn(&mut AsyncTransaction) ->
/// Result<T>` or a closure returning a boxed future; there is nothing to implement.
///
/// Unlike `AsyncFnMut`, it names the future one call returns ([`Future`](Self::Future)),
/// which is what lets a task calling `run` be proven `Send` (see [`AsyncClient::run`]). Name
/// it to pass a body on:
///
/// ```
/// use percolator::txn::TxnBody;
/// use percolator::{AsyncClient, AsyncTransaction, Result};
///
/// async fn run_logged<T, F>(client: &AsyncClient, body: F) -> Result<T>
/// where
///     F: AsyncFnMut(&mut AsyncTransaction) -> Result<T> + for<'t> TxnBody<'t, T>,
/// {
///     let result = client.run(body).await;
///     if let Err(e) = &result {
///         eprintln!("transaction failed: {e}");
///     }
///     result
/// }
///
/// async fn touch(txn: &mut AsyncTransaction) -> Result<()> {
///     txn.set("t", "row", "f", "q", b"v".to_vec())
/// }
///
/// fn spawn_handler(client: AsyncClient) -> tokio::task::JoinHandle<Result<()>> {
///     tokio::spawn(async move { run_logged(&client, touch).await })
/// }
/// ```
pub trait TxnBody<'t, T>:
    FnMut(&'t mut AsyncTransaction) -> <Self as TxnBody<'t, T>>::Future
{
    /// The future one call returns.
    type Future: std::future::Future<Output = Result<T>>;
}

impl<'t, T, F, Fut> TxnBody<'t, T> for F
where
    F: FnMut(&'t mut AsyncTransaction) -> Fut,
    Fut: std::future::Future<Output = Result<T>>,
{
    type Future = Fut;
}

/// Calls `body` as an `FnMut`, whose future's type `TxnBody` names, rather than as an
/// `AsyncFnMut`, whose future borrows `body` (see `AsyncClient::run`).
fn call<'t, T, F: TxnBody<'t, T>>(body: &mut F, txn: &'t mut AsyncTransaction) -> F::Future {
    body(txn)
}

/// The retry loop of `run`, shared by the async and the blocking API.
pub(crate) struct Attempts<'p> {
    policy: &'p RetryPolicy,
    attempt: u32,
}

impl<'p> Attempts<'p> {
    pub fn new(policy: &'p RetryPolicy) -> Self {
        Attempts { policy, attempt: 0 }
    }

    /// The final result, or how long to pause before the next attempt.
    pub fn after<T>(
        &mut self,
        result: Result<T>,
    ) -> std::result::Result<Result<T>, std::time::Duration> {
        match result {
            Err(e)
                if e.retry_class() == RetryClass::Retry
                    && self.attempt + 1 < self.policy.max_attempts =>
            {
                tracing::debug!(attempt = self.attempt, error = %e, "retrying transaction");
                crate::metrics::count(crate::metrics::key!(crate::metrics::RETRIES));
                let pause = self.policy.backoff(self.attempt);
                self.attempt += 1;
                Err(pause)
            }
            other => Ok(other),
        }
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "host".into())
}
