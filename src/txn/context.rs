//! `Context`: what every transaction of one client shares (HBase, the timestamp source,
//! options, liveness, counters, the tables already checked, the primaries under heartbeat,
//! background work). State only: what checks it, or acts on it, lives in the module of that
//! check (`table_checks`, `safe_point`, `timestamps`, `options` for crash injection).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::error::Result;
use crate::hbase::{Get, RowResult};
use crate::oracle::TimestampSource;
use crate::txn::background::Background;
use crate::txn::families::{Families, TableFamilies};
use crate::txn::fusion::ReadFusion;
use crate::txn::liveness::Liveness;
use crate::txn::meta::{MetaCache, META_REFRESH};
use crate::txn::open_txns::OpenTransactions;
use crate::txn::options::TxnOptions;
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

    /// The start timestamps of this client's open transactions.
    pub fn open_txns(&self) -> &Arc<OpenTransactions> {
        &self.open
    }

    pub fn tso(&self) -> &dyn TimestampSource {
        self.tso.as_ref()
    }

    /// The tables found transactional (see `table_checks`).
    pub fn tables(&self) -> &TableFamilies {
        &self.tables
    }

    /// The meta rows read (see `table_checks`).
    pub fn meta(&self) -> &MetaCache {
        &self.meta
    }

    /// The GC safe point as last read (see `safe_point`).
    pub fn safe_point(&self) -> &Refreshed<u64> {
        &self.safe_point
    }
}
