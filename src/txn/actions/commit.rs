//! Commit of one cell: if the lock is still exactly ours, write the record and release.

use crate::hbase::{CheckAndMutate, CompareOp, Put};
use crate::txn::actions::{put_released, put_write_record};
use crate::txn::codec::{Lock, MutationKind, WriteKind, WriteRecord};
use crate::txn::key::CellKey;
use crate::txn::schema::Schema;

/// The commit CAS, used for the primary (the commit point) and every secondary, by the owner
/// or by a resolver rolling forward. Conditional on the exact lock bytes, so it can never erase
/// a newer transaction's lock; releasing raises the high-water mark to `commit_ts`, which is
/// above everything recorded before (the lock was taken only when the mark was below start_ts).
pub fn commit(
    schema: &Schema,
    key: &CellKey,
    lock: &Lock,
    lock_bytes: &[u8],
    commit_ts: u64,
) -> CheckAndMutate {
    let record = WriteRecord {
        kind: match lock.kind {
            MutationKind::Put => WriteKind::Put,
            MutationKind::Delete => WriteKind::Delete,
        },
        start_ts: lock.start_ts,
        short_value: lock.short_value.clone(),
    };
    let put = put_write_record(schema, key, Put::new(key.row.clone()), commit_ts, &record);
    let put = put_released(schema, key, put, commit_ts);
    CheckAndMutate::new(
        key.row.clone(),
        schema.lock_family.clone(),
        schema.qualifier(key),
        CompareOp::Equal,
        lock_bytes.to_vec(),
    )
    .put(put)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hbase::Mutation;
    use crate::txn::actions::fixtures::{key, lock};
    use crate::txn::codec::{decode_lock_state, decode_write, encode_lock, LockState};

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
}
