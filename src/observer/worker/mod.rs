//! The observer worker: tasks on the client's runtime that hold partition leases, scan the
//! notifications of the tables they observe, run the observers on the rows of the partitions
//! they hold and clear what they covered. A failed run is
//! retried with exponential backoff, never dropped; `shutdown` drains every task, and a drop
//! stops them without waiting.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::error::{Error, Result, RetryClass};
use crate::observer::lease::Partition;
use crate::observer::model::{check_observer_name, ObservedColumn};
use crate::observer::registry::{pending_rows, register};
use crate::observer::run::{Observer, WorkerCrash};
use crate::txn::timestamps;
use crate::txn::until_settled;
use crate::AsyncClient;

mod tasks;

/// The observers a worker runs, one per observed column.
///
/// ```
/// # use percolator::observer::{ObservedColumn, Observer, ObserverSet};
/// # struct Nop;
/// # #[percolator::observer::async_trait]
/// # impl Observer for Nop {
/// #     async fn process(&self, _: &mut percolator::AsyncTransaction, _: &[u8], _: &ObservedColumn) -> percolator::Result<()> { Ok(()) }
/// # }
/// let set = ObserverSet::new().observe(ObservedColumn::new("docs", "f", "content"), "indexer", Nop)?;
/// assert_eq!(set.columns().len(), 1);
/// # Ok::<(), percolator::Error>(())
/// ```
#[derive(Clone, Default)]
pub struct ObserverSet {
    observers: BTreeMap<ObservedColumn, (String, Arc<dyn Observer>)>,
}

impl ObserverSet {
    /// ```
    /// assert!(percolator::observer::ObserverSet::new().columns().is_empty());
    /// ```
    pub fn new() -> ObserverSet {
        ObserverSet::default()
    }

    /// Adds `observer`, named `name` (the name keys its acknowledgments), for `column`.
    /// A column has one observer: a second is an `IllegalArgument` error.
    ///
    /// ```
    /// # use percolator::observer::{ObservedColumn, Observer, ObserverSet};
    /// # struct Nop;
    /// # #[percolator::observer::async_trait]
    /// # impl Observer for Nop {
    /// #     async fn process(&self, _: &mut percolator::AsyncTransaction, _: &[u8], _: &ObservedColumn) -> percolator::Result<()> { Ok(()) }
    /// # }
    /// let col = ObservedColumn::new("docs", "f", "content");
    /// let set = ObserverSet::new().observe(col.clone(), "a", Nop)?;
    /// assert!(set.observe(col, "b", Nop).is_err());
    /// # Ok::<(), percolator::Error>(())
    /// ```
    pub fn observe(
        mut self,
        column: ObservedColumn,
        name: &str,
        observer: impl Observer,
    ) -> Result<ObserverSet> {
        check_observer_name(name)?;
        if self.observers.contains_key(&column) {
            return Err(Error::IllegalArgument {
                message: format!("{column} already has an observer"),
            });
        }
        self.observers
            .insert(column, (name.to_string(), Arc::new(observer)));
        Ok(self)
    }

    /// The observed columns.
    ///
    /// ```
    /// assert!(percolator::observer::ObserverSet::new().columns().is_empty());
    /// ```
    pub fn columns(&self) -> Vec<ObservedColumn> {
        self.observers.keys().cloned().collect()
    }

    fn tables(&self) -> BTreeSet<String> {
        self.observers.keys().map(|c| c.table.clone()).collect()
    }
}

/// How a worker runs.
///
/// ```
/// let config = percolator::observer::WorkerConfig::default();
/// assert!(config.scanners >= 1 && config.partitions >= 1);
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct WorkerConfig {
    /// Scanning tasks; each runs up to `concurrency` observer transactions at once.
    pub scanners: usize,
    pub concurrency: usize,
    /// Partitions per table: buckets of a hash of the row key, so keys that share a prefix
    /// spread over every worker. Workers of one table should agree on it.
    pub partitions: usize,
    /// A lease not renewed for this long is taken over by another worker. Leases are renewed
    /// every third of it.
    pub lease_ttl: Duration,
    /// A worker whose row (`obs-hash-worker/<table>/<id>`) has not been refreshed for this long is
    /// dead: it no longer counts as live, and its leases are taken over at once, before they
    /// expire. Workers refresh their rows, count the live ones and rebalance every quarter of
    /// it (the lease round), so a killed worker's partitions move within `worker_ttl` plus one
    /// round. A worker stalled for longer (a long pause, HBase unavailable) may lose its
    /// partitions to the others; it gives them up at its next renewal, and the overlap is safe.
    pub worker_ttl: Duration,
    /// Rows per scan page.
    pub scan_rows: i32,
    /// Pause after a scan round that found nothing, doubled up to `max_idle`.
    pub min_idle: Duration,
    pub max_idle: Duration,
    /// Backoff of a failed run: `retry_base * 2^attempts`, at most `retry_max`.
    pub retry_base: Duration,
    pub retry_max: Duration,
    /// How long [`ObserverWorker::start`] waits out a region in transition (a move, a split,
    /// a crashed server) while it registers its columns and joins the lease round: a worker
    /// started or replaced at that moment starts late instead of failing.
    pub start_timeout: Duration,
    /// Makes the worker die at a seam (tests, the demo's kills; feature `testing`).
    pub(crate) crash: Option<WorkerCrash>,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            scanners: 8,
            concurrency: 16,
            partitions: 16,
            lease_ttl: Duration::from_secs(10),
            worker_ttl: Duration::from_secs(1),
            scan_rows: 256,
            min_idle: Duration::from_millis(5),
            max_idle: Duration::from_millis(50),
            retry_base: Duration::from_millis(10),
            retry_max: Duration::from_secs(2),
            start_timeout: Duration::from_secs(30),
            crash: None,
        }
    }
}

impl WorkerConfig {
    /// ```
    /// let c = percolator::observer::WorkerConfig::default().with_lease_ttl(std::time::Duration::from_secs(2));
    /// assert_eq!(c.lease_ttl.as_secs(), 2);
    /// ```
    pub fn with_lease_ttl(mut self, ttl: Duration) -> Self {
        self.lease_ttl = ttl;
        self
    }

    /// ```
    /// let c = percolator::observer::WorkerConfig::default().with_worker_ttl(std::time::Duration::from_millis(500));
    /// assert_eq!(c.worker_ttl.as_millis(), 500);
    /// ```
    pub fn with_worker_ttl(mut self, ttl: Duration) -> Self {
        self.worker_ttl = ttl.max(Duration::from_millis(4));
        self
    }

    /// ```
    /// let c = percolator::observer::WorkerConfig::default().with_start_timeout(std::time::Duration::from_secs(5));
    /// assert_eq!(c.start_timeout.as_secs(), 5);
    /// ```
    pub fn with_start_timeout(mut self, timeout: Duration) -> Self {
        self.start_timeout = timeout;
        self
    }

    /// ```
    /// let c = percolator::observer::WorkerConfig::default().with_crash(std::sync::Arc::new(|_| false));
    /// # let _ = c;
    /// ```
    #[cfg(feature = "testing")]
    pub fn with_crash(mut self, crash: WorkerCrash) -> Self {
        self.crash = Some(crash);
        self
    }

    /// ```
    /// let c = percolator::observer::WorkerConfig::default().with_partitions(4);
    /// assert_eq!(c.partitions, 4);
    /// ```
    pub fn with_partitions(mut self, partitions: usize) -> Self {
        self.partitions = partitions.clamp(1, 256);
        self
    }

    /// ```
    /// let c = percolator::observer::WorkerConfig::default().with_scanners(1, 4);
    /// assert_eq!((c.scanners, c.concurrency), (1, 4));
    /// ```
    pub fn with_scanners(mut self, scanners: usize, concurrency: usize) -> Self {
        self.scanners = scanners.max(1);
        self.concurrency = concurrency.max(1);
        self
    }
}

/// A worker's counters.
///
/// ```
/// let stats = percolator::observer::WorkerStats::default();
/// assert_eq!(stats.processed, 0);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct WorkerStats {
    /// Observer transactions committed.
    pub processed: u64,
    /// Runs that found the change acknowledged already (notifications cleared only).
    pub already_acked: u64,
    /// Runs that met a change newer than their snapshot (left for the next scan).
    pub stale: u64,
    /// Failed runs (observer errors, conflicts, I/O), each retried with backoff: the sum of
    /// the four kinds below.
    pub errors: u64,
    /// Failed runs that met a write-write conflict ([`Error::WriteConflict`]): another run of
    /// the same change committed the acknowledgment first, or a writer committed a cell the
    /// observer writes.
    pub write_conflicts: u64,
    /// Failed runs that waited for the lock of a live transaction until the wait budget ran
    /// out ([`Error::KeyLocked`]): live-lock waits, typically on a hot row.
    pub locked: u64,
    /// Failed runs whose commit may or may not have happened ([`RetryClass::Undetermined`]:
    /// a lost reply); the retry finds the acknowledgment if it did.
    pub undetermined: u64,
    /// Every other failed run: the observer's own errors, I/O, timeouts, and so on.
    pub other_errors: u64,
    /// Runs of a notification whose earlier run failed.
    pub retries: u64,
    pub scans: u64,
    /// Partitions held now.
    pub partitions: u64,
}

#[derive(Default)]
struct Counters {
    processed: AtomicU64,
    already_acked: AtomicU64,
    stale: AtomicU64,
    write_conflicts: AtomicU64,
    locked: AtomicU64,
    undetermined: AtomicU64,
    other_errors: AtomicU64,
    retries: AtomicU64,
    scans: AtomicU64,
}

impl Counters {
    /// Counts a failed run by its kind.
    fn failed(&self, error: &Error) {
        let kind = match error {
            Error::WriteConflict { .. } => &self.write_conflicts,
            Error::KeyLocked { .. } => &self.locked,
            e if e.retry_class() == RetryClass::Undetermined => &self.undetermined,
            _ => &self.other_errors,
        };
        kind.fetch_add(1, Ordering::Relaxed);
    }

    /// Every failed run: the kinds add up to it.
    fn errors(&self) -> u64 {
        [
            &self.write_conflicts,
            &self.locked,
            &self.undetermined,
            &self.other_errors,
        ]
        .iter()
        .map(|c| c.load(Ordering::Relaxed))
        .sum()
    }
}

/// A notification's failed runs: how many, and when it may run again.
type Backoffs = HashMap<(ObservedColumn, Vec<u8>), (u32, Instant)>;

struct Inner {
    client: AsyncClient,
    id: String,
    observers: ObserverSet,
    config: WorkerConfig,
    partitions: Vec<Partition>,
    /// Partitions this worker holds, with the lease value it last stored for each.
    owned: Mutex<BTreeMap<Partition, Vec<u8>>>,
    /// Tables whose next page a scanner of this worker is fetching now: scanners of one table
    /// take its pages in turn, never the same page twice.
    fetching: Mutex<HashSet<String>>,
    /// Per table, where the next page starts.
    cursors: Mutex<HashMap<String, Vec<u8>>>,
    /// The notified cells whose run is in flight here, so a later page that meets one again
    /// (the scan wrapped around meanwhile) does not start it twice.
    running: Mutex<HashSet<(ObservedColumn, Vec<u8>)>>,
    backoffs: Mutex<Backoffs>,
    next: AtomicUsize,
    counters: Counters,
    dead: AtomicBool,
    stop: CancellationToken,
}

/// Runs observers over the notifications of their tables, sharing the work with every other
/// worker through leases in HBase. See `docs/observers.md`.
///
/// **Stopping.** [`shutdown`](Self::shutdown)`.await` is the way to stop a worker: it stops the
/// scans, waits for the runs in flight, gives the leases back and removes the worker row, and
/// returns once all that is done. Dropping the worker stops it too, without draining: no scan
/// and no run starts after the drop; the runs already in flight finish on the client's
/// runtime, after which the leases are given back, but nothing waits for them. A worker
/// therefore runs only as long as its handle lives (hence `#[must_use]`).
///
/// ```compile_fail
/// #![deny(unused_must_use)]
/// # use percolator::observer::{ObserverSet, ObserverWorker, WorkerConfig};
/// async fn start(client: percolator::AsyncClient, set: ObserverSet) -> percolator::Result<()> {
///     // The worker would stop at the end of this statement.
///     ObserverWorker::start(client, set, WorkerConfig::default()).await?;
///     Ok(())
/// }
/// ```
///
/// ```
/// # use percolator::observer::{ObservedColumn, Observer, ObserverSet, ObserverWorker, WorkerConfig};
/// # struct Nop;
/// # #[percolator::observer::async_trait]
/// # impl Observer for Nop {
/// #     async fn process(&self, _: &mut percolator::AsyncTransaction, _: &[u8], _: &ObservedColumn) -> percolator::Result<()> { Ok(()) }
/// # }
/// # let emulator = hbase_emulator::start_local()?;
/// # let oracle = percolator::OracleServer::start_local(percolator::oracle::MemoryStore::new())?;
/// # let hbase = percolator::HBaseConfig::new(emulator.local_addr().to_string());
/// # let admin = percolator::HBaseClient::connect(hbase.clone())?;
/// # percolator::txn::setup::create_table(&admin, &Default::default(), "docs", &["f"])?;
/// # let oracles = [oracle.local_addr().to_string()];
/// # let rt = tokio::runtime::Runtime::new()?;
/// # rt.block_on(async {
/// # let client = percolator::AsyncClient::connect(hbase, &oracles, Default::default()).await?;
/// let set = ObserverSet::new().observe(ObservedColumn::new("docs", "f", "content"), "nop", Nop)?;
/// let worker = ObserverWorker::start(client.clone(), set, WorkerConfig::default()).await?;
/// worker.shutdown().await;
/// # client.shutdown().await;
/// # Ok::<(), percolator::Error>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "a worker stops when dropped: keep it, and stop it with `shutdown().await`"]
pub struct ObserverWorker {
    inner: Arc<Inner>,
    tasks: TaskTracker,
    /// Set once `shutdown` has given the leases back: the drop has nothing left to do.
    shut_down: bool,
}

impl ObserverWorker {
    /// Registers the observed columns in the meta table (so every client writing them leaves
    /// notifications, within `META_REFRESH`) and starts the lease and scanning tasks on the
    /// client's runtime. HBase's reports of a region in transition are waited out for up to
    /// `config.start_timeout`.
    pub async fn start(
        client: AsyncClient,
        observers: ObserverSet,
        config: WorkerConfig,
    ) -> Result<ObserverWorker> {
        for column in observers.observers.keys() {
            let (name, _) = &observers.observers[column];
            until_settled(config.start_timeout, || register(&client, column, name)).await?;
        }
        let partitions = observers
            .tables()
            .iter()
            .flat_map(|t| Partition::all(t, config.partitions))
            .collect();
        let inner = Arc::new(Inner {
            id: format!("{}-obs-{}", client.owner_id(), uuid::Uuid::new_v4()),
            client,
            observers,
            config,
            partitions,
            owned: Mutex::default(),
            fetching: Mutex::default(),
            cursors: Mutex::default(),
            running: Mutex::default(),
            backoffs: Mutex::default(),
            next: AtomicUsize::new(0),
            counters: Counters::default(),
            dead: AtomicBool::new(false),
            stop: CancellationToken::new(),
        });
        let tasks = TaskTracker::new();
        let runtime = inner.client.runtime().clone();
        // Rows of killed workers of older versions: the current rounds never look at them.
        if let Err(e) = inner.leases().sweep_legacy_workers().await {
            tracing::debug!(error = %e, "older workers' rows not swept; the next start tries again");
        }
        let short = until_settled(inner.config.start_timeout, || inner.leases_round()).await?;
        let me = Arc::clone(&inner);
        tasks.spawn_on(async move { me.lease_loop(short).await }, &runtime);
        for _ in 0..inner.config.scanners {
            let me = Arc::clone(&inner);
            tasks.spawn_on(async move { me.scan_loop().await }, &runtime);
        }
        tasks.close();
        Ok(ObserverWorker {
            inner,
            tasks,
            shut_down: false,
        })
    }

    /// ```no_run
    /// # fn f(w: &percolator::observer::ObserverWorker) {
    /// println!("{}", w.stats().processed);
    /// # }
    /// ```
    pub fn stats(&self) -> WorkerStats {
        let c = &self.inner.counters;
        WorkerStats {
            processed: c.processed.load(Ordering::Relaxed),
            already_acked: c.already_acked.load(Ordering::Relaxed),
            stale: c.stale.load(Ordering::Relaxed),
            errors: c.errors(),
            write_conflicts: c.write_conflicts.load(Ordering::Relaxed),
            locked: c.locked.load(Ordering::Relaxed),
            undetermined: c.undetermined.load(Ordering::Relaxed),
            other_errors: c.other_errors.load(Ordering::Relaxed),
            retries: c.retries.load(Ordering::Relaxed),
            scans: c.scans.load(Ordering::Relaxed),
            partitions: self.inner.owned.lock().len() as u64,
        }
    }

    /// Whether the worker died at an injected seam or by `kill` (feature `testing`).
    ///
    /// ```no_run
    /// # fn f(w: &percolator::observer::ObserverWorker) {
    /// assert!(!w.is_dead());
    /// # }
    /// ```
    pub fn is_dead(&self) -> bool {
        self.inner.dead.load(Ordering::SeqCst)
    }

    /// Stops on the spot as a crashed process would: runs in flight are abandoned, leases and
    /// the worker row are left to expire.
    ///
    /// ```no_run
    /// # async fn f(w: percolator::observer::ObserverWorker) {
    /// w.kill();
    /// w.shutdown().await; // only waits for the tasks to stop
    /// # }
    /// ```
    #[cfg(feature = "testing")]
    pub fn kill(&self) {
        self.inner.die();
    }

    /// Waits until every change committed to the observed columns before the call has been
    /// processed: by this worker or by any other worker of the same columns.
    ///
    /// Precisely: takes a timestamp `T` from the oracle, then scans the observed tables'
    /// notifications until none of this worker's columns is left at a version (the writer's
    /// start_ts) at or below `T`. A notification is cleared only once a committed run's
    /// snapshot included its change (or the acknowledgment showed that one had), so then every
    /// transaction that committed before the call (its start_ts and commit_ts are below `T`)
    /// has been followed by a committed run, or found acknowledged. It does not cover
    /// - changes committed after the call, including those the observer runs make meanwhile: in
    ///   a pipeline, a later stage's changes may still be pending (call it again for them);
    /// - changes committed in the registration window, which carry no notification
    ///   (docs/observers.md);
    /// - the notifications of transactions that started before `T` and are still running:
    ///   their notifications (written with their locks) are waited for too, so such a
    ///   transaction, until it commits or is rolled back, delays the return.
    ///
    /// A timeout is an [`Error::Timeout`](crate::Error::Timeout); so is, eventually, waiting
    /// on a worker that was killed when no other worker runs the columns.
    ///
    /// ```no_run
    /// # async fn f(w: &percolator::observer::ObserverWorker) -> percolator::Result<()> {
    /// w.wait_idle(std::time::Duration::from_secs(30)).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn wait_idle(&self, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        let wait = async {
            let at = timestamps::timestamp(self.inner.client.ctx()).await?;
            let mut pause = Duration::from_millis(5);
            loop {
                let mut pending = 0;
                for table in self.inner.observers.tables() {
                    let observed = |(family, qualifier): &(Vec<u8>, Vec<u8>)| {
                        let column = ObservedColumn::new(table.as_str(), family, qualifier);
                        self.inner.observers.observers.contains_key(&column)
                    };
                    pending += pending_rows(&self.inner.client, &table, Some(at), observed).await?;
                }
                if pending == 0 {
                    return Ok(());
                }
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(100));
            }
        };
        match tokio::time::timeout_at(deadline.into(), wait).await {
            Ok(done) => done,
            Err(_) => Err(Error::Timeout {
                what: "the observer runs of the changes committed before wait_idle".into(),
                after: timeout,
            }),
        }
    }

    /// Stops scanning, waits for every run in flight, gives the leases back and removes the
    /// worker row (a dead worker only waits for its tasks). Notifications of a scanned page
    /// whose runs had not started stay for the next owner of their partition.
    pub async fn shutdown(mut self) {
        self.inner.stop.cancel();
        self.tasks.wait().await;
        self.inner.give_back().await;
        self.shut_down = true;
    }
}

impl Drop for ObserverWorker {
    /// Stops the worker without draining: see the type's documentation.
    fn drop(&mut self) {
        if self.shut_down {
            return;
        }
        self.inner.stop.cancel();
        let inner = Arc::clone(&self.inner);
        let tasks = self.tasks.clone();
        // On a runtime that is shutting down the task is dropped: the leases then expire.
        self.inner.client.runtime().spawn(async move {
            tasks.wait().await;
            inner.give_back().await;
        });
    }
}

impl Inner {
    /// Gives the leases back and removes the worker row, once its tasks have stopped (a dead
    /// worker leaves them to expire).
    async fn give_back(&self) {
        if self.dead.load(Ordering::SeqCst) {
            return;
        }
        let owned: Vec<Partition> = std::mem::take(&mut *self.owned.lock())
            .into_keys()
            .collect();
        let leases = self.leases();
        for p in &owned {
            if let Err(e) = leases.release(p).await {
                tracing::debug!(error = %e, "lease not released; it will expire");
            }
        }
        for table in self.observers.tables() {
            if let Err(e) = leases.leave(&table).await {
                tracing::debug!(error = %e, "worker row not removed; it will expire");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::CellKey;

    #[test]
    fn failed_runs_are_counted_by_kind() {
        let conflict = Error::WriteConflict {
            table: "t".into(),
            row: b"r".to_vec(),
            column: b"f:q".to_vec(),
            start_ts: 1,
            conflict_ts: 2,
        };
        let locked = Error::KeyLocked {
            table: "t".into(),
            row: b"r".to_vec(),
            column: b"f:q".to_vec(),
            lock_ts: 1,
            primary: None,
        };
        let undetermined = Error::CommitUndetermined {
            start_ts: 1,
            commit_ts: 2,
            primary: Box::new(CellKey::new("t", b"r", b"f".to_vec(), b"q".to_vec()).unwrap()),
            reason: "lost reply".into(),
        };
        let other = Error::IllegalArgument {
            message: "the observer's own".into(),
        };
        let counters = Counters::default();
        for e in [&conflict, &conflict, &locked, &undetermined, &other] {
            counters.failed(e);
        }
        let count = |c: &AtomicU64| c.load(Ordering::Relaxed);
        assert_eq!(counters.errors(), 5);
        assert_eq!(
            [
                count(&counters.write_conflicts),
                count(&counters.locked),
                count(&counters.undetermined),
                count(&counters.other_errors)
            ],
            [2, 1, 1, 1]
        );
    }
}
