//! Prewrite: lock one cell and write its data, in ONE checkAndMutate with no prior read.

use crate::error::Result;
use crate::format::{decode_lock_state, CodecError, Lock, LockState, MutationKind};
use crate::hbase::{CheckAndMutate, Put};
use crate::key::CellKey;
use crate::txn::actions::{corrupted, ts, unlocked_below};
use crate::txn::schema::Schema;

/// The prewrite CAS. `absent` selects the variant for a cell that has no lock cell yet: HBase
/// never matches a non-empty value against an absent cell, so that case compares EQUAL to
/// empty instead (an absent lock cell means no transaction ever wrote the cell).
pub fn prewrite(
    schema: &Schema,
    key: &CellKey,
    lock: &Lock,
    lock_bytes: &[u8],
    value: Option<&[u8]>,
    absent: bool,
) -> CheckAndMutate {
    let mut put = Put::new(key.row.clone());
    if lock.kind == MutationKind::Put {
        put = put.add_at(
            key.family.clone(),
            key.qualifier.clone(),
            ts(lock.start_ts),
            value.unwrap_or_default().to_vec(),
        );
    }
    locking(schema, key, lock, lock_bytes, put, absent)
}

/// The prewrite CAS of a row lock (docs/design.md invariant 14): the row's one lock cell, under
/// the same condition as a cell's, and the data version of every column it lists that is a
/// put, `values` in the order of the lock's columns.
pub fn prewrite_row(
    schema: &Schema,
    key: &CellKey,
    lock: &Lock,
    lock_bytes: &[u8],
    values: &[Option<Vec<u8>>],
    absent: bool,
) -> CheckAndMutate {
    let mut put = Put::new(key.row.clone());
    for (column, value) in lock.row.iter().flatten().zip(values) {
        if column.kind == MutationKind::Put {
            put = put.add_at(
                column.family.clone(),
                column.qualifier.clone(),
                ts(lock.start_ts),
                value.clone().unwrap_or_default(),
            );
        }
    }
    locking(schema, key, lock, lock_bytes, put, absent)
}

/// `data` with the lock in front, conditional on the lock cell being free below start_ts.
fn locking(
    schema: &Schema,
    key: &CellKey,
    lock: &Lock,
    lock_bytes: &[u8],
    data: Put,
    absent: bool,
) -> CheckAndMutate {
    let (op, expected) = unlocked_below(lock.start_ts, absent);
    let q = lock.qualifier(key);
    let mut put =
        Put::new(key.row.clone()).add(schema.lock_family.clone(), q.clone(), lock_bytes.to_vec());
    put.cells.extend(data.cells);
    CheckAndMutate::new(key.row.clone(), schema.lock_family.clone(), q, op, expected).put(put)
}

/// What to do after a prewrite CAS failed (or its reply was lost), given the lock cell as read
/// afterwards.
#[derive(Debug, PartialEq, Eq)]
pub enum PrewriteNext {
    /// The cell holds exactly our lock: an earlier attempt whose reply was lost got through.
    AlreadyLocked,
    /// No lock cell: try the CAS variant for absent cells.
    RetryAbsent,
    /// Released below start_ts: the cell changed between the CAS and the read; try again.
    Retry,
    /// Another transaction holds the cell.
    LockedBy(Lock),
    /// A commit or rollback at or after our start_ts is recorded: we must abort.
    Conflict { max_ts: u64 },
}

pub fn after_failed_prewrite(
    key: &CellKey,
    start_ts: u64,
    our_lock: &[u8],
    cell: Option<&[u8]>,
) -> Result<PrewriteNext> {
    if cell == Some(our_lock) {
        return Ok(PrewriteNext::AlreadyLocked);
    }
    let state = decode_lock_state(cell).map_err(|e| corrupted("lock", key, e))?;
    Ok(match state {
        LockState::Absent => PrewriteNext::RetryAbsent,
        LockState::Released { max_ts } if max_ts < start_ts => PrewriteNext::Retry,
        LockState::Released { max_ts } => PrewriteNext::Conflict { max_ts },
        LockState::Locked(other) if other.start_ts == start_ts => {
            // Our own start_ts with different bytes: never written by us (a heartbeat only
            // changes the primary after prewrite). Treat as damage rather than guess.
            return Err(corrupted(
                "lock",
                key,
                CodecError(format!("a different lock claims our start_ts {start_ts}")),
            ));
        }
        LockState::Locked(other) => PrewriteNext::LockedBy(other),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::format::fixtures::{key, lock, row_lock};
    use crate::format::{encode_lock, encode_released, ROW_LOCK_QUALIFIER};
    use crate::hbase::CompareOp;
    use crate::hbase::Mutation;

    #[test]
    fn prewrite_is_one_cas_on_the_lock_cell_with_lock_and_data() {
        let schema = Schema::default();
        let l = lock(100, "r1");
        let bytes = encode_lock(&l);
        let cam = prewrite(&schema, &key("r1"), &l, &bytes, Some(b"v"), false);
        assert_eq!(cam.op, CompareOp::Greater);
        assert_eq!(cam.value, encode_released(100));
        assert_eq!(cam.family, schema.lock_family);
        let Mutation::Put(put) = &cam.mutations.mutations[0] else {
            panic!("expected a put")
        };
        assert_eq!(put.cells.len(), 2);
        assert_eq!(put.cells[0].value, bytes);
        assert_eq!(put.cells[1].timestamp, Some(100));
        assert_eq!(put.cells[1].value, b"v");
    }

    #[test]
    fn deletes_lock_without_writing_data() {
        let mut l = lock(100, "r1");
        l.kind = MutationKind::Delete;
        let bytes = encode_lock(&l);
        let cam = prewrite(&Schema::default(), &key("r1"), &l, &bytes, None, true);
        assert_eq!(cam.op, CompareOp::Equal);
        assert!(cam.value.is_empty());
        let Mutation::Put(put) = &cam.mutations.mutations[0] else {
            panic!("expected a put")
        };
        assert_eq!(put.cells.len(), 1);
    }

    #[test]
    fn a_row_prewrite_is_one_cas_on_the_row_lock_with_every_put_column() {
        let schema = Schema::default();
        let l = row_lock(100, "r1");
        let bytes = encode_lock(&l);
        let values = [Some(b"1".to_vec()), None];
        let cam = prewrite_row(&schema, &key("r1"), &l, &bytes, &values, false);
        assert_eq!(
            (cam.op, cam.value.clone()),
            (CompareOp::Greater, encode_released(100))
        );
        assert_eq!(cam.qualifier, ROW_LOCK_QUALIFIER);
        let Mutation::Put(put) = &cam.mutations.mutations[0] else {
            panic!("expected a put")
        };
        assert_eq!(
            put.cells.len(),
            2,
            "the lock and f:a's data; f:b is a delete"
        );
        assert_eq!(
            (put.cells[0].qualifier.as_slice(), &put.cells[0].value),
            (ROW_LOCK_QUALIFIER, &bytes)
        );
        assert_eq!(put.cells[1].qualifier, b"a");
        assert_eq!(
            (put.cells[1].timestamp, put.cells[1].value.as_slice()),
            (Some(100), &b"1"[..])
        );
    }

    #[test]
    fn failed_prewrite_is_classified_from_the_lock_cell() {
        let k = key("r1");
        let ours = encode_lock(&lock(100, "r1"));
        let next = |cell: Option<&[u8]>| after_failed_prewrite(&k, 100, &ours, cell).unwrap();
        assert_eq!(next(Some(&ours)), PrewriteNext::AlreadyLocked);
        assert_eq!(next(None), PrewriteNext::RetryAbsent);
        assert_eq!(next(Some(&encode_released(99))), PrewriteNext::Retry);
        assert_eq!(
            next(Some(&encode_released(100))),
            PrewriteNext::Conflict { max_ts: 100 }
        );
        let theirs = lock(90, "r9");
        assert_eq!(
            next(Some(&encode_lock(&theirs))),
            PrewriteNext::LockedBy(theirs)
        );
        assert!(matches!(
            after_failed_prewrite(&k, 100, &ours, Some(&[0x01, 0x07])),
            Err(Error::Corrupted { what: "lock", .. })
        ));
    }

    /// A lock that claims our start_ts but is not the one we wrote (another owner, another
    /// value) was never ours: it is damage, reported as such, and never handed to the resolver
    /// as another transaction's lock (resolving it would decide our own transaction).
    #[test]
    fn a_different_lock_at_our_start_ts_is_damage_not_another_transaction() {
        let k = key("r1");
        let ours = encode_lock(&lock(100, "r1"));
        let mut impostor = lock(100, "r1");
        impostor.owner = "someone-else".into();
        assert!(matches!(
            after_failed_prewrite(&k, 100, &ours, Some(&encode_lock(&impostor))),
            Err(Error::Corrupted { what: "lock", .. })
        ));
    }
}
