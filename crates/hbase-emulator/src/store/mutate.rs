//! Row operations: get, atomic mutation batches, check-and-mutate, increment and append.
//!
//! Each runs under the row's lock, checks every family before changing anything (so a failed
//! call leaves the row as it was), and takes "now" once per call, as a region server's mini
//! batch does. Delete timestamps are resolved against the row as it was before the batch.

use std::collections::BTreeMap;

use super::read::{read_row, ReadSpec};
use super::row::Row;
use super::schema::{FamilySchema, TableSchema};
use super::table::Table;
use crate::cell::Cell;
use crate::error::{ServerError, ServerResult};
use crate::filter::{CompareOp, FilterState};

/// HBase's `HConstants.LATEST_TIMESTAMP`: "use the server's time".
pub const LATEST_TIMESTAMP: i64 = i64::MAX;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PutCell {
    pub family: Vec<u8>,
    pub qualifier: Vec<u8>,
    /// Per-cell timestamp, else the put's, else the server's.
    pub timestamp: Option<i64>,
    pub value: Vec<u8>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeleteKind {
    /// One version: the given timestamp, or the latest one.
    Version,
    /// All versions at or below the timestamp.
    Columns,
    /// The whole family at or below the timestamp.
    Family,
    /// Every column of the family at exactly the timestamp.
    FamilyVersion,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeleteEntry {
    pub kind: DeleteKind,
    pub family: Vec<u8>,
    pub qualifier: Vec<u8>,
    pub timestamp: Option<i64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mutation {
    Put(Vec<PutCell>),
    /// No entries: delete the whole row (every family) at or below `row_timestamp` or now.
    Delete {
        entries: Vec<DeleteEntry>,
        row_timestamp: Option<i64>,
    },
}

/// The condition of a check-and-mutate: passes when `value OP latest cell` (HBase's reversed
/// direction), with the empty value standing for "no such cell".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    pub family: Vec<u8>,
    pub qualifier: Vec<u8>,
    pub op: CompareOp,
    pub value: Vec<u8>,
}

impl Check {
    fn passes(&self, latest: Option<&[u8]>) -> bool {
        if self.value.is_empty() {
            // Since HBase 2.4.10 NOT_EQUAL with an empty value means "exists and non-empty".
            return match self.op {
                CompareOp::NotEqual => latest.is_some_and(|v| !v.is_empty()),
                _ => latest.is_none_or(<[u8]>::is_empty),
            };
        }
        latest.is_some_and(|cell| self.op.holds(self.value.as_slice().cmp(cell)))
    }
}

/// A resolved delete marker, ready to be written.
enum Marker<'a> {
    Version(&'a FamilySchema, &'a [u8], i64),
    Columns(&'a FamilySchema, &'a [u8], i64),
    Family(&'a FamilySchema, i64),
    FamilyVersion(&'a FamilySchema, i64),
}

fn family<'s>(
    table: &Table,
    schema: &'s TableSchema,
    name: &[u8],
) -> ServerResult<&'s FamilySchema> {
    schema
        .family(name)
        .ok_or_else(|| table.no_such_family(schema, name))
}

fn check_families(table: &Table, schema: &TableSchema, mutations: &[Mutation]) -> ServerResult<()> {
    for m in mutations {
        match m {
            Mutation::Put(cells) => {
                for c in cells {
                    family(table, schema, &c.family)?;
                }
            }
            Mutation::Delete { entries, .. } => {
                for e in entries {
                    family(table, schema, &e.family)?;
                }
            }
        }
    }
    Ok(())
}

fn or_now(ts: Option<i64>, now: i64) -> i64 {
    match ts {
        Some(ts) if ts != LATEST_TIMESTAMP => ts,
        _ => now,
    }
}

/// Turns one Delete into markers. A single-version delete without a timestamp targets the
/// latest readable version (the n-th such entry for a column, the n-th latest), or `now` when
/// there is none, as `HRegion.prepareDeleteTimestamps` does.
fn resolve_delete<'s>(
    row: &Row,
    schema: &'s TableSchema,
    entries: &'s [DeleteEntry],
    row_timestamp: Option<i64>,
    now: i64,
) -> Vec<Marker<'s>> {
    if entries.is_empty() {
        let ts = or_now(row_timestamp, now);
        return schema
            .families
            .values()
            .map(|f| Marker::Family(f, ts))
            .collect();
    }
    let mut latest_seen: BTreeMap<(&[u8], &[u8]), usize> = BTreeMap::new();
    entries
        .iter()
        .map(|e| {
            let f = schema.family(&e.family).expect("families checked first");
            match e.kind {
                DeleteKind::Version => {
                    let ts = match e.timestamp {
                        Some(ts) if ts != LATEST_TIMESTAMP => ts,
                        _ => {
                            let n = latest_seen.entry((&e.family, &e.qualifier)).or_insert(0);
                            *n += 1;
                            row.readable_versions(f, &e.qualifier, now)
                                .nth(*n - 1)
                                .map_or(now, |(ts, _)| ts)
                        }
                    };
                    Marker::Version(f, &e.qualifier, ts)
                }
                DeleteKind::Columns => Marker::Columns(f, &e.qualifier, or_now(e.timestamp, now)),
                DeleteKind::Family => Marker::Family(f, or_now(e.timestamp, now)),
                DeleteKind::FamilyVersion => Marker::FamilyVersion(f, or_now(e.timestamp, now)),
            }
        })
        .collect()
}

/// Applies a batch to a locked row; returns the families it touched, each with whether it
/// deleted anything there, for the caller to bring the table's row lists in step under the
/// same lock. `put_ts` is the timestamp of cells that carry none.
fn apply<'s>(
    row: &mut Row,
    schema: &'s TableSchema,
    mutations: &'s [Mutation],
    now: i64,
    put_ts: i64,
) -> Vec<(&'s [u8], bool)> {
    let mut touched: Vec<(&[u8], bool)> = Vec::new();
    let mut touch =
        |family: &'s [u8], deleted: bool| match touched.iter_mut().find(|(f, _)| *f == family) {
            Some((_, d)) => *d |= deleted,
            None => touched.push((family, deleted)),
        };
    let resolved: Vec<Vec<Marker>> = mutations
        .iter()
        .map(|m| match m {
            Mutation::Delete {
                entries,
                row_timestamp,
            } => resolve_delete(row, schema, entries, *row_timestamp, now),
            Mutation::Put(_) => Vec::new(),
        })
        .collect();
    for (m, markers) in mutations.iter().zip(resolved) {
        if let Mutation::Put(cells) = m {
            for c in cells {
                let f = schema.family(&c.family).expect("families checked first");
                touch(&f.name, false);
                row.put(
                    f,
                    &c.qualifier,
                    or_now(c.timestamp, put_ts),
                    c.value.clone(),
                );
            }
        }
        for marker in markers {
            let f = match marker {
                Marker::Version(f, q, ts) => {
                    row.delete_version(f, q, ts);
                    f
                }
                Marker::Columns(f, q, ts) => {
                    row.delete_columns(f, q, ts);
                    f
                }
                Marker::Family(f, ts) => {
                    row.delete_family(f, ts);
                    f
                }
                Marker::FamilyVersion(f, ts) => {
                    row.delete_family_version(f, ts);
                    f
                }
            };
            touch(&f.name, true);
        }
    }
    touched
}

/// A Get: the selected cells of one row (empty when the row has none).
pub fn get(table: &Table, key: &[u8], spec: &ReadSpec, now: i64) -> ServerResult<Vec<Cell>> {
    let schema = table.schema_for_data()?;
    for f in spec.columns.families() {
        family(table, &schema, f)?;
    }
    let Some(handle) = table.row(key) else {
        return Ok(Vec::new());
    };
    let row = handle.lock();
    Ok(read_row(
        &row,
        key,
        &schema,
        spec,
        now,
        &mut FilterState::default(),
    ))
}

/// Applies puts and deletes to one row atomically (put, delete and mutateRow).
pub fn mutate(table: &Table, key: &[u8], mutations: &[Mutation], now: i64) -> ServerResult<()> {
    let schema = table.schema_for_data()?;
    check_families(table, &schema, mutations)?;
    let handle = table.row_or_insert(key);
    let mut row = handle.lock();
    let touched = apply(&mut row, &schema, mutations, now, now);
    table.index_families(key, &handle, &mut row, touched);
    Ok(())
}

/// Checks the latest readable version of one cell and, if the check passes, applies the
/// mutations; all under the row lock. Returns whether they were applied.
pub fn check_and_mutate(
    table: &Table,
    key: &[u8],
    check: &Check,
    mutations: &[Mutation],
    now: i64,
) -> ServerResult<bool> {
    let schema = table.schema_for_data()?;
    let checked = family(table, &schema, &check.family)?;
    let handle = table.row_or_insert(key);
    let mut row = handle.lock();
    let latest = row.readable_versions(checked, &check.qualifier, now).next();
    if !check.passes(latest.map(|(_, v)| v.as_slice())) {
        return Ok(false);
    }
    check_families(table, &schema, mutations)?;
    // Never write below the checked cell, even if the clock went backwards (HBASE-14070).
    let put_ts = latest.map_or(now, |(ts, _)| now.max(ts));
    let touched = apply(&mut row, &schema, mutations, now, put_ts);
    table.index_families(key, &handle, &mut row, touched);
    Ok(true)
}

/// What increment and append do to each named column's latest value.
pub enum Delta<'a> {
    Increment(i64),
    Append(&'a [u8]),
}

/// Increment or append: reads each column's latest value, writes the new one at
/// max(now, old timestamp + 1), and returns the new cells sorted.
pub fn read_modify_write(
    table: &Table,
    key: &[u8],
    columns: &[(Vec<u8>, Vec<u8>, Delta)],
    now: i64,
) -> ServerResult<Vec<Cell>> {
    let schema = table.schema_for_data()?;
    for (f, _, _) in columns {
        family(table, &schema, f)?;
    }
    let handle = table.row_or_insert(key);
    let mut row = handle.lock();
    let mut out = Vec::with_capacity(columns.len());
    for (f, q, delta) in columns {
        let fschema = schema.family(f).expect("checked above");
        let current = row
            .readable_versions(fschema, q, now)
            .next()
            .map(|(ts, v)| (ts, v.clone()));
        let value = match delta {
            Delta::Increment(amount) => {
                let old = match &current {
                    None => 0,
                    Some((_, v)) => i64::from_be_bytes(v.as_slice().try_into().map_err(|_| {
                        ServerError::do_not_retry(format!(
                            "Field is not a long, it's {} bytes wide",
                            v.len()
                        ))
                    })?),
                };
                old.wrapping_add(*amount).to_be_bytes().to_vec()
            }
            Delta::Append(suffix) => {
                let mut v = current.as_ref().map(|(_, v)| v.clone()).unwrap_or_default();
                v.extend_from_slice(suffix);
                v
            }
        };
        let ts = current.map_or(now, |(ts, _)| now.max(ts.saturating_add(1)));
        out.push(Cell {
            family: f.clone(),
            qualifier: q.clone(),
            timestamp: ts,
            value,
        });
    }
    for c in &out {
        let fschema = schema.family(&c.family).expect("checked above");
        row.put(fschema, &c.qualifier, c.timestamp, c.value.clone());
    }
    let touched = out.iter().map(|c| (c.family.as_slice(), false));
    table.index_families(key, &handle, &mut row, touched);
    out.sort_by(|a, b| (&a.family, &a.qualifier).cmp(&(&b.family, &b.qualifier)));
    Ok(out)
}
