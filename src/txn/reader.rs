//! Snapshot reads: one Get per row fetches each column's lock cell and newest write records
//! (docs/design.md cost model: one round trip for a committed short value). Locks at or below the
//! snapshot are resolved or waited out before any value is returned (invariant 5).

use std::collections::BTreeMap;
use std::time::Instant;

use crate::error::{Error, Result};
use crate::hbase::{Get, RowResult, Scan, TimeRange};
use crate::txn::actions::{corrupted, read_column, ts, ReadDecision};
use crate::txn::codec::{decode_lock_state, split_column_qualifier, LockState};
use crate::txn::key::CellKey;
use crate::txn::session::Session;

/// Write-record versions fetched per column on the first try: the newest is almost always a
/// commit, and a read that meets rollback records asks again for 8 times as many. A second
/// version up front would cost every read a cell to cover a case that is rare.
const FIRST_VERSIONS: i32 = 1;
const SCAN_PAGE: i32 = 256;

/// One row returned by a transactional scan: its visible columns as (family, qualifier, value).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScannedRow {
    pub row: Vec<u8>,
    pub columns: Vec<(Vec<u8>, Vec<u8>, Vec<u8>)>,
}

impl Session {
    /// Reads `keys` (any tables and rows) at `snapshot`; values in the order of `keys`. With
    /// no snapshot yet, the first read fetches one and carries it (it is set here).
    pub fn read(
        &self,
        snapshot: &mut Option<u64>,
        keys: &[CellKey],
    ) -> Result<Vec<Option<Vec<u8>>>> {
        // The common case, one table, reads the keys where they are.
        if keys.iter().all(|k| k.table == keys[0].table) {
            return self.read_table(snapshot, keys);
        }
        let mut by_table: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (i, k) in keys.iter().enumerate() {
            by_table.entry(k.table.as_str()).or_default().push(i);
        }
        let mut out = vec![None; keys.len()];
        for idxs in by_table.into_values() {
            let table_keys: Vec<CellKey> = idxs.iter().map(|&i| keys[i].clone()).collect();
            for (i, v) in idxs
                .into_iter()
                .zip(self.read_table(snapshot, &table_keys)?)
            {
                out[i] = v;
            }
        }
        Ok(out)
    }

    fn read_table(
        &self,
        snapshot: &mut Option<u64>,
        keys: &[CellKey],
    ) -> Result<Vec<Option<Vec<u8>>>> {
        let Some(first) = keys.first() else {
            return Ok(Vec::new());
        };
        let table = first.table.as_str();
        // A table without the percolator families is a typed error, not FamilyNotFound; a key
        // in a family the table lacks is FamilyNotFound, not "absent".
        self.inner.check_families(keys)?;
        let schema = &self.inner.opts.schema;
        let qualifiers: Vec<Vec<u8>> = keys.iter().map(|k| schema.qualifier(k)).collect();
        let mut out: Vec<Option<Vec<u8>>> = vec![None; keys.len()];
        let mut pending: Vec<usize> = (0..keys.len()).collect();
        let mut versions = FIRST_VERSIONS;
        let started = Instant::now();
        let mut waits = 0u32;
        while !pending.is_empty() {
            let (gets, members) = row_gets(
                schema,
                keys,
                &qualifiers,
                &pending,
                snapshot.unwrap_or(0),
                versions,
            );
            let (snapshot, rows) = match *snapshot {
                Some(s) => (s, self.get_many(table, &gets)?),
                // The time range built above is a placeholder until the timestamp exists.
                None => {
                    let asked = gets.len();
                    let at_snapshot = Box::new(move |s| {
                        let range = TimeRange::up_to(ts(s));
                        gets.into_iter().map(|g| g.time_range(range)).collect()
                    });
                    let (s, rows) = self.get_many_fresh(table, asked, at_snapshot)?;
                    *snapshot = Some(s);
                    (s, rows)
                }
            };
            let mut retry = Vec::new();
            let mut fetch = Vec::new();
            let mut more_versions = false;
            let mut waiting = false;
            for (members, row) in members.iter().zip(&rows) {
                for &i in members {
                    let key = &keys[i];
                    let q = &qualifiers[i];
                    let raw = row.value(&schema.lock_family, q);
                    let lock = decode_lock_state(raw).map_err(|e| corrupted("lock", key, e))?;
                    let writes: Vec<_> = row.versions(&schema.write_family, q).cloned().collect();
                    let complete = writes.len() < versions as usize;
                    match read_column(snapshot, &lock, &writes, complete)
                        .map_err(|e| corrupted("write record", key, e))?
                    {
                        ReadDecision::Value(v) => out[i] = Some(v),
                        ReadDecision::Missing => out[i] = None,
                        ReadDecision::FetchData { start_ts } => fetch.push((i, start_ts)),
                        ReadDecision::NeedMoreVersions => {
                            more_versions = true;
                            retry.push(i);
                        }
                        ReadDecision::Blocked(l) => {
                            let raw = raw.unwrap_or_default();
                            if !self.resolve_lock(key, &l, raw)? {
                                waiting = true;
                            }
                            retry.push(i);
                        }
                    }
                }
            }
            self.fetch_data(table, keys, &fetch, &mut out)?;
            if more_versions {
                versions = versions.saturating_mul(8);
            }
            if waiting {
                self.wait_for_lock(&keys[retry[0]], started, &mut waits)?;
            }
            pending = retry;
        }
        Ok(out)
    }

    /// Reads large values at the exact version their write record names.
    fn fetch_data(
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
        let rows = self.get_many(table, &gets)?;
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
    fn wait_for_lock(&self, key: &CellKey, started: Instant, waits: &mut u32) -> Result<()> {
        let opts = &self.inner.opts;
        if started.elapsed() >= opts.max_lock_wait {
            let holder = self.describe_lock(key);
            return Err(Error::KeyLocked {
                table: key.table.clone(),
                row: key.row.clone(),
                column: key.column(),
                lock_ts: holder.as_ref().map_or(0, |l| l.start_ts),
                primary: holder.map(|l| Box::new(l.primary)),
            });
        }
        std::thread::sleep(opts.retry.backoff(*waits));
        *waits += 1;
        Ok(())
    }

    /// For the error only: who holds the lock now (best effort).
    fn describe_lock(&self, key: &CellKey) -> Option<crate::txn::codec::Lock> {
        let raw = self.lock_cell(key).ok()?;
        match decode_lock_state(raw.as_deref()).ok()? {
            LockState::Locked(l) => Some(l),
            _ => None,
        }
    }

    /// Scans `[start, stop)` of `table` at `snapshot`, at most `limit` rows with a visible
    /// column. Rows with anything unsettled (locks, large values) go through the read path.
    pub fn scan(
        &self,
        snapshot: u64,
        table: &str,
        start: &[u8],
        stop: &[u8],
        limit: usize,
    ) -> Result<Vec<ScannedRow>> {
        self.inner.check_table(table)?;
        let schema = &self.inner.opts.schema;
        let mut out = Vec::new();
        let mut from = start.to_vec();
        while out.len() < limit {
            let scan = Scan::range(from.clone(), stop.to_vec())
                .family(schema.lock_family.clone())
                .family(schema.write_family.clone())
                .time_range(TimeRange::up_to(ts(snapshot)))
                .max_versions(FIRST_VERSIONS);
            let page = self.scan_page(table, &scan, SCAN_PAGE)?;
            let exhausted = page.len() < SCAN_PAGE as usize;
            for row in &page {
                if let Some(r) = self.scanned_row(snapshot, table, row)? {
                    out.push(r);
                    if out.len() == limit {
                        break;
                    }
                }
            }
            match page.last() {
                Some(last) if !exhausted => {
                    from = last.row.clone();
                    from.push(0);
                }
                _ => break,
            }
        }
        Ok(out)
    }

    fn scanned_row(
        &self,
        snapshot: u64,
        table: &str,
        row: &RowResult,
    ) -> Result<Option<ScannedRow>> {
        let schema = &self.inner.opts.schema;
        let mut columns: BTreeMap<Vec<u8>, ()> = BTreeMap::new();
        for c in &row.cells {
            if schema.is_percolator_family(&c.family) {
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
            let key = CellKey::new(table, row.row.clone(), family, qualifier)?;
            let lock = decode_lock_state(row.value(&schema.lock_family, q))
                .map_err(|e| corrupted("lock", &key, e))?;
            let writes: Vec<_> = row.versions(&schema.write_family, q).cloned().collect();
            let complete = writes.len() < FIRST_VERSIONS as usize;
            let decision = read_column(snapshot, &lock, &writes, complete)
                .map_err(|e| corrupted("write record", &key, e))?;
            let value = match decision {
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
            values = self.read(&mut Some(snapshot), &keys)?;
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

/// One Get per row of the pending keys (lock and write columns at `snapshot`), and for each
/// Get the indices of the keys it serves.
fn row_gets(
    schema: &crate::txn::schema::Schema,
    keys: &[CellKey],
    qualifiers: &[Vec<u8>],
    pending: &[usize],
    snapshot: u64,
    versions: i32,
) -> (Vec<Get>, Vec<Vec<usize>>) {
    let mut rows: BTreeMap<&[u8], Vec<usize>> = BTreeMap::new();
    for &i in pending {
        rows.entry(keys[i].row.as_slice()).or_default().push(i);
    }
    rows.into_iter()
        .map(|(row, members)| {
            let mut get = Get::new(row.to_vec())
                .time_range(TimeRange::up_to(ts(snapshot)))
                .max_versions(versions);
            for &i in &members {
                get = get
                    .column(schema.lock_family.clone(), qualifiers[i].clone())
                    .column(schema.write_family.clone(), qualifiers[i].clone());
            }
            (get, members)
        })
        .unzip()
}
