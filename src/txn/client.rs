//! `Client`: the entry point. Owns the HBase access, the timestamp source, the worker pool, the
//! liveness row and its keeper thread.

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::error::{Error, Result, RetryClass};
use crate::hbase::{HBaseClient, HBaseConfig};
use crate::oracle::{ClientConfig as OracleConfig, OracleClient, TimestampSource};
use crate::txn::access::HBaseAccess;
use crate::txn::executor::Executor;
use crate::txn::keeper;
use crate::txn::key::CellKey;
use crate::txn::liveness::Liveness;
use crate::txn::options::TxnOptions;
use crate::txn::session::{ClientStats, Inner, Session, Stats};
use crate::txn::transaction::Transaction;

/// A transactional client. Cheap to clone; clones share connections, threads and liveness.
/// Dropping the last clone shuts it down like [`Client::shutdown`].
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
    /// Counts user handles only (transactions and background jobs also hold `inner`).
    handles: Arc<()>,
}

impl Drop for Client {
    fn drop(&mut self) {
        if Arc::strong_count(&self.handles) == 1 {
            self.shutdown();
        }
    }
}

impl Client {
    /// Builds a client over any HBase access and timestamp source (production: `HBaseClient`
    /// and `OracleClient`). Registers the liveness row and starts the keeper thread.
    pub fn new(
        store: Arc<dyn HBaseAccess>,
        tso: Arc<dyn TimestampSource>,
        options: TxnOptions,
    ) -> Result<Client> {
        let owner = format!(
            "{}-{}-{:016x}",
            hostname(),
            std::process::id(),
            rand::random::<u64>()
        );
        let liveness = Liveness::new(options.liveness.clone(), owner);
        liveness.refresh(store.as_ref(), options.clock.now_ms())?;
        let inner = Arc::new(Inner {
            executor: Executor::new(),
            store,
            tso,
            liveness,
            opts: options,
            stats: Stats::default(),
            checked_tables: parking_lot::RwLock::new(HashMap::new()),
            primaries: Mutex::new(HashMap::new()),
            dead: AtomicBool::new(false),
            keeper: Mutex::new(None),
            backlog: Default::default(),
        });
        let handle =
            keeper::start(&inner).map_err(|e| Error::io("starting the keeper thread", e))?;
        *inner.keeper.lock() = Some(handle);
        Ok(Client {
            inner,
            handles: Arc::new(()),
        })
    }

    /// Connects to an HBase Thrift2 gateway and a timestamp oracle (a fail-over list of
    /// addresses), creating the liveness table if it is missing.
    pub fn connect(
        hbase: HBaseConfig,
        oracle_addrs: &[String],
        options: TxnOptions,
    ) -> Result<Client> {
        let hbase = HBaseClient::connect(hbase)?;
        crate::txn::setup::create_liveness_table(&hbase, &options.liveness)?;
        let tso = OracleClient::connect(oracle_addrs, OracleConfig::default())?;
        Client::new(Arc::new(hbase), Arc::new(tso), options)
    }

    /// This client's liveness id, stored in every lock it takes.
    pub fn owner_id(&self) -> &str {
        self.inner.liveness.owner()
    }

    pub fn options(&self) -> &TxnOptions {
        &self.inner.opts
    }

    /// Starts a transaction. Its snapshot is taken after this call, by its first operation
    /// (see [`Transaction`]).
    pub fn begin(&self) -> Result<Transaction> {
        if self.inner.is_dead() {
            return Err(Error::Shutdown);
        }
        Ok(Transaction::new(Session::new(self.inner.clone())))
    }

    /// Runs `body` in a transaction and commits it, retrying with backoff while the error is
    /// classified `Retry` (conflicts, live locks, transient I/O); stops on `Fatal` and
    /// `Undetermined` errors and after `retry.max_attempts`.
    pub fn run<T>(&self, mut body: impl FnMut(&mut Transaction) -> Result<T>) -> Result<T> {
        let policy = &self.inner.opts.retry;
        let mut attempt = 0;
        loop {
            let result = self.begin().and_then(|mut txn| {
                let value = body(&mut txn)?;
                txn.commit()?;
                Ok(value)
            });
            match result {
                Err(e)
                    if e.retry_class() == RetryClass::Retry
                        && attempt + 1 < policy.max_attempts =>
                {
                    tracing::debug!(attempt, error = %e, "retrying transaction");
                    std::thread::sleep(policy.backoff(attempt));
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    /// Whether the transaction that started at `start_ts` with primary `primary` committed:
    /// `Some(commit_ts)`, or `None` when it is rolled back or not (yet) committed. Resolves the
    /// primary if its owner is gone, so the answer is final unless the owner is alive.
    pub fn transaction_status(&self, primary: &CellKey, start_ts: u64) -> Result<Option<u64>> {
        Session::new(self.inner.clone()).settle_transaction(primary, start_ts)
    }

    pub fn stats(&self) -> ClientStats {
        self.inner.stats.snapshot()
    }

    /// Waits for background secondary commits to finish.
    pub fn drain(&self) {
        self.inner.executor.drain();
    }

    /// Clean shutdown: drains background commits, stops the keeper, removes the liveness row
    /// (a killed client leaves it to expire). Idempotent.
    pub fn shutdown(&self) {
        self.inner.executor.drain();
        self.inner.stop_keeper(!self.inner.is_dead());
        self.inner.executor.shutdown();
    }

    /// Simulates a crash: the client stops on the spot, leaving its locks and letting its
    /// liveness row expire (used by tests and the demo).
    pub fn kill(&self) {
        self.inner.die();
    }

    pub fn is_dead(&self) -> bool {
        self.inner.is_dead()
    }

    /// An async facade for tokio code; the blocking work runs on tokio's blocking pool.
    pub fn asynchronous(&self) -> AsyncClient {
        AsyncClient {
            client: self.clone(),
        }
    }
}

/// Async use from tokio: each call runs the blocking protocol on `spawn_blocking`, so the
/// runtime's worker threads never wait on HBase.
#[derive(Clone)]
pub struct AsyncClient {
    client: Client,
}

impl AsyncClient {
    /// `Client::run` without blocking the runtime.
    pub async fn run<T, F>(&self, body: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnMut(&mut Transaction) -> Result<T> + Send + 'static,
    {
        let client = self.client.clone();
        tokio::task::spawn_blocking(move || client.run(body))
            .await
            .map_err(|e| {
                Error::io(
                    "transaction task failed",
                    std::io::Error::other(e.to_string()),
                )
            })?
    }

    /// A snapshot read of one cell in its own read-only transaction.
    pub async fn get(&self, key: CellKey) -> Result<Option<Vec<u8>>> {
        self.run(move |txn| Ok(txn.get_many(std::slice::from_ref(&key))?.pop().flatten()))
            .await
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "host".into())
}
