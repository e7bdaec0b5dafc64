//! The protocol steps as plain functions: each reads a snapshot of stored cells (already
//! fetched) and returns the single-row `CheckAndMutate` to apply, or classifies what it saw.
//! Nothing here does I/O, so every rule is unit-testable without HBase.

mod commit;
mod prewrite;
mod read;
mod rollback;
mod status;

pub use commit::{commit, refresh_lock};
pub use prewrite::{after_failed_prewrite, prewrite, prewrite_row, PrewriteNext};
pub use read::{newest_change, read_column, ReadDecision};
pub use rollback::{fence, rollback};
pub use status::{txn_status, TxnStatus};

use crate::error::Error;
use crate::format::{column_qualifier, encode_released, encode_write, CodecError, WriteRecord};
use crate::hbase::{CompareOp, Delete, DeleteType, Put};
use crate::key::CellKey;
use crate::txn::schema::Schema;

/// The CAS condition "the cell is released with every recorded commit and rollback below
/// `start_ts`" (docs/design.md invariant 2): `0x00||BE(start_ts) > cell`, which a held lock
/// (`0x01...`) or a newer record fails. A cell that has no lock cell never matches a non-empty
/// value, so `absent` selects `EQUAL ""` instead: true only while no transaction ever wrote it.
fn unlocked_below(start_ts: u64, absent: bool) -> (CompareOp, Vec<u8>) {
    if absent {
        (CompareOp::Equal, Vec::new())
    } else {
        (CompareOp::Greater, encode_released(start_ts))
    }
}

/// Puts the released lock state with high-water mark `max_ts` into lock cell `lock_q` (server
/// timestamp, see docs/design.md).
fn put_released(schema: &Schema, lock_q: Vec<u8>, put: Put, max_ts: u64) -> Put {
    put.add(schema.lock_family.clone(), lock_q, encode_released(max_ts))
}

/// Puts a write record for column `family:qualifier` at version `at`.
fn put_write_record(
    schema: &Schema,
    (family, qualifier): (&[u8], &[u8]),
    put: Put,
    at: u64,
    rec: &WriteRecord,
) -> Put {
    put.add_at(
        schema.write_family.clone(),
        column_qualifier(family, qualifier),
        ts(at),
        encode_write(rec),
    )
}

/// Removes the data versions a rolled-back prewrite left at exactly `start_ts` in `columns`
/// (those it wrote a value to; `None` when there are none). A marker at one exact version hides
/// only that version, and no one writes that version again: timestamps are unique and the
/// raised high-water mark stops a late duplicate prewrite.
fn delete_data_versions<'c>(
    row: &[u8],
    columns: impl IntoIterator<Item = (&'c [u8], &'c [u8])>,
    start_ts: u64,
) -> Option<Delete> {
    let mut delete = Delete::new(row.to_vec()).delete_type(DeleteType::Column);
    for (family, qualifier) in columns {
        delete = delete.column_at(family.to_vec(), qualifier.to_vec(), ts(start_ts));
    }
    (!delete.columns.is_empty()).then_some(delete)
}

/// Oracle timestamps are below 2^63 (physical ms << 18), so they fit HBase's signed versions.
pub(crate) fn ts(t: u64) -> i64 {
    i64::try_from(t).unwrap_or(i64::MAX)
}

/// Attaches where a damaged record was found.
pub(crate) fn corrupted(what: &'static str, key: &CellKey, e: CodecError) -> Error {
    Error::Corrupted {
        what,
        table: key.table.clone(),
        row: key.row.clone(),
        column: key.column(),
        reason: e.0,
    }
}

/// A put scripted by hand, as the tests of what lies beyond the committer (GC, observers) place
/// a transaction's locks and commits themselves: its lock, with the value inline, and the
/// lock's bytes.
#[cfg(test)]
pub(crate) struct HandPut {
    pub lock: crate::format::Lock,
    pub bytes: Vec<u8>,
    value: Vec<u8>,
}

#[cfg(test)]
impl HandPut {
    /// Transaction `start_ts`'s put of `value`, in a lock naming `primary` and held by
    /// `owner`, written at `wall_ms` and stale `ttl_ms` after it.
    pub fn new(
        start_ts: u64,
        primary: &CellKey,
        owner: &str,
        (wall_ms, ttl_ms): (u64, u64),
        value: &[u8],
    ) -> HandPut {
        let lock = crate::format::Lock {
            start_ts,
            kind: crate::format::MutationKind::Put,
            primary: primary.clone(),
            owner: owner.to_string(),
            wall_ms,
            ttl_ms,
            short_value: Some(value.to_vec()),
            row: None,
            primary_row: false,
        };
        let bytes = crate::format::encode_lock(&lock);
        HandPut {
            lock,
            bytes,
            value: value.to_vec(),
        }
    }

    /// The prewrite of `key` (`absent`: the variant for a cell never written).
    pub fn prewrite(
        &self,
        schema: &Schema,
        key: &CellKey,
        absent: bool,
    ) -> crate::hbase::CheckAndMutate {
        prewrite(
            schema,
            key,
            &self.lock,
            &self.bytes,
            Some(&self.value),
            absent,
        )
    }

    /// The commit of `key` at `commit_ts`.
    pub fn commit(
        &self,
        schema: &Schema,
        key: &CellKey,
        commit_ts: u64,
    ) -> crate::hbase::CheckAndMutate {
        commit(schema, key, &self.lock, &self.bytes, commit_ts)
    }
}
