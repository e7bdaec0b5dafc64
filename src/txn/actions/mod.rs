//! The protocol steps as plain functions: each reads a snapshot of stored cells (already
//! fetched) and returns the single-row `CheckAndMutate` to apply, or classifies what it saw.
//! Nothing here does I/O, so every rule is unit-testable without HBase.

mod commit;
mod prewrite;
mod read;
mod rollback;
mod status;

pub use commit::{commit, refresh_lock};
pub use prewrite::{after_failed_prewrite, prewrite, PrewriteNext};
pub use read::{newest_change, read_column, ReadDecision};
pub use rollback::{fence, rollback};
pub use status::{txn_status, TxnStatus};

use crate::error::Error;
use crate::hbase::{CompareOp, Delete, DeleteType, Put};
use crate::key::CellKey;
use crate::txn::codec::{encode_released, encode_write, CodecError, WriteRecord};
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

/// Puts the released lock state with high-water mark `max_ts` (server timestamp, see
/// docs/design.md).
fn put_released(schema: &Schema, key: &CellKey, put: Put, max_ts: u64) -> Put {
    put.add(
        schema.lock_family.clone(),
        schema.qualifier(key),
        encode_released(max_ts),
    )
}

fn put_write_record(schema: &Schema, key: &CellKey, put: Put, at: u64, rec: &WriteRecord) -> Put {
    put.add_at(
        schema.write_family.clone(),
        schema.qualifier(key),
        ts(at),
        encode_write(rec),
    )
}

/// Removes the data version a rolled-back prewrite left at exactly `start_ts`. A marker at one
/// exact version hides only that version, and no one writes that version again: timestamps are
/// unique and the raised high-water mark stops a late duplicate prewrite.
fn delete_data_version(key: &CellKey, start_ts: u64) -> Delete {
    Delete::new(key.row.clone())
        .column_at(key.family.clone(), key.qualifier.clone(), ts(start_ts))
        .delete_type(DeleteType::Column)
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

#[cfg(test)]
pub(crate) mod fixtures {
    use crate::hbase::Cell;
    use crate::key::CellKey;
    use crate::txn::codec::{encode_write, Lock, MutationKind, WriteKind, WriteRecord};

    /// A write-record cell as HBase returns it, at version `at`.
    pub fn write_cell(at: i64, kind: WriteKind, start_ts: u64, value: Option<&[u8]>) -> Cell {
        Cell {
            family: b"_pw".to_vec(),
            qualifier: b"\x01fq".to_vec(),
            timestamp: at,
            value: encode_write(&WriteRecord {
                kind,
                start_ts,
                short_value: value.map(<[u8]>::to_vec),
            }),
        }
    }

    pub fn key(row: &str) -> CellKey {
        CellKey::new("t", row.as_bytes().to_vec(), b"f".to_vec(), b"q".to_vec()).unwrap()
    }

    pub fn lock(start_ts: u64, primary: &str) -> Lock {
        Lock {
            start_ts,
            kind: MutationKind::Put,
            primary: key(primary),
            owner: "o1".into(),
            wall_ms: 1000,
            ttl_ms: 3000,
            short_value: Some(b"v".to_vec()),
        }
    }
}
