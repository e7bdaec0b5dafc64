//! The observer worker: tasks on the client's runtime that hold partition leases, scan their
//! partitions' notifications, run the observers and clear what they covered. A failed run is
//! retried with exponential backoff, never dropped; `shutdown` drains every task.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use parking_lot::Mutex;
use rand::seq::SliceRandom;
use rand::Rng;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::error::Result;
use crate::hbase::{Put, RowResult, Scan};
use crate::observer::lease::{Leases, Partition};
use crate::observer::model::{
    self, check_observer_name, notification_filter, parse_notification, registry_cell,
    ObservedColumn,
};
use crate::observer::run::{run_once, Observer, Outcome, WorkerCrash, WorkerSeam};
use crate::txn::meta::{meta_row, META_FAMILY};
use crate::txn::store::next_page_start;
use crate::txn::ALL_VERSIONS;
use crate::AsyncClient;

/// The observers a worker runs, one per observed column.
///
/// ```
/// # use percolator::observer::{ObservedColumn, Observer, ObserverSet};
/// # struct Nop;
/// # #[async_trait::async_trait]
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
    /// # #[async_trait::async_trait]
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
            return Err(crate::Error::IllegalArgument {
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
    /// Partitions per table (ranges of the rows' first byte).
    pub partitions: usize,
    /// A lease not renewed for this long is taken over by another worker.
    pub lease_ttl: Duration,
    /// Rows per scan page.
    pub scan_rows: i32,
    /// Pause after a scan round that found nothing, doubled up to `max_idle`.
    pub min_idle: Duration,
    pub max_idle: Duration,
    /// Backoff of a failed run: `retry_base * 2^attempts`, at most `retry_max`.
    pub retry_base: Duration,
    pub retry_max: Duration,
    /// Makes the worker die at a seam (tests, the demo's kills).
    pub crash: Option<WorkerCrash>,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            scanners: 8,
            concurrency: 16,
            partitions: 16,
            lease_ttl: Duration::from_secs(10),
            scan_rows: 256,
            min_idle: Duration::from_millis(5),
            max_idle: Duration::from_millis(50),
            retry_base: Duration::from_millis(10),
            retry_max: Duration::from_secs(2),
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
    /// let c = percolator::observer::WorkerConfig::default().with_crash(std::sync::Arc::new(|_| false));
    /// assert!(c.crash.is_some());
    /// ```
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
    /// Failed runs (observer errors, conflicts, I/O), each retried with backoff.
    pub errors: u64,
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
    errors: AtomicU64,
    retries: AtomicU64,
    scans: AtomicU64,
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
    /// Partitions a scanner of this worker is scanning now.
    busy: Mutex<HashSet<Partition>>,
    cursors: Mutex<HashMap<Partition, Vec<u8>>>,
    backoffs: Mutex<Backoffs>,
    next: AtomicUsize,
    counters: Counters,
    dead: AtomicBool,
    stop: CancellationToken,
}

/// Runs observers over the notifications of their tables, sharing the work with every other
/// worker through leases in HBase. See `docs/observers.md`.
///
/// ```
/// # use percolator::observer::{ObservedColumn, Observer, ObserverSet, ObserverWorker, WorkerConfig};
/// # struct Nop;
/// # #[async_trait::async_trait]
/// # impl Observer for Nop {
/// #     async fn process(&self, _: &mut percolator::AsyncTransaction, _: &[u8], _: &ObservedColumn) -> percolator::Result<()> { Ok(()) }
/// # }
/// # let emulator = percolator::emulator::start_local()?;
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
pub struct ObserverWorker {
    inner: Arc<Inner>,
    tasks: TaskTracker,
}

impl ObserverWorker {
    /// Registers the observed columns in the meta table (so every client writing them leaves
    /// notifications, within `META_REFRESH`) and starts the lease and scanning tasks on the
    /// client's runtime.
    pub async fn start(
        client: AsyncClient,
        observers: ObserverSet,
        config: WorkerConfig,
    ) -> Result<ObserverWorker> {
        for column in observers.observers.keys() {
            let (name, _) = &observers.observers[column];
            register(&client, column, name).await?;
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
            busy: Mutex::default(),
            cursors: Mutex::default(),
            backoffs: Mutex::default(),
            next: AtomicUsize::new(0),
            counters: Counters::default(),
            dead: AtomicBool::new(false),
            stop: CancellationToken::new(),
        });
        let tasks = TaskTracker::new();
        let runtime = inner.client.runtime().clone();
        inner.leases_round().await?;
        let me = Arc::clone(&inner);
        tasks.spawn_on(async move { me.lease_loop().await }, &runtime);
        for _ in 0..inner.config.scanners {
            let me = Arc::clone(&inner);
            tasks.spawn_on(async move { me.scan_loop().await }, &runtime);
        }
        tasks.close();
        Ok(ObserverWorker { inner, tasks })
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
            errors: c.errors.load(Ordering::Relaxed),
            retries: c.retries.load(Ordering::Relaxed),
            scans: c.scans.load(Ordering::Relaxed),
            partitions: self.inner.owned.lock().len() as u64,
        }
    }

    /// Whether the worker died at an injected seam or by [`kill`](Self::kill).
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
    pub fn kill(&self) {
        self.inner.die();
    }

    /// Stops scanning, waits for every run in flight, gives the leases back and removes the
    /// worker row (a dead worker only waits for its tasks).
    pub async fn shutdown(self) {
        self.inner.stop.cancel();
        self.tasks.wait().await;
        if self.is_dead() {
            return;
        }
        let owned: Vec<Partition> = std::mem::take(&mut *self.inner.owned.lock())
            .into_keys()
            .collect();
        let leases = self.inner.leases();
        for p in &owned {
            if let Err(e) = leases.release(p).await {
                tracing::debug!(error = %e, "lease not released; it will expire");
            }
        }
        for table in self.inner.observers.tables() {
            if let Err(e) = leases.leave(&table).await {
                tracing::debug!(error = %e, "worker row not removed; it will expire");
            }
        }
    }
}

/// Marks `column` observed by `observer` in the meta table. Clients that have the table's meta
/// row cached see it within `META_REFRESH` (5 s); changes committed before then may lack
/// their notification (docs/observers.md).
///
/// ```
/// # let emulator = percolator::emulator::start_local()?;
/// # let oracle = percolator::OracleServer::start_local(percolator::oracle::MemoryStore::new())?;
/// # let hbase = percolator::HBaseConfig::new(emulator.local_addr().to_string());
/// # let admin = percolator::HBaseClient::connect(hbase.clone())?;
/// # percolator::txn::setup::create_table(&admin, &Default::default(), "docs", &["f"])?;
/// # let oracles = [oracle.local_addr().to_string()];
/// # let rt = tokio::runtime::Runtime::new()?;
/// # rt.block_on(async {
/// # let client = percolator::AsyncClient::connect(hbase, &oracles, Default::default()).await?;
/// use percolator::observer::{register, ObservedColumn};
/// register(&client, &ObservedColumn::new("docs", "f", "content"), "indexer").await?;
/// # client.shutdown().await;
/// # Ok::<(), percolator::Error>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub async fn register(client: &AsyncClient, column: &ObservedColumn, observer: &str) -> Result<()> {
    check_observer_name(observer)?;
    let ctx = client.ctx();
    column.key(b"r")?; // a valid cell address
    ctx.check_table(&column.table).await?;
    let schema = ctx.schema();
    for family in [&schema.notify_family, &schema.ack_family, &column.family] {
        ctx.check_family(&column.table, family).await?;
    }
    let (q, v) = registry_cell(column, observer);
    let row = meta_row(&column.table);
    let put = Put::new(row.clone()).add(META_FAMILY, q, v);
    ctx.store().put(&ctx.schema().meta_table, &put).await?;
    ctx.refresh_meta_row(&row).await.map(drop)
}

/// The observed columns of `table` and their observers' names, as registered in the meta
/// table (read now).
///
/// ```
/// # let emulator = percolator::emulator::start_local()?;
/// # let oracle = percolator::OracleServer::start_local(percolator::oracle::MemoryStore::new())?;
/// # let hbase = percolator::HBaseConfig::new(emulator.local_addr().to_string());
/// # let admin = percolator::HBaseClient::connect(hbase.clone())?;
/// # percolator::txn::setup::create_table(&admin, &Default::default(), "docs", &["f"])?;
/// # let oracles = [oracle.local_addr().to_string()];
/// # let rt = tokio::runtime::Runtime::new()?;
/// # rt.block_on(async {
/// # let client = percolator::AsyncClient::connect(hbase, &oracles, Default::default()).await?;
/// use percolator::observer::{observed_columns, register, ObservedColumn};
/// let col = ObservedColumn::new("docs", "f", "content");
/// register(&client, &col, "indexer").await?;
/// assert_eq!(observed_columns(&client, "docs").await?, [(col, "indexer".to_string())]);
/// # client.shutdown().await;
/// # Ok::<(), percolator::Error>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub async fn observed_columns(
    client: &AsyncClient,
    table: &str,
) -> Result<Vec<(ObservedColumn, String)>> {
    let row = client.ctx().refresh_meta_row(&meta_row(table)).await?;
    Ok(model::observed_columns(table, &row))
}

/// Rows per page when counting notifications.
const COUNT_PAGE: i32 = 1000;

/// Notifications not yet cleared in `table` (cells of the notify family, every version).
///
/// ```
/// # let emulator = percolator::emulator::start_local()?;
/// # let oracle = percolator::OracleServer::start_local(percolator::oracle::MemoryStore::new())?;
/// # let hbase = percolator::HBaseConfig::new(emulator.local_addr().to_string());
/// # let admin = percolator::HBaseClient::connect(hbase.clone())?;
/// # percolator::txn::setup::create_table(&admin, &Default::default(), "docs", &["f"])?;
/// # let oracles = [oracle.local_addr().to_string()];
/// # let rt = tokio::runtime::Runtime::new()?;
/// # rt.block_on(async {
/// # let client = percolator::AsyncClient::connect(hbase, &oracles, Default::default()).await?;
/// assert_eq!(percolator::observer::pending_notifications(&client, "docs").await?, 0);
/// # client.shutdown().await;
/// # Ok::<(), percolator::Error>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub async fn pending_notifications(client: &AsyncClient, table: &str) -> Result<usize> {
    let ctx = client.ctx();
    let mut from = Vec::new();
    let mut count = 0;
    loop {
        let scan = notification_scan(ctx.schema(), from.clone(), Vec::new());
        let page = ctx.store().scan_page(table, &scan, COUNT_PAGE).await?;
        count += page
            .iter()
            .flat_map(|r| &r.cells)
            .filter(|c| parse_notification(&c.qualifier).is_some())
            .count();
        match next_page_start(&page, COUNT_PAGE) {
            Some(next) => from = next,
            None => return Ok(count),
        }
    }
}

fn notification_scan(schema: &crate::txn::Schema, start: Vec<u8>, stop: Vec<u8>) -> Scan {
    Scan::range(start, stop)
        .family(schema.notify_family.clone())
        .filter(notification_filter())
        .max_versions(ALL_VERSIONS)
}

/// One notified (row, column) and the notification versions seen.
struct Job {
    column: ObservedColumn,
    row: Vec<u8>,
    versions: Vec<u64>,
}

impl Inner {
    fn leases(&self) -> Leases<'_> {
        Leases {
            ctx: self.client.ctx(),
            owner: &self.id,
            ttl_ms: self.config.lease_ttl.as_millis() as u64,
        }
    }

    fn die(&self) {
        if !self.dead.swap(true, Ordering::SeqCst) {
            tracing::info!(worker = %self.id, "observer worker dies");
        }
        self.stop.cancel();
    }

    fn stopping(&self) -> bool {
        self.stop.is_cancelled()
    }

    fn crash_at(&self, seam: WorkerSeam) -> bool {
        let fires = self.config.crash.as_ref().is_some_and(|f| f(seam));
        if fires {
            self.die();
        }
        fires || self.dead.load(Ordering::SeqCst)
    }

    async fn lease_loop(&self) {
        let period = self.config.lease_ttl / 3;
        loop {
            tokio::select! {
                _ = self.stop.cancelled() => return,
                _ = tokio::time::sleep(period) => {}
            }
            if let Err(e) = self.leases_round().await {
                tracing::debug!(error = %e, "lease round failed");
            }
        }
    }

    /// Per table: heartbeat, renew, then give up or take partitions toward this worker's fair
    /// share of the table's partitions among its live workers.
    async fn leases_round(&self) -> Result<()> {
        for table in self.observers.tables() {
            if self.stopping() {
                return Ok(());
            }
            self.table_leases_round(&table).await?;
        }
        Ok(())
    }

    async fn table_leases_round(&self, table: &str) -> Result<()> {
        let leases = self.leases();
        leases.heartbeat(table).await?;
        let live = leases.live_workers(table).await?;
        let mine = |p: &Partition| p.table == table;
        let partitions: Vec<Partition> = self
            .partitions
            .iter()
            .filter(|p| mine(p))
            .cloned()
            .collect();
        let target = partitions.len().div_ceil(live);
        let held: Vec<(Partition, Vec<u8>)> = self
            .owned
            .lock()
            .iter()
            .filter(|(p, _)| mine(p))
            .map(|(p, v)| (p.clone(), v.clone()))
            .collect();
        for (p, value) in held {
            match leases.renew(&p, &value).await? {
                Some(next) => self.owned.lock().insert(p, next),
                None => self.owned.lock().remove(&p),
            };
        }
        let count = || self.owned.lock().keys().filter(|p| mine(p)).count();
        let surplus = count().saturating_sub(target);
        let giving: Vec<Partition> = self
            .owned
            .lock()
            .keys()
            .filter(|p| mine(p))
            .take(surplus)
            .cloned()
            .collect();
        for p in giving {
            self.owned.lock().remove(&p);
            leases.release(&p).await?;
        }
        let mut candidates = partitions;
        candidates.shuffle(&mut rand::thread_rng());
        for p in candidates {
            if count() >= target || self.stopping() {
                break;
            }
            if self.owned.lock().contains_key(&p) {
                continue;
            }
            if let Some(value) = leases.acquire(&p).await? {
                self.owned.lock().insert(p, value);
            }
        }
        Ok(())
    }

    async fn scan_loop(&self) {
        let mut idle = self.config.min_idle;
        loop {
            if self.stopping() {
                return;
            }
            let mut found = 0;
            if let Some(p) = self.take_partition() {
                match self.scan_partition(&p).await {
                    Ok(n) => found = n,
                    Err(e) => tracing::debug!(error = %e, "notification scan failed"),
                }
                self.busy.lock().remove(&p);
            }
            if found > 0 {
                idle = self.config.min_idle;
                continue;
            }
            tokio::select! {
                _ = self.stop.cancelled() => return,
                _ = tokio::time::sleep(idle) => {}
            }
            idle = (idle * 2).min(self.config.max_idle);
        }
    }

    /// The next owned partition, in turn, that no other scanner of this worker is scanning:
    /// two scanners of one partition would read the same page and run its notifications twice.
    fn take_partition(&self) -> Option<Partition> {
        let held = self.owned.lock();
        let mut busy = self.busy.lock();
        let owned: Vec<&Partition> = held.keys().collect();
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let free = (0..owned.len())
            .map(|k| owned[(start + k) % owned.len()])
            .find(|p| !busy.contains(*p))?
            .clone();
        busy.insert(free.clone());
        Some(free)
    }

    /// One page of `p` from its cursor (random at first, then wrapping around); runs what it
    /// found. Returns the number of notified cells found.
    async fn scan_partition(&self, p: &Partition) -> Result<usize> {
        let from = self
            .cursors
            .lock()
            .entry(p.clone())
            .or_insert_with(|| random_start(p))
            .clone();
        let scan = notification_scan(self.client.ctx().schema(), from, p.stop.clone());
        let page = self
            .client
            .ctx()
            .store()
            .scan_page(&p.table, &scan, self.config.scan_rows)
            .await?;
        self.counters.scans.fetch_add(1, Ordering::Relaxed);
        let next = next_page_start(&page, self.config.scan_rows).unwrap_or_else(|| p.start.clone());
        self.cursors.lock().insert(p.clone(), next);
        let jobs = self.jobs(&p.table, &page);
        let found = jobs.len();
        futures::stream::iter(jobs)
            .for_each_concurrent(self.config.concurrency, |job| self.run_job(job))
            .await;
        if found > 0 && self.crash_at(WorkerSeam::MidScan) {
            return Ok(0);
        }
        Ok(found)
    }

    /// The notified cells of a page that this worker observes and that are not backing off.
    fn jobs(&self, table: &str, page: &[RowResult]) -> Vec<Job> {
        let now = Instant::now();
        let backoffs = self.backoffs.lock();
        let mut jobs: Vec<Job> = Vec::new();
        for row in page {
            for cell in &row.cells {
                let Some((family, qualifier)) = parse_notification(&cell.qualifier) else {
                    continue;
                };
                let column = ObservedColumn::new(table, family, qualifier);
                if !self.observers.observers.contains_key(&column) {
                    continue;
                }
                let due = backoffs
                    .get(&(column.clone(), row.row.clone()))
                    .is_none_or(|(_, at)| *at <= now);
                if !due {
                    continue;
                }
                match jobs.last_mut() {
                    Some(j) if j.row == row.row && j.column == column => {
                        j.versions.push(cell.timestamp as u64)
                    }
                    _ => jobs.push(Job {
                        column,
                        row: row.row.clone(),
                        versions: vec![cell.timestamp as u64],
                    }),
                }
            }
        }
        jobs
    }

    async fn run_job(&self, job: Job) {
        if self.crash_at(WorkerSeam::BeforeProcess) {
            return;
        }
        let (name, observer) = &self.observers.observers[&job.column];
        let key = (job.column.clone(), job.row.clone());
        let failed_before = self.backoffs.lock().get(&key).map(|(n, _)| *n);
        if failed_before.is_some() {
            self.counters.retries.fetch_add(1, Ordering::Relaxed);
        }
        let die_at = |seam| self.crash_at(seam);
        let outcome = run_once(
            &self.client,
            name,
            observer.as_ref(),
            &job.column,
            &job.row,
            &job.versions,
            &die_at,
        )
        .await;
        let c = &self.counters;
        match outcome {
            Ok(Outcome::Died) => return,
            Ok(Outcome::Processed) => c.processed.fetch_add(1, Ordering::Relaxed),
            Ok(Outcome::AlreadyAcked) => c.already_acked.fetch_add(1, Ordering::Relaxed),
            Ok(Outcome::Stale) => c.stale.fetch_add(1, Ordering::Relaxed),
            Err(e) => {
                c.errors.fetch_add(1, Ordering::Relaxed);
                let attempts = failed_before.unwrap_or(0) + 1;
                let pause = self
                    .config
                    .retry_base
                    .saturating_mul(1 << attempts.min(16))
                    .min(self.config.retry_max);
                let jitter = rand::thread_rng().gen_range(0.5..1.0);
                tracing::debug!(column = %job.column, attempts, error = %e, "observer run failed; retrying");
                self.backoffs
                    .lock()
                    .insert(key, (attempts, Instant::now() + pause.mul_f64(jitter)));
                return;
            }
        };
        self.backoffs.lock().remove(&key);
    }
}

/// A random row of `p` to start its first scan at, so that workers do not all start at the
/// same place and move together (the paper's "bus clumping").
fn random_start(p: &Partition) -> Vec<u8> {
    let lo = p.start.first().copied().unwrap_or(0) as u16;
    let hi = p.stop.first().map_or(256, |&b| b as u16);
    let mut rng = rand::thread_rng();
    vec![rng.gen_range(lo..hi) as u8, rng.gen()]
}
