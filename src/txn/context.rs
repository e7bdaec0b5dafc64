//! `Context`: what every transaction of one client shares (HBase, the timestamp source,
//! options, liveness, counters, the tables already checked, the primaries under heartbeat,
//! background work). Its fields are private; protocol steps go through its methods.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt;
use smallvec::SmallVec;

use crate::error::{Error, Result};
use crate::hbase::{Get, RowResult};
use crate::key::CellKey;
use crate::oracle::TimestampSource;
use crate::txn::background::Background;
use crate::txn::families::{Families, KnownTable, TableFamilies};
use crate::txn::fusion::ReadFusion;
use crate::txn::granularity::LockGranularity;
use crate::txn::liveness::Liveness;
use crate::txn::meta::{
    meta_row, read_row, MetaCache, GLOBAL_ROW, META_FAMILY, META_REFRESH, MIG_BUSY_STATES,
    MIG_STATE,
};
use crate::txn::open_txns::OpenTransactions;
use crate::txn::options::{Seam, TxnOptions};
use crate::txn::primaries::Primaries;
use crate::txn::refresh::Refreshed;
use crate::txn::schema::Schema;
use crate::txn::stats::Stats;
use crate::txn::store::HBaseAccess;
use crate::txn::transitions::WaitsOutTransitions;

pub(crate) struct Context {
    store: Arc<dyn HBaseAccess>,
    tso: Arc<dyn TimestampSource>,
    opts: TxnOptions,
    liveness: Liveness,
    stats: Stats,
    /// Tables found transactional, with their families (refreshed when a family is missing).
    tables: TableFamilies,
    primaries: Primaries,
    /// Set by `kill` or an injected crash: the client behaves as if its process had died.
    dead: AtomicBool,
    background: Background,
    reads: ReadFusion,
    meta: MetaCache,
    open: Arc<OpenTransactions>,
    /// The GC safe point: every read checks it, so it has a cell of its own rather than a
    /// place behind the meta cache's hash map.
    safe_point: Refreshed<u64>,
}

impl Context {
    pub fn new(
        store: Arc<dyn HBaseAccess>,
        tso: Arc<dyn TimestampSource>,
        opts: TxnOptions,
        liveness: Liveness,
        runtime: tokio::runtime::Handle,
    ) -> Context {
        Context {
            store: Arc::new(WaitsOutTransitions::new(store, opts.settle_timeout)),
            tso,
            opts,
            liveness,
            stats: Stats::default(),
            tables: TableFamilies::default(),
            primaries: Primaries::default(),
            dead: AtomicBool::new(false),
            background: Background::new(runtime),
            reads: ReadFusion::default(),
            meta: MetaCache::default(),
            open: Arc::default(),
            safe_point: Refreshed::new(META_REFRESH),
        }
    }

    pub fn store(&self) -> &dyn HBaseAccess {
        self.store.as_ref()
    }

    /// Reads, fused with other transactions' reads of the same moment (see `fusion`).
    pub async fn get_many(&self, table: &str, gets: &[Get]) -> Result<Vec<RowResult>> {
        self.reads.get_many(self.store(), table, gets).await
    }

    pub fn opts(&self) -> &TxnOptions {
        &self.opts
    }

    pub fn schema(&self) -> &Schema {
        &self.opts.schema
    }

    pub fn liveness(&self) -> &Liveness {
        &self.liveness
    }

    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// `table` as this client found it, once its families were read.
    pub fn known_table(&self, table: &str) -> Option<Families> {
        self.tables.cached(table)
    }

    pub fn primaries(&self) -> &Primaries {
        &self.primaries
    }

    pub fn background(&self) -> &Background {
        &self.background
    }

    pub fn now_ms(&self) -> u64 {
        self.opts.clock.now_ms()
    }

    pub fn is_dead(&self) -> bool {
        self.dead.load(Ordering::SeqCst)
    }

    /// Makes this client behave as a dead process: no heartbeats (the heartbeat task stops
    /// when it sees this, and the liveness row expires), no background commits.
    pub fn die(&self) {
        self.dead.store(true, Ordering::SeqCst);
    }

    /// True when the client must die at `seam` (failpoint or injector).
    pub fn crash_at(&self, seam: Seam) -> bool {
        failpoint_fires(seam) || self.opts.crash_injector.as_ref().is_some_and(|f| f(seam))
    }

    /// `table`'s row of the meta table, cached for at most `META_REFRESH`.
    pub async fn table_meta(&self, table: &str) -> Result<Arc<RowResult>> {
        self.meta
            .row(self.store(), &self.opts.schema.meta_table, &meta_row(table))
            .await
    }

    /// `table`'s lock granularity, from its meta row (cached like every meta row: the choice
    /// never changes once the table is transactional, see `granularity`).
    pub async fn lock_granularity(&self, table: &str) -> Result<LockGranularity> {
        LockGranularity::of_meta_row(table, &*self.table_meta(table).await?)
    }

    /// A row of the meta table read now (whoever changed it sees the change at once).
    pub async fn refresh_meta_row(&self, row: &[u8]) -> Result<Arc<RowResult>> {
        self.meta
            .refresh(self.store(), &self.opts.schema.meta_table, row)
            .await
    }

    /// The start timestamps of this client's open transactions.
    pub fn open_txns(&self) -> &Arc<OpenTransactions> {
        &self.open
    }

    /// `SnapshotTooOld` if GC's safe point, as cached, is above `start_ts` (docs/gc.md).
    pub async fn check_snapshot(&self, start_ts: u64) -> Result<()> {
        match self.snapshot_checked(start_ts, Instant::now()) {
            Some(checked) => checked,
            // Boxed: a read is rare, and its future would otherwise size every commit's.
            None => Box::pin(self.check_snapshot_read(start_ts)).await,
        }
    }

    /// [`Context::check_snapshot`] when the cached safe point is young at `now` (the
    /// caller's reading of the clock); `None` when it must be read.
    pub fn snapshot_checked(&self, start_ts: u64, now: Instant) -> Option<Result<()>> {
        let safe_point = self.safe_point.young(now)?;
        Some(crate::txn::safe_point::check(start_ts, safe_point))
    }

    async fn check_snapshot_read(&self, start_ts: u64) -> Result<()> {
        let meta_table = &self.opts.schema.meta_table;
        let safe_point = self
            .safe_point
            .get(Instant::now, || async {
                let global = read_row(self.store(), meta_table, GLOBAL_ROW).await?;
                crate::txn::safe_point::decode(&global, meta_table)
            })
            .await?;
        crate::txn::safe_point::check(start_ts, safe_point)
    }

    pub fn timestamp(&self) -> impl Future<Output = Result<u64>> + Send + '_ {
        self.timestamp_asked_at(Instant::now())
            .map(|stamped| Ok(stamped?.ts))
    }

    /// A timestamp asked for at `asked` (an instant the caller already read), with when it
    /// came and the wait: a commit times its phases with the same clock reads. The source's
    /// own future, mapped, not one around it: every write transaction waits on it.
    pub fn timestamp_asked_at(
        &self,
        asked: Instant,
    ) -> impl Future<Output = Result<Stamped>> + Send + '_ {
        Stats::bump(&self.stats.timestamps);
        self.tso.timestamp().map(move |ts| {
            let came = Instant::now();
            let waited = came - asked;
            crate::metrics::seconds(crate::metrics::key!(crate::metrics::ORACLE_WAIT), waited);
            Ok(Stamped {
                ts: ts?,
                came,
                waited,
            })
        })
    }

    /// A start timestamp at hand for a transaction that read nothing, if the source has a
    /// young enough one (`TxnOptions::blind_write_start_age`).
    pub fn recent_timestamp(&self) -> Option<u64> {
        let age = self.opts.blind_write_start_age;
        if age.is_zero() {
            return None;
        }
        let ts = self.tso.recent_timestamp(age)?;
        Stats::bump(&self.stats.timestamps);
        Stats::bump(&self.stats.spare_timestamps);
        Some(ts)
    }

    /// Fails with `NotTransactional` unless the table has the percolator families (checked once
    /// per table per client) and is not being migrated (the meta row, cached 5 s).
    pub async fn check_table(&self, table: &str) -> Result<LockGranularity> {
        // The families first, as in `check_families`.
        self.table_families(table, false).await?;
        Ok(self.check_not_migrating(table).await?.0)
    }

    /// [`Context::check_table`] for every key's table, and `FamilyNotFound` if a key names a
    /// family its table does not have: a read would otherwise find no write record and answer
    /// "absent". A family missing from a cached descriptor is looked up once more, since it
    /// may have been added since (a descriptor just fetched is not fetched again). Returns
    /// each table's lock granularity, read from the same meta row as its migration marker.
    /// `now` is the caller's reading of the clock, taken just before: whether a cached meta
    /// row is still young is judged by it.
    pub async fn check_families<'k>(
        &self,
        probes: &'k [impl FamilyProbe],
        now: Instant,
    ) -> Result<Granularities<'k>> {
        match self.checked_from_cache(probes, now) {
            Some(checked) => checked,
            // Boxed: a read is rare, and its future would otherwise size every commit's.
            None => Box::pin(self.check_families_read(probes)).await,
        }
    }

    /// [`Context::check_families`] when every family is in a cached descriptor and every meta
    /// row is cached and young, as the read would find them; `None` when one is not.
    pub fn checked_from_cache<'k>(
        &self,
        probes: &'k [impl FamilyProbe],
        now: Instant,
    ) -> Option<Result<Granularities<'k>>> {
        let mut tables = Granularities(SmallVec::new());
        for probe in probes {
            let (table, family) = probe.table_family();
            let known = self.tables.cached(table)?;
            if !known.contains(family) {
                return None;
            }
            if tables.0.last().map(|(t, _, _)| *t) != Some(table) {
                let meta = known.meta().young(now)?;
                match not_migrating(table, meta) {
                    Ok((granularity, meta)) => tables.0.push((table, granularity, meta)),
                    Err(e) => return Some(Err(e)),
                }
            }
        }
        Some(Ok(tables))
    }

    async fn check_families_read<'k>(
        &self,
        probes: &'k [impl FamilyProbe],
    ) -> Result<Granularities<'k>> {
        let mut tables = Granularities(SmallVec::new());
        for probe in probes {
            let (table, family) = probe.table_family();
            // The families first: a client that finds them for the first time reads the meta
            // row again, and the granularity must come from that read (see `granularity`).
            self.check_family(table, family).await?;
            // Keys come grouped by table: the meta row is looked up once per run of a table.
            if tables.0.last().map(|(t, _, _)| *t) != Some(table) {
                let (granularity, meta) = self.check_not_migrating(table).await?;
                tables.0.push((table, granularity, meta));
            }
        }
        Ok(tables)
    }

    /// `FamilyNotFound` unless transactional table `table` has `family` (see
    /// [`Context::check_families`]).
    pub async fn check_family(&self, table: &str, family: &[u8]) -> Result<()> {
        let (families, cached) = self.table_families(table, false).await?;
        if families.contains(family)
            || (cached && self.table_families(table, true).await?.0.contains(family))
        {
            return Ok(());
        }
        Err(Error::FamilyNotFound {
            table: table.to_string(),
            family: String::from_utf8_lossy(family).into_owned(),
            message: format!("its families are {}", families.names().join(", ")),
        })
    }

    /// The table's families, and whether they came from the cache (else they were just
    /// fetched and checked, by this caller or by the one whose read it waited for).
    async fn table_families(&self, table: &str, refresh: bool) -> Result<(Families, bool)> {
        if !refresh && let Some(families) = self.tables.cached(table) {
            return Ok((families, true));
        }
        let families = self
            .tables
            .read(table, || async {
                Stats::bump(&self.stats.hbase_rpcs);
                let desc = self.store.table_descriptor(table).await?;
                self.opts.schema.check(&desc)?;
                // The meta row (lock granularity, migration marker) is written before the
                // families are added: read now, after they were seen, it is the final one,
                // whatever an earlier read of it cached.
                let row = meta_row(table);
                self.refresh_meta_row(&row).await?;
                let names = desc.families.into_iter().map(|f| f.name);
                Ok(Arc::new(KnownTable::new(names, self.meta.cell(&row))))
            })
            .await?;
        Ok((families, false))
    }
}

impl Context {
    /// Fails with `NotTransactional` while `percolator migrate` adopts the table's data or
    /// returns it to plain use (docs/design.md invariant 11): a read then would miss values
    /// not yet adopted. The migration writes its marker before it adds the families and
    /// waits out `META_REFRESH`, so a client that sees the families sees the marker.
    /// The table's granularity, and the meta row it came from.
    async fn check_not_migrating(&self, table: &str) -> Result<(LockGranularity, Arc<RowResult>)> {
        not_migrating(table, self.table_meta(table).await?)
    }
}

/// [`Context::check_not_migrating`] on `table`'s meta row `meta`.
fn not_migrating(table: &str, meta: Arc<RowResult>) -> Result<(LockGranularity, Arc<RowResult>)> {
    match meta.value(META_FAMILY, MIG_STATE) {
        Some(state) if MIG_BUSY_STATES.contains(&state) => Err(Error::NotTransactional {
            table: table.to_string(),
            reason: format!(
                "migration in progress ({}; see `percolator migrate status`)",
                String::from_utf8_lossy(state)
            ),
        }),
        _ => Ok((LockGranularity::of_meta_row(table, &meta)?, meta)),
    }
}

/// A timestamp from the source, timed.
pub(crate) struct Stamped {
    pub ts: u64,
    /// When it came.
    pub came: Instant,
    /// How long it took to come.
    pub waited: Duration,
}

/// What names a table and a family: a key read, or a family a commit writes.
pub(crate) trait FamilyProbe: Sync {
    fn table_family(&self) -> (&str, &[u8]);
}

impl FamilyProbe for CellKey {
    fn table_family(&self) -> (&str, &[u8]) {
        (&self.table, &self.family)
    }
}

impl FamilyProbe for (&str, &[u8]) {
    fn table_family(&self) -> (&str, &[u8]) {
        *self
    }
}

/// The lock granularity of each table [`Context::check_families`] checked, with the meta
/// row it was read from (in place for the one table most commits write).
pub(crate) struct Granularities<'k>(SmallVec<[(&'k str, LockGranularity, Arc<RowResult>); 1]>);

impl Granularities<'_> {
    /// `table`'s, when it was checked (cell otherwise: only checked tables are written).
    pub fn of(&self, table: &str) -> LockGranularity {
        self.entry(table)
            .map_or(LockGranularity::Cell, |(_, g, _)| *g)
    }

    /// `table`'s meta row as the check read it, when it was checked.
    pub fn meta_row(&self, table: &str) -> Option<&Arc<RowResult>> {
        self.entry(table).map(|(_, _, m)| m)
    }

    fn entry(&self, table: &str) -> Option<&(&str, LockGranularity, Arc<RowResult>)> {
        self.0.iter().find(|(t, _, _)| *t == table)
    }
}

#[cfg(feature = "failpoints")]
fn failpoint_fires(seam: Seam) -> bool {
    fail::eval(seam.name(), |_| true).unwrap_or(false)
}

#[cfg(not(feature = "failpoints"))]
fn failpoint_fires(_seam: Seam) -> bool {
    false
}
