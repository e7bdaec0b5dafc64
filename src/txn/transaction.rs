//! The transaction API: snapshot reads, buffered writes, commit.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::OnceLock;

use crate::error::{Error, Result};
use crate::txn::key::CellKey;
use crate::txn::reader::ScannedRow;
use crate::txn::session::{Session, Stats};

/// A row's columns during a scan merge: (family, qualifier) -> value.
type RowColumns = BTreeMap<(Vec<u8>, Vec<u8>), Vec<u8>>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Active,
    Committed,
    RolledBack,
}

/// A snapshot-isolated transaction. Reads see the snapshot at `start_ts` plus this
/// transaction's own writes; writes are buffered until `commit`.
///
/// The start timestamp is fetched by the first operation that needs it, and travels with that
/// operation's request (the first read, or the primary's prewrite of a transaction that only
/// writes): the snapshot is still taken after `begin`, which is all snapshot isolation and
/// real-time order ask, and the caller waits once instead of twice.
pub struct Transaction {
    session: Session,
    start_ts: OnceLock<u64>,
    /// `None` = delete.
    writes: BTreeMap<CellKey, Option<Vec<u8>>>,
    /// The first written key becomes the primary.
    first: Option<CellKey>,
    state: State,
}

impl Transaction {
    pub(crate) fn new(session: Session) -> Transaction {
        Stats::bump(&session.inner.stats.begun);
        Transaction {
            session,
            start_ts: OnceLock::new(),
            writes: BTreeMap::new(),
            first: None,
            state: State::Active,
        }
    }

    /// The snapshot timestamp, fetched now if no operation has fixed it yet.
    pub fn start_ts(&self) -> Result<u64> {
        if let Some(&ts) = self.start_ts.get() {
            return Ok(ts);
        }
        let ts = self.session.inner.timestamp()?;
        Ok(*self.start_ts.get_or_init(|| ts))
    }

    /// The start timestamp if it is fixed already (for error reports).
    fn known_start_ts(&self) -> u64 {
        self.start_ts.get().copied().unwrap_or(0)
    }

    /// HBase RPCs this transaction has made so far (reads, prewrites, commits, resolution).
    pub fn rpc_count(&self) -> u64 {
        self.session.rpcs.load(Ordering::Relaxed)
    }

    fn check_active(&self) -> Result<()> {
        match self.state {
            State::Active => Ok(()),
            State::Committed => Err(Error::TransactionClosed {
                start_ts: self.known_start_ts(),
                state: "committed",
            }),
            State::RolledBack => Err(Error::TransactionClosed {
                start_ts: self.known_start_ts(),
                state: "rolled back",
            }),
        }
    }

    /// Reads one cell at the snapshot.
    pub fn get(
        &self,
        table: &str,
        row: impl AsRef<[u8]>,
        family: impl AsRef<[u8]>,
        qualifier: impl AsRef<[u8]>,
    ) -> Result<Option<Vec<u8>>> {
        let key = CellKey::new(table, row.as_ref(), family.as_ref(), qualifier.as_ref())?;
        Ok(self.get_many(std::slice::from_ref(&key))?.pop().flatten())
    }

    /// Reads many cells (any tables and rows) at the snapshot, batched per table and row.
    pub fn get_many(&self, keys: &[CellKey]) -> Result<Vec<Option<Vec<u8>>>> {
        self.check_active()?;
        let unbuffered: Vec<CellKey> = keys
            .iter()
            .filter(|k| !self.writes.contains_key(*k))
            .cloned()
            .collect();
        let mut snapshot = self.start_ts.get().copied();
        let fetched = self.session.read(&mut snapshot, &unbuffered);
        if let Some(ts) = snapshot {
            let _ = self.start_ts.set(ts);
        }
        let mut fetched = fetched?.into_iter();
        Ok(keys
            .iter()
            .map(|k| match self.writes.get(k) {
                Some(buffered) => buffered.clone(),
                None => fetched.next().flatten(),
            })
            .collect())
    }

    /// Scans rows `[start, stop)` of `table` at the snapshot (empty `stop` = to the end), up to
    /// `limit` rows that have a visible column. Includes this transaction's own writes.
    pub fn scan(
        &self,
        table: &str,
        start: impl AsRef<[u8]>,
        stop: impl AsRef<[u8]>,
        limit: usize,
    ) -> Result<Vec<ScannedRow>> {
        self.check_active()?;
        let (start, stop) = (start.as_ref(), stop.as_ref());
        let stored = self.session.scan(
            self.start_ts()?,
            table,
            start,
            stop,
            limit.saturating_add(self.writes.len()),
        )?;
        let mut rows: BTreeMap<Vec<u8>, RowColumns> = stored
            .into_iter()
            .map(|r| {
                let cols = r.columns.into_iter().map(|(f, q, v)| ((f, q), v)).collect();
                (r.row, cols)
            })
            .collect();
        let in_range = |row: &[u8]| row >= start && (stop.is_empty() || row < stop);
        for (k, v) in self
            .writes
            .iter()
            .filter(|(k, _)| k.table == table && in_range(&k.row))
        {
            let cols = rows.entry(k.row.clone()).or_default();
            let col = (k.family.clone(), k.qualifier.clone());
            match v {
                Some(v) => cols.insert(col, v.clone()),
                None => cols.remove(&col),
            };
        }
        Ok(rows
            .into_iter()
            .filter(|(_, cols)| !cols.is_empty())
            .take(limit)
            .map(|(row, cols)| ScannedRow {
                row,
                columns: cols.into_iter().map(|((f, q), v)| (f, q, v)).collect(),
            })
            .collect())
    }

    /// Buffers a write of `value` to one cell.
    pub fn set(
        &mut self,
        table: &str,
        row: impl AsRef<[u8]>,
        family: impl AsRef<[u8]>,
        qualifier: impl AsRef<[u8]>,
        value: impl Into<Vec<u8>>,
    ) -> Result<()> {
        let key = CellKey::new(table, row.as_ref(), family.as_ref(), qualifier.as_ref())?;
        self.set_key(key, value.into())
    }

    fn set_key(&mut self, key: CellKey, value: Vec<u8>) -> Result<()> {
        let limit = self.session.inner.opts.max_value_size;
        if value.len() > limit {
            return Err(Error::ValueTooLarge {
                table: key.table,
                row: key.row,
                size: value.len(),
                limit,
            });
        }
        self.buffer(key, Some(value))
    }

    /// Whether the cell has a value at the snapshot (this transaction's own writes included).
    pub fn key_exists(
        &self,
        table: &str,
        row: impl AsRef<[u8]>,
        family: impl AsRef<[u8]>,
        qualifier: impl AsRef<[u8]>,
    ) -> Result<bool> {
        Ok(self.get(table, row, family, qualifier)?.is_some())
    }

    /// Buffers a write of `value` to a cell that must not have a value yet (put-if-absent):
    /// `KeyExists` (fatal) if it has one at the snapshot. A transaction that gives it a value
    /// after the snapshot makes this one's commit fail with a write conflict, as for any
    /// write, so an insert never overwrites a value it did not see.
    pub fn insert(
        &mut self,
        table: &str,
        row: impl AsRef<[u8]>,
        family: impl AsRef<[u8]>,
        qualifier: impl AsRef<[u8]>,
        value: impl Into<Vec<u8>>,
    ) -> Result<()> {
        let key = CellKey::new(table, row.as_ref(), family.as_ref(), qualifier.as_ref())?;
        if self.get_many(std::slice::from_ref(&key))?[0].is_some() {
            return Err(Error::KeyExists {
                column: key.column(),
                table: key.table,
                row: key.row,
                start_ts: self.known_start_ts(),
            });
        }
        self.set_key(key, value.into())
    }

    /// Buffers a transactional delete of one cell (a Delete write record, never an HBase
    /// delete marker: docs/design.md invariant 6).
    pub fn delete(
        &mut self,
        table: &str,
        row: impl AsRef<[u8]>,
        family: impl AsRef<[u8]>,
        qualifier: impl AsRef<[u8]>,
    ) -> Result<()> {
        let key = CellKey::new(table, row.as_ref(), family.as_ref(), qualifier.as_ref())?;
        self.buffer(key, None)
    }

    fn buffer(&mut self, key: CellKey, value: Option<Vec<u8>>) -> Result<()> {
        self.check_active()?;
        if self
            .session
            .inner
            .opts
            .schema
            .is_percolator_family(&key.family)
        {
            return Err(Error::IllegalArgument {
                message: format!("{key} is in a percolator family"),
            });
        }
        if self.first.is_none() {
            self.first = Some(key.clone());
        }
        self.writes.insert(key, value);
        Ok(())
    }

    /// Commits the buffered writes and returns the commit timestamp (`start_ts` for a
    /// transaction that wrote nothing: it needs no commit).
    pub fn commit(mut self) -> Result<u64> {
        self.check_active()?;
        self.state = State::Committed;
        let Some(primary) = self.first.take() else {
            return self.start_ts();
        };
        let mut writes = std::mem::take(&mut self.writes);
        let primary_value = writes.remove(&primary).flatten();
        let mut ordered = Vec::with_capacity(writes.len() + 1);
        ordered.push((primary, primary_value));
        ordered.extend(writes);
        self.session.commit(self.start_ts.get().copied(), ordered)
    }

    /// Discards the buffered writes. Nothing was written before commit, so nothing to undo.
    pub fn rollback(mut self) {
        self.state = State::RolledBack;
        self.writes.clear();
    }
}
