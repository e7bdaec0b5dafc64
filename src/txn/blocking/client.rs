//! The blocking client.

use std::sync::Arc;

use tokio::runtime::Handle;

use crate::error::Result;
use crate::hbase::HBaseConfig;
use crate::key::CellKey;
use crate::oracle::TimestampSource;
use crate::runtime::wait as block_on;
use crate::txn::client::{AsyncClient, Attempts};
use crate::txn::options::TxnOptions;
use crate::txn::stats::ClientStats;
use crate::txn::store::HBaseAccess;
use crate::txn::transaction::AsyncTransaction;

use super::transaction::Transaction;

/// A transactional client for threaded code. Cheap to clone; clones share connections, the
/// heartbeat and the liveness row. Dropping the last clone shuts it down like
/// [`Client::shutdown`].
///
/// ```no_run
/// use percolator::{Client, HBaseConfig, TxnOptions};
/// let client = Client::connect(
///     HBaseConfig::new("127.0.0.1:9090"),
///     &["127.0.0.1:7070".to_string()],
///     TxnOptions::default(),
/// )?;
/// client.run(|txn| txn.set("accounts", "bob", "f", "balance", b"5".to_vec()))?;
/// # Ok::<(), percolator::Error>(())
/// ```
#[derive(Clone)]
pub struct Client {
    inner: AsyncClient,
    runtime: Handle,
}

impl Drop for Client {
    fn drop(&mut self) {
        if self.inner.is_last_handle() {
            self.shutdown();
        }
    }
}

impl Client {
    /// Builds a client over any HBase access and timestamp source (production: `HBaseClient`
    /// and `OracleClient`). Registers the liveness row and starts the heartbeat.
    ///
    /// ```
    /// let emulator = hbase_emulator::start_local()?;
    /// let hbase = percolator::HBaseClient::connect(
    ///     percolator::HBaseConfig::new(emulator.local_addr().to_string()),
    /// )?;
    /// percolator::txn::setup::create_liveness_table(&hbase, &Default::default())?;
    /// let tso = std::sync::Arc::new(percolator::LocalTimestamps::new());
    /// let client = percolator::Client::new(std::sync::Arc::new(hbase), tso, Default::default())?;
    /// assert!(!client.is_dead());
    /// # client.shutdown();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(
        store: Arc<dyn HBaseAccess>,
        tso: Arc<dyn TimestampSource>,
        options: TxnOptions,
    ) -> Result<Client> {
        let runtime = crate::runtime::ambient_or_io()?;
        let inner = block_on(
            &runtime,
            AsyncClient::on_runtime(store, tso, options, runtime.clone()),
        )?;
        Ok(Client { inner, runtime })
    }

    /// Connects to an HBase Thrift2 gateway and a timestamp oracle (a fail-over list of
    /// addresses), creating the liveness table if it is missing; as
    /// [`AsyncClient::connect`], it waits out a region of that table in transition.
    pub fn connect(
        hbase: HBaseConfig,
        oracle_addrs: &[String],
        options: TxnOptions,
    ) -> Result<Client> {
        let runtime = crate::runtime::ambient_or_io()?;
        let inner = block_on(&runtime, AsyncClient::connect(hbase, oracle_addrs, options))?;
        Ok(Client { inner, runtime })
    }

    /// The async client this one wraps (same connections, heartbeat and liveness row).
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let client = percolator::Client::connect(hbase, &oracles, Default::default())?;
    /// let same = client.asynchronous();
    /// assert_eq!(same.owner_id(), client.owner_id());
    /// # client.shutdown();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn asynchronous(&self) -> AsyncClient {
        self.inner.clone()
    }

    /// This client's liveness id, stored in every lock it takes.
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let client = percolator::Client::connect(hbase, &oracles, Default::default())?;
    /// assert!(!client.owner_id().is_empty());
    /// # client.shutdown();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn owner_id(&self) -> &str {
        self.inner.owner_id()
    }

    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let client = percolator::Client::connect(hbase, &oracles, Default::default())?;
    /// assert!(client.options().lock_ttl() > std::time::Duration::ZERO);
    /// # client.shutdown();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn options(&self) -> &TxnOptions {
        self.inner.options()
    }

    /// Starts a transaction. Its snapshot is taken after this call, by its first operation.
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let client = percolator::Client::connect(hbase, &oracles, Default::default())?;
    /// let mut txn = client.begin()?;
    /// txn.set("t", "row", "f", "q", b"v".to_vec())?;
    /// txn.commit()?;
    /// # client.shutdown();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn begin(&self) -> Result<Transaction> {
        Ok(self.wrap(self.inner.begin_now()?))
    }

    /// A read-only transaction whose snapshot is `ts`; see [`AsyncClient::snapshot`].
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let client = percolator::Client::connect(hbase, &oracles, Default::default())?;
    /// let before = client.run(|txn| txn.set("t", "row", "f", "q", b"1".to_vec()).map(|_| ()))?;
    /// let first = client.begin()?;
    /// let ts = first.start_ts()?;
    /// client.run(|txn| txn.set("t", "row", "f", "q", b"2".to_vec()))?;
    /// let old = client.snapshot(ts)?;
    /// assert_eq!(old.get("t", "row", "f", "q")?, Some(b"1".to_vec()));
    /// # let _ = before;
    /// # client.shutdown();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn snapshot(&self, ts: u64) -> Result<Transaction> {
        Ok(self.wrap(self.inner.snapshot(ts)?))
    }

    fn wrap(&self, inner: AsyncTransaction) -> Transaction {
        Transaction::new(inner, self.runtime.clone())
    }

    /// Runs `body` in a transaction and commits it, retrying with backoff while the error is
    /// classified `Retry` (conflicts, live locks, transient I/O); stops on `Fatal` and
    /// `Undetermined` errors and after `retry.max_attempts`.
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let client = percolator::Client::connect(hbase, &oracles, Default::default())?;
    /// let moved = client.run(|txn| {
    ///     let n = txn.get("t", "counter", "f", "q")?.map_or(0, |v| v.len());
    ///     txn.set("t", "counter", "f", "q", vec![b'x'; n + 1])?;
    ///     Ok(n + 1)
    /// })?;
    /// assert_eq!(moved, 1);
    /// # client.shutdown();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn run<T>(&self, mut body: impl FnMut(&mut Transaction) -> Result<T>) -> Result<T> {
        let mut attempts = Attempts::new(&self.options().retry);
        loop {
            let result = self.begin().and_then(|mut txn| {
                let value = body(&mut txn)?;
                txn.commit()?;
                Ok(value)
            });
            match attempts.after(result) {
                Ok(done) => return done,
                Err(pause) => std::thread::sleep(pause),
            }
        }
    }

    /// See [`AsyncClient::transaction_status`].
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let client = percolator::Client::connect(hbase, &oracles, Default::default())?;
    /// let mut txn = client.begin()?;
    /// txn.set("t", "row", "f", "q", b"v".to_vec())?;
    /// let start_ts = txn.start_ts()?;
    /// let commit_ts = txn.commit()?;
    /// let primary = percolator::CellKey::new("t", "row", "f", "q")?;
    /// assert_eq!(client.transaction_status(&primary, start_ts)?, Some(commit_ts));
    /// # client.shutdown();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn transaction_status(&self, primary: &CellKey, start_ts: u64) -> Result<Option<u64>> {
        block_on(
            &self.runtime,
            self.inner.transaction_status(primary, start_ts),
        )
    }

    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let client = percolator::Client::connect(hbase, &oracles, Default::default())?;
    /// client.run(|txn| txn.set("t", "row", "f", "q", b"v".to_vec()))?;
    /// assert_eq!(client.stats().committed, 1);
    /// # client.shutdown();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stats(&self) -> ClientStats {
        self.inner.stats()
    }

    /// Waits for background secondary commits to finish.
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let client = percolator::Client::connect(hbase, &oracles, Default::default())?;
    /// client.run(|txn| {
    ///     txn.set("t", "a", "f", "q", b"1".to_vec())?;
    ///     txn.set("t", "b", "f", "q", b"1".to_vec())
    /// })?;
    /// client.drain(); // b's commit record is written now, not just its primary's
    /// # client.shutdown();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn drain(&self) {
        block_on(&self.runtime, self.inner.drain())
    }

    /// Clean shutdown: drains background commits, stops the heartbeat, removes the liveness
    /// row (a killed client leaves it to expire). Idempotent.
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let client = percolator::Client::connect(hbase, &oracles, Default::default())?;
    /// client.shutdown();
    /// assert!(client.begin().is_err(), "a shut-down client starts nothing");
    /// # client.shutdown();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn shutdown(&self) {
        block_on(&self.runtime, self.inner.shutdown())
    }

    /// Simulates a crash: the client stops on the spot, leaving its locks and letting its
    /// liveness row expire.
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let client = percolator::Client::connect(hbase, &oracles, Default::default())?;
    /// client.kill();
    /// assert!(client.is_dead());
    /// # client.shutdown();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(feature = "testing")]
    pub fn kill(&self) {
        self.inner.kill()
    }

    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let client = percolator::Client::connect(hbase, &oracles, Default::default())?;
    /// assert!(!client.is_dead());
    /// # client.shutdown();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_dead(&self) -> bool {
        self.inner.is_dead()
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("owner", &self.owner_id())
            .finish()
    }
}
