//! One GC round and the background runner. A round: choose and store the safe point; wait
//! until every client's cached copy of the meta row is younger than it (docs/design.md
//! invariant 13); decide every lock below it; collect each table below it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde::Serialize;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::error::{Error, Result};
use crate::gc::collect::Pass;
use crate::gc::{locks, safe_point};
use crate::hbase::{AsyncHBaseClient, HBaseClient, HBaseConfig};
use crate::metrics;
use crate::oracle::{physical_of, OracleClient};
use crate::ranges::{self, KeyRange};
use crate::txn::meta::META_REFRESH;
use crate::txn::table_checks;
use crate::txn::timestamps;
use crate::txn::{AsyncClient, TxnOptions};

/// The shortest life time GC accepts. A transaction is published in its client's liveness
/// row at the next refresh (a third of the liveness TTL, 5 s by default); one younger than the
/// life time is above the safe point anyway. Below this floor, a slow refresh could let the
/// safe point pass a live transaction not yet published, which then fails with
/// `SnapshotTooOld` (never a wrong answer, but a needless abort).
pub const MIN_LIFE_TIME: Duration = Duration::from_secs(5);
/// Added to `META_REFRESH` before collecting below a safe point just stored: clock-rate
/// differences between machines, and the time between a reply and the instant we note it.
const PUBLISH_MARGIN: Duration = Duration::from_secs(1);

/// How GC runs.
///
/// ```
/// let opts = percolator::gc::GcOptions::default();
/// assert_eq!(opts.life_time(), std::time::Duration::from_secs(600));
/// assert!(opts.clone().with_life_time(std::time::Duration::from_secs(1)).is_err());
/// ```
#[derive(Clone, Debug)]
pub struct GcOptions {
    life_time: Duration,
    page_rows: i32,
    lock_tables: Option<Vec<String>>,
    workers: usize,
    crash_after_pages: Option<u64>,
}

/// The most ranges a round collects at once ([`GcOptions::with_workers`]).
pub const MAX_WORKERS: usize = 256;

impl Default for GcOptions {
    fn default() -> Self {
        GcOptions {
            life_time: Duration::from_secs(600),
            page_rows: 64,
            lock_tables: None,
            workers: 1,
            crash_after_pages: None,
        }
    }
}

impl GcOptions {
    /// ```
    /// assert_eq!(percolator::gc::GcOptions::default().life_time().as_secs(), 600);
    /// ```
    pub fn life_time(&self) -> Duration {
        self.life_time
    }

    /// How far behind the oracle's time the safe point stays; at least [`MIN_LIFE_TIME`].
    ///
    /// ```
    /// use std::time::Duration;
    /// let opts = percolator::gc::GcOptions::default().with_life_time(Duration::from_secs(30))?;
    /// assert_eq!(opts.life_time(), Duration::from_secs(30));
    /// # Ok::<(), percolator::Error>(())
    /// ```
    pub fn with_life_time(mut self, life_time: Duration) -> Result<Self> {
        if life_time < MIN_LIFE_TIME {
            return Err(Error::IllegalArgument {
                message: format!(
                    "GC life time {life_time:?} is below the minimum {MIN_LIFE_TIME:?} (docs/gc.md)"
                ),
            });
        }
        self.life_time = life_time;
        Ok(self)
    }

    /// Rows per scan page (and per batch of deletes).
    ///
    /// ```
    /// let opts = percolator::gc::GcOptions::default().with_page_rows(64);
    /// # let _ = opts;
    /// ```
    pub fn with_page_rows(mut self, rows: i32) -> Self {
        self.page_rows = rows.max(1);
        self
    }

    /// How many of a table's regions a round collects at once (1 to [`MAX_WORKERS`], 1 by
    /// default): each region's key range is a pass of its own, so where a gateway's latency,
    /// not its CPU, bounds a scan, `n` workers collect up to `n` times faster.
    ///
    /// ```
    /// let opts = percolator::gc::GcOptions::default().with_workers(8)?;
    /// assert_eq!(opts.workers(), 8);
    /// assert!(percolator::gc::GcOptions::default().with_workers(0).is_err());
    /// # Ok::<(), percolator::Error>(())
    /// ```
    pub fn with_workers(mut self, workers: usize) -> Result<Self> {
        if !(1..=MAX_WORKERS).contains(&workers) {
            return Err(Error::IllegalArgument {
                message: format!("GC workers must be 1 to {MAX_WORKERS}, not {workers}"),
            });
        }
        self.workers = workers;
        Ok(self)
    }

    /// ```
    /// assert_eq!(percolator::gc::GcOptions::default().workers(), 1);
    /// ```
    pub fn workers(&self) -> usize {
        self.workers
    }

    /// Resolve locks only in these tables instead of every transactional table: only correct
    /// when no transaction spans the collected tables and any other (tests, single-table
    /// services on a shared cluster).
    ///
    /// ```
    /// let opts = percolator::gc::GcOptions::default().resolving_locks_in(vec!["t".into()]);
    /// # let _ = opts;
    /// ```
    pub fn resolving_locks_in(mut self, tables: Vec<String>) -> Self {
        self.lock_tables = Some(tables);
        self
    }

    /// Test hook: the round fails as a crash would after this many pages of deletes.
    ///
    /// ```
    /// let opts = percolator::gc::GcOptions::default().crash_after_pages(1);
    /// # let _ = opts;
    /// ```
    #[cfg(feature = "testing")]
    pub fn crash_after_pages(mut self, pages: u64) -> Self {
        self.crash_after_pages = Some(pages);
        self
    }
}

/// What one table pass saw and removed.
///
/// ```
/// let r = percolator::gc::TableReport::default();
/// assert_eq!(r.removed(), 0);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TableReport {
    pub table: String,
    /// The key ranges (the table's regions when the round began) it was collected in.
    pub ranges: u64,
    pub rows: u64,
    /// Logical cells (columns with a lock cell or write records).
    pub cells: u64,
    pub write_records_removed: u64,
    /// Of `write_records_removed`, how many were rollback records.
    pub rollback_records_removed: u64,
    pub data_versions_removed: u64,
    /// Write records and data versions left in the scanned cells.
    pub versions_kept: u64,
    /// Cells skipped because a record did not decode.
    pub damaged: u64,
}

impl TableReport {
    /// Versions removed: write records plus data versions.
    ///
    /// ```
    /// let r = percolator::gc::TableReport { write_records_removed: 2, data_versions_removed: 1, ..Default::default() };
    /// assert_eq!(r.removed(), 3);
    /// ```
    pub fn removed(&self) -> u64 {
        self.write_records_removed + self.data_versions_removed
    }

    /// Adds what `other` (a page of the same table) saw and removed.
    pub(crate) fn add(&mut self, other: &TableReport) {
        self.rows += other.rows;
        self.cells += other.cells;
        self.write_records_removed += other.write_records_removed;
        self.rollback_records_removed += other.rollback_records_removed;
        self.data_versions_removed += other.data_versions_removed;
        self.versions_kept += other.versions_kept;
        self.damaged += other.damaged;
    }
}

/// Progress of a table pass, after each page.
///
/// ```
/// let p = percolator::gc::GcProgress { table: "t".into(), report: Default::default() };
/// assert_eq!(p.report.rows, 0);
/// ```
#[derive(Clone, Debug)]
pub struct GcProgress {
    pub table: String,
    pub report: TableReport,
}

/// One round's result.
///
/// ```
/// let r = percolator::gc::GcReport::default();
/// assert_eq!(r.cells(), 0);
/// ```
#[derive(Clone, Debug, Default, Serialize)]
pub struct GcReport {
    /// The safe point the round collected below.
    pub safe_point: u64,
    /// Locks below the safe point the round decided.
    pub locks_resolved: u64,
    pub tables: Vec<TableReport>,
    /// Time spent scanning and deleting (not waiting for clients to see the safe point).
    pub collect_secs: f64,
}

impl GcReport {
    /// Cells scanned over every table.
    ///
    /// ```
    /// let r = percolator::gc::GcReport::default();
    /// assert_eq!(r.removed(), 0);
    /// ```
    pub fn cells(&self) -> u64 {
        self.tables.iter().map(|t| t.cells).sum()
    }

    /// Versions removed over every table.
    ///
    /// ```
    /// assert_eq!(percolator::gc::GcReport::default().removed(), 0);
    /// ```
    pub fn removed(&self) -> u64 {
        self.tables.iter().map(TableReport::removed).sum()
    }
}

/// Runs GC rounds; holds a transactional client of its own (to resolve locks) and an admin
/// connection (to list the transactional tables).
///
/// ```
/// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
/// # let rt = tokio::runtime::Runtime::new()?;
/// # rt.block_on(async {
/// let gc = percolator::gc::GcWorker::connect(hbase, &oracles, Default::default(), Default::default()).await?;
/// let report = gc.run_once(&["t".to_string()], &|_| {}).await?;
/// assert_eq!(report.removed(), 0, "nothing is ten minutes old yet");
/// gc.shutdown().await;
/// # Ok::<(), percolator::Error>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct GcWorker {
    client: AsyncClient,
    admin: HBaseClient,
    opts: GcOptions,
    cancel: CancellationToken,
}

impl GcWorker {
    /// A worker over an existing client and admin connection.
    ///
    /// ```
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # percolator::txn::setup::create_liveness_table(&hbase, &Default::default())?;
    /// # let rt = tokio::runtime::Runtime::new()?;
    /// # rt.block_on(async {
    /// let tso = std::sync::Arc::new(percolator::LocalTimestamps::new());
    /// let client = percolator::AsyncClient::new(std::sync::Arc::new(hbase.clone()), tso, Default::default()).await?;
    /// let gc = percolator::gc::GcWorker::new(client, hbase, Default::default());
    /// gc.shutdown().await;
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(client: AsyncClient, admin: HBaseClient, opts: GcOptions) -> GcWorker {
        GcWorker {
            client,
            admin,
            opts,
            cancel: CancellationToken::new(),
        }
    }

    /// Connects to HBase and the oracle, creating the meta and liveness tables if missing.
    ///
    /// ```
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let oracle = percolator::OracleServer::start_local(percolator::oracle::MemoryStore::new())?;
    /// # let hbase = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// # let oracles = [oracle.local_addr().to_string()];
    /// # let rt = tokio::runtime::Runtime::new()?;
    /// # rt.block_on(async {
    /// let gc = percolator::gc::GcWorker::connect(hbase, &oracles, Default::default(), Default::default()).await?;
    /// gc.shutdown().await;
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn connect(
        hbase: HBaseConfig,
        oracle_addrs: &[String],
        txn: TxnOptions,
        opts: GcOptions,
    ) -> Result<GcWorker> {
        let hbase = AsyncHBaseClient::connect(hbase).await?;
        let admin = hbase.blocking();
        let (setup, schema, liveness) = (admin.clone(), txn.schema.clone(), txn.liveness.clone());
        tokio::task::spawn_blocking(move || {
            crate::txn::setup::create_meta_table(&setup, &schema)?;
            crate::txn::setup::create_liveness_table(&setup, &liveness)
        })
        .await
        .map_err(|_| Error::Shutdown)??;
        let tso = OracleClient::connect_async(oracle_addrs, txn.oracle.clone()).await?;
        let client = AsyncClient::new(Arc::new(hbase), Arc::new(tso), txn).await?;
        Ok(GcWorker::new(client, admin, opts))
    }

    /// One round over `tables`: store the safe point, let clients see it, decide the locks
    /// below it, collect each table. `progress` is called after every page.
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let rt = tokio::runtime::Runtime::new()?;
    /// # rt.block_on(async {
    /// let gc = percolator::gc::GcWorker::connect(hbase, &oracles, Default::default(), Default::default()).await?;
    /// let report = gc.run_once(&["t".to_string()], &|p| eprintln!("{} rows", p.report.rows)).await?;
    /// assert_eq!(report.tables.len(), 1);
    /// gc.shutdown().await;
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn run_once(
        &self,
        tables: &[String],
        progress: &(dyn Fn(&GcProgress) + Send + Sync),
    ) -> Result<GcReport> {
        let ctx = self.client.ctx();
        let store = ctx.store();
        let schema = ctx.schema();
        for table in tables {
            table_checks::check_table(ctx, table).await?;
        }
        let meta_table = schema.meta_table.clone();
        let now = timestamps::timestamp(ctx).await?;
        let mut candidate = safe_point::by_life_time(now, self.opts.life_time);
        // Read after the oracle's time: a transaction not yet published is younger than the
        // life time (MIN_LIFE_TIME), hence above the candidate.
        let liveness_table = &ctx.liveness().config().table;
        if let Some(oldest) = safe_point::oldest_published(store, liveness_table).await? {
            candidate = candidate.min(oldest);
        }
        let safe_point = safe_point::advance(store, &meta_table, candidate).await?;
        let lag_ms = physical_of(now).saturating_sub(physical_of(safe_point));
        metrics::gauge_set(metrics::key!(metrics::GC_LAG), lag_ms as f64 / 1000.0);
        let mut report = GcReport {
            safe_point,
            ..GcReport::default()
        };
        if safe_point == 0 {
            return Ok(report);
        }
        // docs/design.md invariant 13: a client may trust its cached meta row for
        // META_REFRESH; past that, every read it checks sees this safe point or a higher one.
        tokio::select! {
            _ = self.cancel.cancelled() => return Err(Error::Shutdown),
            _ = tokio::time::sleep(META_REFRESH + PUBLISH_MARGIN) => {}
        }
        let started = Instant::now();
        let cancelled = || self.cancel.is_cancelled();
        let lock_tables = match &self.opts.lock_tables {
            Some(t) => t.clone(),
            None => self.transactional_tables().await?,
        };
        report.locks_resolved =
            locks::resolve_below(ctx, &lock_tables, safe_point, &cancelled).await?;
        let pass = Pass {
            store,
            schema,
            safe_point,
            page_rows: self.opts.page_rows,
            crash_after_pages: self.opts.crash_after_pages,
            cancelled: &cancelled,
            progress,
        };
        for table in tables {
            let ranges = self.ranges(table).await?;
            let collected = pass.collect(table, &ranges, self.opts.workers).await?;
            metrics::count_n(metrics::key!(metrics::GC_COLLECTED), collected.removed());
            report.tables.push(collected);
        }
        report.collect_secs = started.elapsed().as_secs_f64();
        Ok(report)
    }

    /// The key ranges a round collects `table` in: its regions when it collects several at
    /// once, else the whole table.
    async fn ranges(&self, table: &str) -> Result<Vec<KeyRange>> {
        if self.opts.workers < 2 {
            return Ok(vec![KeyRange::all()]);
        }
        let (admin, table) = (self.admin.clone(), table.to_string());
        tokio::task::spawn_blocking(move || ranges::table_ranges(&admin, &table))
            .await
            .map_err(|_| Error::Shutdown)?
    }

    /// Every enabled table with the percolator families (the lock pass covers them all). A
    /// disabled table (under maintenance, or on its way to being dropped) can be neither read
    /// nor written, so it holds no lock a reader could meet until it is enabled again: left
    /// for a later round rather than failing this one.
    async fn transactional_tables(&self) -> Result<Vec<String>> {
        let admin = self.admin.clone();
        let schema = self.client.ctx().schema().clone();
        tokio::task::spawn_blocking(move || {
            let admin = admin.admin();
            let mut out = Vec::new();
            for table in admin.list_tables()? {
                match admin.table_descriptor(&table) {
                    Ok(desc) if schema.check(&desc).is_ok() => {
                        match admin.is_table_enabled(&table) {
                            Ok(true) => out.push(table),
                            Ok(false) | Err(Error::TableNotFound { .. }) => {}
                            Err(e) => return Err(e),
                        }
                    }
                    Ok(_) | Err(Error::TableNotFound { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(out)
        })
        .await
        .map_err(|_| Error::Shutdown)?
    }

    /// Runs a round every `interval` in the background until [`GcHandle::shutdown`]. A round
    /// that fails is logged and the next one starts over (every round is safe to repeat).
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let rt = tokio::runtime::Runtime::new()?;
    /// # rt.block_on(async {
    /// let gc = percolator::gc::GcWorker::connect(hbase, &oracles, Default::default(), Default::default()).await?;
    /// let handle = gc.spawn(vec!["t".into()], std::time::Duration::from_secs(60));
    /// let last = handle.shutdown().await; // cancels the round under way and waits for it
    /// assert!(last.is_none());
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn spawn(self, tables: Vec<String>, interval: Duration) -> GcHandle {
        let tracker = TaskTracker::new();
        let last = Arc::new(Mutex::new(None));
        let cancel = self.cancel.clone();
        let (worker, done) = (self.clone(), last.clone());
        let runtime = self.client.ctx().background().runtime().clone();
        tracker.spawn_on(
            async move {
                loop {
                    match worker.run_once(&tables, &|_| {}).await {
                        Ok(report) => *done.lock() = Some(report),
                        Err(Error::Shutdown) => break,
                        Err(e) => tracing::warn!(error = %e, "GC round failed"),
                    }
                    tokio::select! {
                        _ = worker.cancel.cancelled() => break,
                        _ = tokio::time::sleep(interval) => {}
                    }
                }
            },
            &runtime,
        );
        tracker.close();
        GcHandle {
            worker: self,
            tracker,
            cancel,
            last,
        }
    }

    /// Stops rounds under way and shuts the worker's client down.
    ///
    /// ```
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let oracle = percolator::OracleServer::start_local(percolator::oracle::MemoryStore::new())?;
    /// # let hbase = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// # let oracles = [oracle.local_addr().to_string()];
    /// # let rt = tokio::runtime::Runtime::new()?;
    /// # rt.block_on(async {
    /// let gc = percolator::gc::GcWorker::connect(hbase, &oracles, Default::default(), Default::default()).await?;
    /// gc.shutdown().await;
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn shutdown(&self) {
        self.cancel.cancel();
        self.client.shutdown().await;
    }
}

/// GC rounds running in the background; [`shutdown`](Self::shutdown) stops and drains them.
///
/// ```no_run
/// # async fn demo(gc: percolator::gc::GcWorker) {
/// let handle = gc.spawn(vec!["accounts".into()], std::time::Duration::from_secs(60));
/// if let Some(report) = handle.last_report() {
///     println!("safe point {}", report.safe_point);
/// }
/// handle.shutdown().await;
/// # }
/// ```
pub struct GcHandle {
    worker: GcWorker,
    tracker: TaskTracker,
    cancel: CancellationToken,
    last: Arc<Mutex<Option<GcReport>>>,
}

impl GcHandle {
    /// The last round that completed.
    ///
    /// ```no_run
    /// # fn demo(handle: &percolator::gc::GcHandle) {
    /// let removed = handle.last_report().map_or(0, |r| r.removed());
    /// # let _ = removed; }
    /// ```
    pub fn last_report(&self) -> Option<GcReport> {
        self.last.lock().clone()
    }

    /// Cancels the round under way (between pages; what it deleted stays deleted, which is
    /// safe), waits for the task, shuts the worker's client down; returns the last report.
    ///
    /// ```no_run
    /// # async fn demo(handle: percolator::gc::GcHandle) {
    /// let last = handle.shutdown().await;
    /// # let _ = last; }
    /// ```
    pub async fn shutdown(self) -> Option<GcReport> {
        self.cancel.cancel();
        self.tracker.wait().await;
        self.worker.shutdown().await;
        self.last.lock().clone()
    }
}
