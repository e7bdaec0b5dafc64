//! Commit of one cell: if the lock is still exactly ours, write the record and release.

use crate::format::{Lock, MutationKind, WriteKind, WriteRecord};
use crate::hbase::{CheckAndMutate, CompareOp, Put};
use crate::key::CellKey;
use crate::txn::actions::{put_released, put_write_record};
use crate::txn::schema::Schema;

/// The commit CAS, used for the primary (the commit point) and every secondary, by the owner
/// or by a resolver rolling forward. Conditional on the exact lock bytes, so it can never erase
/// a newer transaction's lock; releasing raises the high-water mark to `commit_ts`, which is
/// above everything recorded before (the lock was taken only when the mark was below start_ts).
/// A row lock gets a write record for every column it lists, in the same CAS.
pub fn commit(
    schema: &Schema,
    key: &CellKey,
    lock: &Lock,
    lock_bytes: &[u8],
    commit_ts: u64,
) -> CheckAndMutate {
    let mut put = Put::new(key.row.clone());
    for column in lock.columns(key).iter() {
        let record = WriteRecord {
            kind: match column.kind {
                MutationKind::Put => WriteKind::Put,
                MutationKind::Delete => WriteKind::Delete,
                MutationKind::Lock => WriteKind::Lock,
            },
            start_ts: lock.start_ts,
            short_value: column.short_value.clone(),
        };
        put = put_write_record(
            schema,
            (&column.family, &column.qualifier),
            put,
            commit_ts,
            &record,
        );
    }
    let q = lock.qualifier(key);
    let put = put_released(schema, q.clone(), put, commit_ts);
    CheckAndMutate::new(
        key.row.clone(),
        schema.lock_family.clone(),
        q,
        CompareOp::Equal,
        lock_bytes.to_vec(),
    )
    .put(put)
}

/// The heartbeat of a long commit: replaces our lock (`lock` as stored, on `key`) with the
/// same lock at a newer wall time, conditional on the exact bytes stored (a resolver may have
/// rolled it back meanwhile).
pub fn refresh_lock(
    schema: &Schema,
    key: &CellKey,
    lock: &Lock,
    stored: &[u8],
    refreshed: &[u8],
) -> CheckAndMutate {
    let q = lock.qualifier(key);
    CheckAndMutate::new(
        key.row.clone(),
        schema.lock_family.clone(),
        q.clone(),
        CompareOp::Equal,
        stored.to_vec(),
    )
    .put(Put::new(key.row.clone()).add(schema.lock_family.clone(), q, refreshed.to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::fixtures::{key, lock, row_lock};
    use crate::format::{
        column_qualifier, decode_lock_state, decode_write, encode_lock, LockState,
        ROW_LOCK_QUALIFIER,
    };
    use crate::hbase::Mutation;

    #[test]
    fn refresh_replaces_exactly_the_stored_lock() {
        let schema = Schema::default();
        let l = lock(100, "r1");
        let (old, new) = (encode_lock(&l), b"newer".to_vec());
        let cam = refresh_lock(&schema, &key("r1"), &l, &old, &new);
        assert_eq!((cam.op, cam.value), (CompareOp::Equal, old));
        let Mutation::Put(put) = &cam.mutations.mutations[0] else {
            panic!("expected a put")
        };
        assert_eq!(put.cells[0].value, new);
        assert_eq!(put.cells[0].family, schema.lock_family);
    }

    #[test]
    fn commit_is_conditional_on_our_exact_lock_and_releases_at_commit_ts() {
        let schema = Schema::default();
        let l = lock(100, "r1");
        let bytes = encode_lock(&l);
        let cam = commit(&schema, &key("r1"), &l, &bytes, 150);
        assert_eq!((cam.op, cam.value.clone()), (CompareOp::Equal, bytes));
        let Mutation::Put(put) = &cam.mutations.mutations[0] else {
            panic!("expected a put")
        };
        let write = &put.cells[0];
        assert_eq!(write.family, schema.write_family);
        assert_eq!(write.timestamp, Some(150));
        let rec = decode_write(&write.value).unwrap();
        assert_eq!((rec.kind, rec.start_ts), (WriteKind::Put, 100));
        assert_eq!(rec.short_value.as_deref(), Some(&b"v"[..]));
        let release = &put.cells[1];
        assert_eq!(release.timestamp, None, "lock cells use server time");
        assert_eq!(
            decode_lock_state(Some(&release.value)).unwrap(),
            LockState::Released { max_ts: 150 }
        );
    }

    #[test]
    fn a_row_lock_commits_every_column_it_lists_in_one_cas_on_the_row_lock() {
        let schema = Schema::default();
        let l = row_lock(100, "r1");
        let bytes = encode_lock(&l);
        let cam = commit(&schema, &key("r1"), &l, &bytes, 150);
        assert_eq!(
            (cam.family.clone(), cam.qualifier.clone()),
            (schema.lock_family.clone(), ROW_LOCK_QUALIFIER.to_vec())
        );
        assert_eq!((cam.op, cam.value.clone()), (CompareOp::Equal, bytes));
        let Mutation::Put(put) = &cam.mutations.mutations[0] else {
            panic!("expected a put")
        };
        let records: Vec<_> = put
            .cells
            .iter()
            .filter(|c| c.family == schema.write_family)
            .map(|c| {
                (
                    c.qualifier.clone(),
                    c.timestamp,
                    decode_write(&c.value).unwrap(),
                )
            })
            .collect();
        assert_eq!(records.len(), 2);
        assert_eq!(records[0].0, column_qualifier(b"f", b"a"));
        assert_eq!(records[0].2.kind, WriteKind::Put);
        assert_eq!(records[0].2.short_value.as_deref(), Some(&b"1"[..]));
        assert_eq!(records[1].0, column_qualifier(b"f", b"b"));
        assert_eq!(records[1].2.kind, WriteKind::Delete);
        assert!(records
            .iter()
            .all(|r| r.1 == Some(150) && r.2.start_ts == 100));
        let release = put.cells.last().unwrap();
        assert_eq!(release.qualifier, ROW_LOCK_QUALIFIER);
        assert_eq!(
            decode_lock_state(Some(&release.value)).unwrap(),
            LockState::Released { max_ts: 150 }
        );
    }
}
