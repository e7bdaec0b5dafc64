//! The snapshot reader (docs/design.md invariant 5): one Get per row fetches each column's
//! lock cell and newest write records, so a committed short value costs one round trip. Locks
//! at or below the snapshot are resolved or waited out before any value is returned.

use std::collections::BTreeMap;
use std::time::Instant;

use crate::error::{Error, Result};
use crate::format::{
    column_qualifier, decode_lock_state, split_column_qualifier, Lock, LockState,
    ROW_LOCK_QUALIFIER,
};
use crate::hbase::{Cell, Get, RowResult, Scan, TimeRange};
use crate::key::CellKey;
use crate::txn::actions::{corrupted, newest_change, read_column, ts, ReadDecision};
use crate::txn::granularity::LockGranularity;
use crate::txn::resolver::LockResolver;
use crate::txn::schema::Schema;
use crate::txn::session::Session;
use crate::txn::store::row_after;
use crate::txn::table_checks;

/// Write-record versions fetched per column on the first try: the newest is almost always a
/// commit, and a read that meets rollback records asks again for 8 times as many. A second
/// version up front would cost every read a cell to cover a case that is rare.
pub const FIRST_VERSIONS: i32 = 1;
/// Rows per scan round trip.
const SCAN_PAGE: i32 = 256;

/// One row returned by a transactional scan: its visible columns as (family, qualifier, value).
///
/// ```
/// let row = percolator::txn::ScannedRow { row: b"r1".to_vec(), columns: vec![] };
/// assert!(row.columns.is_empty());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScannedRow {
    pub row: Vec<u8>,
    pub columns: Vec<(Vec<u8>, Vec<u8>, Vec<u8>)>,
}

/// Where a transactional scan stands: the rows `[start, stop)` of a table, in either order.
#[derive(Clone, Debug)]
pub(crate) struct ScanCursor {
    pub table: String,
    start: Vec<u8>,
    stop: Vec<u8>,
    reverse: bool,
    /// The bound the next page starts from (inclusive).
    from: Vec<u8>,
    /// A row the next page must drop (the bound is inclusive, the previous page had it).
    skip: Option<Vec<u8>>,
    pub done: bool,
}

impl ScanCursor {
    pub fn new(table: &str, start: &[u8], stop: &[u8], reverse: bool) -> ScanCursor {
        ScanCursor {
            table: table.to_string(),
            start: start.to_vec(),
            stop: stop.to_vec(),
            reverse,
            // Reversed, HBase starts at its (inclusive) start row and goes down; our stop is
            // exclusive, so it is skipped if present.
            from: if reverse {
                stop.to_vec()
            } else {
                start.to_vec()
            },
            skip: (reverse && !stop.is_empty()).then(|| stop.to_vec()),
            done: false,
        }
    }

    pub fn in_range(&self, row: &[u8]) -> bool {
        row >= self.start.as_slice() && (self.stop.is_empty() || row < self.stop.as_slice())
    }

    pub fn reverse(&self) -> bool {
        self.reverse
    }

    fn scan(&self, schema: &Schema, snapshot: u64) -> Scan {
        let scan = if self.reverse {
            // Down to the first row: a reversed scan's stop row is exclusive, and ours is not.
            Scan::range(self.from.clone(), Vec::new()).reversed(true)
        } else {
            Scan::range(self.from.clone(), self.stop.clone())
        };
        scan.family(schema.lock_family.clone())
            .family(schema.write_family.clone())
            .time_range(TimeRange::up_to(ts(snapshot)))
            .max_versions(FIRST_VERSIONS)
    }
}

/// Values read, in the order of the keys asked for.
type Values = Vec<Option<Vec<u8>>>;

pub(crate) struct SnapshotReader<'a> {
    session: &'a Session,
    snapshot: u64,
}

impl<'a> SnapshotReader<'a> {
    pub fn new(session: &'a Session, snapshot: u64) -> Self {
        SnapshotReader { session, snapshot }
    }

    /// Reads `keys` (any tables and rows); values in the order of `keys`.
    pub async fn read(&self, keys: &[CellKey]) -> Result<Vec<Option<Vec<u8>>>> {
        Ok(self.read_keys(keys, false).await?.0)
    }

    /// Reads `keys` as [`read`](Self::read) does, and for each also the commit_ts of its
    /// newest change at any version (0 if none), taken from the same row read that found no
    /// lock at or below the snapshot: every transaction that started before the snapshot is
    /// settled in it, so a newest change above the snapshot is one the values do not show.
    pub async fn read_with_newest(&self, keys: &[CellKey]) -> Result<Vec<(Option<Vec<u8>>, u64)>> {
        let (values, newest) = self.read_keys(keys, true).await?;
        Ok(values.into_iter().zip(newest).collect())
    }

    /// Values, and newest changes (all 0 unless `newest`), in the order of `keys`.
    async fn read_keys(&self, keys: &[CellKey], newest: bool) -> Result<(Values, Vec<u64>)> {
        // The common case, one table, reads the keys where they are.
        if keys.iter().all(|k| k.table == keys[0].table) {
            return self.read_table(keys, newest).await;
        }
        let mut by_table: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (i, k) in keys.iter().enumerate() {
            by_table.entry(k.table.as_str()).or_default().push(i);
        }
        let mut values = vec![None; keys.len()];
        let mut newest_changes = vec![0; keys.len()];
        for idxs in by_table.into_values() {
            let table_keys: Vec<CellKey> = idxs.iter().map(|&i| keys[i].clone()).collect();
            let (v, n) = self.read_table(&table_keys, newest).await?;
            for ((i, v), n) in idxs.into_iter().zip(v).zip(n) {
                values[i] = v;
                newest_changes[i] = n;
            }
        }
        Ok((values, newest_changes))
    }

    /// `newest`: also fetch write records above the snapshot and report each key's newest
    /// change.
    async fn read_table(&self, keys: &[CellKey], newest: bool) -> Result<(Values, Vec<u64>)> {
        let Some(first) = keys.first() else {
            return Ok((Vec::new(), Vec::new()));
        };
        let table = first.table.as_str();
        let ctx = self.session.ctx();
        // A table without the percolator families is a typed error, not FamilyNotFound; a key
        // in a family the table lacks is FamilyNotFound, not "absent".
        let granularity = table_checks::check_families(ctx, keys, Instant::now())
            .await?
            .of(table);
        let schema = ctx.schema();
        let resolver = LockResolver::new(self.session);
        let qualifiers: Vec<Vec<u8>> = keys.iter().map(|k| schema.qualifier(k)).collect();
        let mut out: Vec<Option<Vec<u8>>> = vec![None; keys.len()];
        let mut newest_changes = vec![0; keys.len()];
        let mut pending: Vec<usize> = (0..keys.len()).collect();
        let mut versions = FIRST_VERSIONS;
        let started = Instant::now();
        let mut waits = 0u32;
        while !pending.is_empty() {
            let up_to = (!newest).then_some(self.snapshot);
            let (gets, members) = row_gets(
                schema,
                granularity,
                keys,
                &qualifiers,
                &pending,
                up_to,
                versions,
            );
            let rows = self.session.get_many(table, &gets).await?;
            let mut retry = Vec::new();
            let mut fetch = Vec::new();
            let mut more_versions = false;
            let mut waiting = false;
            for (members, row) in members.iter().zip(&rows) {
                for &i in members {
                    let key = &keys[i];
                    let q = &qualifiers[i];
                    let column =
                        fetched_column(schema, granularity, row, q, key, self.snapshot, versions)?;
                    if newest && !matches!(column.decision, ReadDecision::Blocked(_)) {
                        newest_changes[i] = newest_change(&column.writes, column.complete)
                            .map_err(|e| corrupted("write record", key, e))?;
                    }
                    match column.decision {
                        ReadDecision::Value(v) => out[i] = Some(v),
                        ReadDecision::Missing => out[i] = None,
                        ReadDecision::FetchData { start_ts } => fetch.push((i, start_ts)),
                        ReadDecision::NeedMoreVersions => {
                            more_versions = true;
                            retry.push(i);
                        }
                        ReadDecision::Blocked(l) => {
                            let raw = row
                                .value(&schema.lock_family, &l.qualifier(key))
                                .unwrap_or_default();
                            if !resolver.resolve(key, &l, raw).await? {
                                waiting = true;
                            }
                            retry.push(i);
                        }
                    }
                }
            }
            self.fetch_data(table, keys, &fetch, &mut out).await?;
            if more_versions {
                versions = versions.saturating_mul(8);
            }
            if waiting {
                let (key, q) = (&keys[retry[0]], &qualifiers[retry[0]]);
                let lock_q = granularity.lock_qualifier(q).to_vec();
                self.wait_for_lock(key, lock_q, started, &mut waits).await?;
            }
            pending = retry;
        }
        Ok((out, newest_changes))
    }

    /// Reads large values at the exact version their write record names.
    async fn fetch_data(
        &self,
        table: &str,
        keys: &[CellKey],
        fetch: &[(usize, u64)],
        out: &mut [Option<Vec<u8>>],
    ) -> Result<()> {
        if fetch.is_empty() {
            return Ok(());
        }
        let gets: Vec<Get> = fetch
            .iter()
            .map(|&(i, start_ts)| {
                let k = &keys[i];
                Get::new(k.row.clone())
                    .column(k.family.clone(), k.qualifier.clone())
                    .timestamp(ts(start_ts))
            })
            .collect();
        let rows = self.session.get_many(table, &gets).await?;
        for (&(i, start_ts), row) in fetch.iter().zip(&rows) {
            let k = &keys[i];
            match row.value(&k.family, &k.qualifier) {
                Some(v) => out[i] = Some(v.to_vec()),
                None => {
                    return Err(Error::Corrupted {
                        what: "data",
                        table: k.table.clone(),
                        row: k.row.clone(),
                        column: k.column(),
                        reason: format!(
                            "write record points at version {start_ts}, which is missing"
                        ),
                    })
                }
            }
        }
        Ok(())
    }

    /// Backs off while a live transaction holds a lock; gives up after `max_lock_wait`.
    async fn wait_for_lock(
        &self,
        key: &CellKey,
        lock_q: Vec<u8>,
        started: Instant,
        waits: &mut u32,
    ) -> Result<()> {
        let opts = self.session.ctx().opts();
        if started.elapsed() >= opts.max_lock_wait {
            let holder = self.describe_lock(key, lock_q).await;
            return Err(Error::KeyLocked {
                table: key.table.clone(),
                row: key.row.clone(),
                column: key.column(),
                lock_ts: holder.as_ref().map_or(0, |l| l.start_ts),
                primary: holder.map(|l| Box::new(l.primary)),
            });
        }
        tokio::time::sleep(opts.retry.backoff(*waits)).await;
        *waits += 1;
        Ok(())
    }

    /// For the error only: who holds the lock now (best effort).
    async fn describe_lock(&self, key: &CellKey, lock_q: Vec<u8>) -> Option<Lock> {
        let raw = self.session.lock_cell(key, lock_q).await.ok()?;
        match decode_lock_state(raw.as_deref()).ok()? {
            LockState::Locked(l) => Some(l),
            _ => None,
        }
    }

    /// The next page of a scan: the rows with a visible column, in the cursor's order. Rows
    /// with anything unsettled (locks, large values) go through the read path. May be empty
    /// while the cursor is not done.
    pub async fn next_page(&self, cursor: &mut ScanCursor) -> Result<Vec<ScannedRow>> {
        if cursor.done {
            return Ok(Vec::new());
        }
        let ctx = self.session.ctx();
        let granularity = table_checks::check_table(ctx, &cursor.table).await?;
        let scan = cursor.scan(ctx.schema(), self.snapshot);
        let page = self
            .session
            .scan_page(&cursor.table, &scan, SCAN_PAGE)
            .await?;
        cursor.done = page.len() < SCAN_PAGE as usize;
        let skip = cursor.skip.take();
        let mut out = Vec::new();
        for row in &page {
            if skip.as_deref() == Some(row.row.as_slice()) {
                continue;
            }
            if !cursor.in_range(&row.row) {
                // Reversed scans run past the lower bound: everything after is below it too.
                cursor.done = true;
                break;
            }
            if let Some(r) = self.scanned_row(&cursor.table, granularity, row).await? {
                out.push(r);
            }
        }
        if let Some(last) = page.last().filter(|_| !cursor.done) {
            if cursor.reverse {
                cursor.from = last.row.clone();
                cursor.skip = Some(last.row.clone());
            } else {
                cursor.from = row_after(&last.row);
            }
        }
        Ok(out)
    }

    async fn scanned_row(
        &self,
        table: &str,
        granularity: LockGranularity,
        row: &RowResult,
    ) -> Result<Option<ScannedRow>> {
        let schema = self.session.ctx().schema();
        let mut columns: BTreeMap<Vec<u8>, ()> = BTreeMap::new();
        for c in &row.cells {
            if c.family == schema.lock_family && c.qualifier == ROW_LOCK_QUALIFIER {
                // A row lock names no column itself: the columns it lists may have no
                // write record yet, and a read must still reckon with them.
                // Named by the row lock's own cell, `_pl:`: which columns it held is unknown.
                let state = decode_lock_state(Some(&c.value)).map_err(|e| {
                    let column = [c.family.as_slice(), b":"].concat();
                    let reason = format!("row lock: {}", e.0);
                    Error::corrupted_cell("lock", table, &row.row, &column, reason)
                })?;
                if let LockState::Locked(lock) = state {
                    for column in lock.row.iter().flatten() {
                        columns.insert(column_qualifier(&column.family, &column.qualifier), ());
                    }
                }
            } else if schema.is_percolator_family(&c.family) {
                columns.insert(c.qualifier.clone(), ());
            }
        }
        let mut keys = Vec::with_capacity(columns.len());
        let mut values = Vec::with_capacity(columns.len());
        let mut unsettled = false;
        for q in columns.keys() {
            let (family, qualifier) = split_column_qualifier(q).map_err(|e| Error::Corrupted {
                what: "column key",
                table: table.to_string(),
                row: row.row.clone(),
                column: q.clone(),
                reason: e.0,
            })?;
            // Observer acknowledgments are transactional cells of a project family (`_pa`):
            // not the user's columns.
            if schema.is_percolator_family(&family) {
                continue;
            }
            let key = CellKey::new(table, row.row.clone(), family, qualifier)?;
            let column = fetched_column(
                schema,
                granularity,
                row,
                q,
                &key,
                self.snapshot,
                FIRST_VERSIONS,
            )?;
            let value = match column.decision {
                ReadDecision::Value(v) => Some(v),
                ReadDecision::Missing => None,
                _ => {
                    unsettled = true;
                    None
                }
            };
            keys.push(key);
            values.push(value);
        }
        if unsettled {
            values = Box::pin(self.read(&keys)).await?;
        }
        let columns: Vec<_> = keys
            .into_iter()
            .zip(values)
            .filter_map(|(k, v)| v.map(|v| (k.family, k.qualifier, v)))
            .collect();
        Ok((!columns.is_empty()).then(|| ScannedRow {
            row: row.row.clone(),
            columns,
        }))
    }
}

/// A column as a Get of `row_gets` fetched it (`versions`: the write records it asked for),
/// decoded, and what a read at `snapshot` makes of it.
pub struct FetchedColumn {
    pub decision: ReadDecision,
    pub writes: Vec<Cell>,
    /// Every write record of the column is in `writes` (fewer came than were asked for).
    pub complete: bool,
}

pub fn fetched_column(
    schema: &Schema,
    granularity: LockGranularity,
    row: &RowResult,
    qualifier: &[u8],
    key: &CellKey,
    snapshot: u64,
    versions: i32,
) -> Result<FetchedColumn> {
    let lock_q = granularity.lock_qualifier(qualifier);
    let lock = match decode_lock_state(row.value(&schema.lock_family, lock_q))
        .map_err(|e| corrupted("lock", key, e))?
    {
        // A row lock that does not list the column cannot change it (invariant 14).
        LockState::Locked(l) if !l.covers(&key.family, &key.qualifier) => LockState::Absent,
        state => state,
    };
    let writes: Vec<Cell> = row
        .versions(&schema.write_family, qualifier)
        .cloned()
        .collect();
    let complete = writes.len() < versions as usize;
    let decision = read_column(snapshot, &lock, &writes, complete)
        .map_err(|e| corrupted("write record", key, e))?;
    Ok(FetchedColumn {
        decision,
        writes,
        complete,
    })
}

/// One Get per row of the pending keys (lock and write columns, up to the snapshot if given),
/// and for each Get the indices of the keys it serves.
pub fn row_gets(
    schema: &Schema,
    granularity: LockGranularity,
    keys: &[CellKey],
    qualifiers: &[Vec<u8>],
    pending: &[usize],
    up_to: Option<u64>,
    versions: i32,
) -> (Vec<Get>, Vec<Vec<usize>>) {
    let mut rows: BTreeMap<&[u8], Vec<usize>> = BTreeMap::new();
    for &i in pending {
        rows.entry(keys[i].row.as_slice()).or_default().push(i);
    }
    rows.into_iter()
        .map(|(row, members)| {
            let mut get = Get::new(row.to_vec()).max_versions(versions);
            if let Some(snapshot) = up_to {
                get = get.time_range(TimeRange::up_to(ts(snapshot)));
            }
            if granularity == LockGranularity::Row {
                get = get.column(schema.lock_family.clone(), ROW_LOCK_QUALIFIER.to_vec());
            }
            for &i in &members {
                if granularity == LockGranularity::Cell {
                    get = get.column(schema.lock_family.clone(), qualifiers[i].clone());
                }
                get = get.column(schema.write_family.clone(), qualifiers[i].clone());
            }
            (get, members)
        })
        .unzip()
}
