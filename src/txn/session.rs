//! Shared client state (`Inner`), and `Session`: the handle every protocol step works through,
//! which counts the RPCs it makes for its transaction.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex, RwLock};
use serde::Serialize;

use crate::error::{Error, Result};
use crate::hbase::{CheckAndMutate, Get, RowResult, Scan};
use crate::oracle::TimestampSource;
use crate::txn::access::{HBaseAccess, WithTimestamp};
use crate::txn::codec::Lock;
use crate::txn::executor::Executor;
use crate::txn::key::CellKey;
use crate::txn::liveness::Liveness;
use crate::txn::options::{Seam, TxnOptions};
use crate::txn::secondaries::Backlog;
use crate::txn::twopc::Mutation;

/// Counters a client exposes (see `Client::stats`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct ClientStats {
    pub begun: u64,
    pub committed: u64,
    /// Commits that failed and rolled back their own locks (conflicts, locked cells).
    pub aborted: u64,
    pub hbase_rpcs: u64,
    pub timestamps: u64,
    /// Locks of other transactions this client rolled forward.
    pub rolled_forward: u64,
    /// Locks of other transactions this client rolled back (or primaries it fenced).
    pub rolled_back: u64,
    /// Times a read or prewrite backed off because a live transaction held a lock.
    pub lock_waits: u64,
    pub heartbeats: u64,
}

#[derive(Default)]
pub(crate) struct Stats {
    pub begun: AtomicU64,
    pub committed: AtomicU64,
    pub aborted: AtomicU64,
    pub hbase_rpcs: AtomicU64,
    pub timestamps: AtomicU64,
    pub rolled_forward: AtomicU64,
    pub rolled_back: AtomicU64,
    pub lock_waits: AtomicU64,
    pub heartbeats: AtomicU64,
}

impl Stats {
    pub fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> ClientStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        ClientStats {
            begun: get(&self.begun),
            committed: get(&self.committed),
            aborted: get(&self.aborted),
            hbase_rpcs: get(&self.hbase_rpcs),
            timestamps: get(&self.timestamps),
            rolled_forward: get(&self.rolled_forward),
            rolled_back: get(&self.rolled_back),
            lock_waits: get(&self.lock_waits),
            heartbeats: get(&self.heartbeats),
        }
    }
}

/// A committing transaction's primary lock, kept so the keeper can refresh its wall time and
/// the commit point uses the bytes actually stored.
pub(crate) struct PrimaryGuard {
    /// The primary as prewritten: shared with the commit, not copied.
    pub prewritten: Arc<Mutation>,
    /// The lock and its bytes as a heartbeat rewrote them, once one has.
    pub refreshed: Option<(Lock, Vec<u8>)>,
    /// Cleared by the commit point: nothing refreshes the lock after that.
    pub live: bool,
}

impl PrimaryGuard {
    pub fn new(prewritten: Arc<Mutation>) -> Self {
        PrimaryGuard {
            prewritten,
            refreshed: None,
            live: true,
        }
    }

    /// Stops heartbeats and returns what the commit point needs: the lock as stored now.
    pub fn retire(&mut self) -> PrimaryGuard {
        self.live = false;
        PrimaryGuard {
            prewritten: Arc::clone(&self.prewritten),
            refreshed: self.refreshed.clone(),
            live: false,
        }
    }

    pub fn key(&self) -> &CellKey {
        &self.prewritten.key
    }

    /// The lock as stored now (as far as this client knows).
    pub fn lock(&self) -> &Lock {
        self.refreshed
            .as_ref()
            .map_or(&self.prewritten.lock, |(lock, _)| lock)
    }

    /// The lock's bytes as stored now (as far as this client knows).
    pub fn bytes(&self) -> &[u8] {
        self.refreshed
            .as_ref()
            .map_or(&self.prewritten.bytes, |(_, bytes)| bytes)
    }
}

pub(crate) struct KeeperHandle {
    pub stop: Arc<(Mutex<bool>, Condvar)>,
    pub thread: JoinHandle<()>,
}

pub(crate) struct Inner {
    pub store: Arc<dyn HBaseAccess>,
    pub tso: Arc<dyn TimestampSource>,
    pub opts: TxnOptions,
    pub liveness: Liveness,
    pub executor: Executor,
    pub stats: Stats,
    /// Tables found transactional, with their families (refreshed when a family is missing).
    pub checked_tables: RwLock<HashMap<String, Arc<HashSet<Vec<u8>>>>>,
    pub primaries: Mutex<HashMap<u64, Arc<Mutex<PrimaryGuard>>>>,
    /// Set by `Client::kill`: the client behaves as if its process had died.
    pub dead: AtomicBool,
    pub keeper: Mutex<Option<KeeperHandle>>,
    /// Secondaries of committed transactions waiting for the executor's collector.
    pub backlog: Backlog,
}

impl Inner {
    pub fn now_ms(&self) -> u64 {
        self.opts.clock.now_ms()
    }

    pub fn is_dead(&self) -> bool {
        self.dead.load(Ordering::SeqCst)
    }

    /// True when the client must die at `seam` (failpoint or injector).
    pub fn crash_at(&self, seam: Seam) -> bool {
        failpoint_fires(seam) || self.opts.crash_injector.as_ref().is_some_and(|f| f(seam))
    }

    pub fn timestamp(&self) -> Result<u64> {
        Stats::bump(&self.stats.timestamps);
        self.tso.get_timestamp()
    }

    /// Fails with `NotTransactional` unless the table has the percolator families. Checked once
    /// per table per client.
    pub fn check_table(&self, table: &str) -> Result<()> {
        self.table_families(table, false).map(|_| ())
    }

    /// [`Inner::check_table`] for every key's table, and `FamilyNotFound` if a key names a
    /// family its table does not have: a read
    /// would otherwise find no write record and answer "absent". A family missing from the
    /// cached descriptor is looked up once more, since it may have been added since.
    pub fn check_families<'k>(&self, keys: impl IntoIterator<Item = &'k CellKey>) -> Result<()> {
        for key in keys {
            if self
                .table_families(&key.table, false)?
                .contains(&key.family)
                || self.table_families(&key.table, true)?.contains(&key.family)
            {
                continue;
            }
            return Err(Error::FamilyNotFound {
                table: key.table.clone(),
                family: String::from_utf8_lossy(&key.family).into_owned(),
                message: "the table has no such column family".into(),
            });
        }
        Ok(())
    }

    fn table_families(&self, table: &str, refresh: bool) -> Result<Arc<HashSet<Vec<u8>>>> {
        if !refresh {
            if let Some(families) = self.checked_tables.read().get(table) {
                return Ok(families.clone());
            }
        }
        Stats::bump(&self.stats.hbase_rpcs);
        let desc = self.store.table_descriptor(table)?;
        self.opts.schema.check(&desc)?;
        let families: Arc<HashSet<Vec<u8>>> =
            Arc::new(desc.families.into_iter().map(|f| f.name).collect());
        self.checked_tables
            .write()
            .insert(table.to_string(), families.clone());
        Ok(families)
    }

    /// Makes this client behave as a dead process: no more heartbeats (its liveness row
    /// expires), no background commits, no new transactions.
    pub fn die(&self) {
        self.dead.store(true, Ordering::SeqCst);
        self.stop_keeper(false);
    }

    /// Stops the keeper thread; with `remove_row`, also deletes the liveness row.
    pub fn stop_keeper(&self, remove_row: bool) {
        let Some(keeper) = self.keeper.lock().take() else {
            return;
        };
        {
            let (flag, cv) = &*keeper.stop;
            *flag.lock() = true;
            cv.notify_all();
        }
        if keeper.thread.thread().id() != std::thread::current().id() {
            let _ = keeper.thread.join();
        }
        if remove_row {
            if let Err(e) = self.liveness.remove(self.store.as_ref()) {
                tracing::warn!(error = %e, "could not remove liveness row");
            }
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        let dead = self.is_dead();
        self.stop_keeper(!dead);
        self.executor.shutdown();
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

/// What protocol steps work through: the client plus the RPC counter of one transaction.
#[derive(Clone)]
pub(crate) struct Session {
    pub inner: Arc<Inner>,
    pub rpcs: Arc<AtomicU64>,
}

impl Session {
    pub fn new(inner: Arc<Inner>) -> Session {
        Session {
            inner,
            rpcs: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Counts one HBase round trip, for this transaction and for the client.
    pub fn count(&self) {
        self.rpcs.fetch_add(1, Ordering::Relaxed);
        Stats::bump(&self.inner.stats.hbase_rpcs);
    }

    pub fn get_many(&self, table: &str, gets: &[Get]) -> Result<Vec<RowResult>> {
        self.count();
        let rows = self.inner.store.get_many(table, gets)?;
        check_rows(gets.len(), rows)
    }

    /// A read that carries a fresh timestamp (a transaction's first read fixes its snapshot):
    /// the gets built from it go out as soon as it arrives. Returns the timestamp and rows.
    pub fn get_many_fresh(
        &self,
        table: &str,
        asked: usize,
        gets: WithTimestamp<Vec<Get>>,
    ) -> Result<(u64, Vec<RowResult>)> {
        self.count();
        Stats::bump(&self.inner.stats.timestamps);
        let (ts, rows) = self
            .inner
            .store
            .get_many_at(table, self.inner.tso.as_ref(), gets)?;
        Ok((ts, check_rows(asked, rows)?))
    }

    /// A checkAndMutate built from a fresh timestamp (see
    /// [`HBaseAccess::check_and_mutate_at`] for the two levels of result).
    pub fn cas_fresh(
        &self,
        table: &str,
        cam: WithTimestamp<CheckAndMutate>,
    ) -> Result<(u64, Result<bool>)> {
        self.count();
        Stats::bump(&self.inner.stats.timestamps);
        self.inner
            .store
            .check_and_mutate_at(table, self.inner.tso.as_ref(), cam)
    }

    /// The raw lock cell of `key` (one Get).
    pub fn lock_cell(&self, key: &CellKey) -> Result<Option<Vec<u8>>> {
        let schema = &self.inner.opts.schema;
        let q = schema.qualifier(key);
        let get = Get::new(key.row.clone()).column(schema.lock_family.clone(), q.clone());
        let rows = self.get_many(&key.table, &[get])?;
        Ok(rows[0].value(&schema.lock_family, &q).map(<[u8]>::to_vec))
    }

    pub fn cas(&self, table: &str, cam: &CheckAndMutate) -> Result<bool> {
        self.count();
        self.inner.store.check_and_mutate(table, cam)
    }

    /// Overlapping checkAndMutates (one RPC each); results in order.
    pub fn cas_all(&self, calls: &[(&str, &CheckAndMutate)]) -> Vec<Result<bool>> {
        calls.iter().for_each(|_| self.count());
        self.inner.store.check_and_mutate_all(calls)
    }

    pub fn scan_page(&self, table: &str, scan: &Scan, rows: i32) -> Result<Vec<RowResult>> {
        self.count();
        self.inner.store.scan_page(table, scan, rows)
    }
}

fn check_rows(asked: usize, rows: Vec<RowResult>) -> Result<Vec<RowResult>> {
    if rows.len() != asked {
        return Err(Error::Protocol {
            peer: crate::error::Peer::HBase,
            message: format!("asked for {asked} rows, got {}", rows.len()),
        });
    }
    Ok(rows)
}
