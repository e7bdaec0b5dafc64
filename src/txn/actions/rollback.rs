//! Rollback of a lock, and fencing of a primary whose prewrite may still be in flight.

use crate::format::{Lock, MutationKind, WriteKind, WriteRecord};
use crate::hbase::{CheckAndMutate, CompareOp, Put};
use crate::key::CellKey;
use crate::txn::actions::{delete_data_versions, put_released, put_write_record, unlocked_below};
use crate::txn::granularity::LockGranularity;
use crate::txn::schema::Schema;

fn rollback_record(start_ts: u64) -> WriteRecord {
    WriteRecord {
        kind: WriteKind::Rollback,
        start_ts,
        short_value: None,
    }
}

/// Rolls back `lock` on `key`, conditional on its exact bytes (docs/design.md invariant 4). The
/// release sets the high-water mark to start_ts, so a late or duplicated prewrite of this
/// transaction fails. On the primary a Rollback record at start_ts makes the outcome explicit
/// for anyone checking the transaction's status. A row lock is rolled back whole: every data
/// version it wrote goes in the same CAS.
pub fn rollback(schema: &Schema, key: &CellKey, lock: &Lock, lock_bytes: &[u8]) -> CheckAndMutate {
    let q = lock.qualifier(key);
    let mut put = put_released(schema, q.clone(), Put::new(key.row.clone()), lock.start_ts);
    if lock.is_primary_lock(key) {
        let primary = &lock.primary;
        put = put_write_record(
            schema,
            (&primary.family, &primary.qualifier),
            put,
            lock.start_ts,
            &rollback_record(lock.start_ts),
        );
    }
    let cam = CheckAndMutate::new(
        key.row.clone(),
        schema.lock_family.clone(),
        q,
        CompareOp::Equal,
        lock_bytes.to_vec(),
    )
    .put(put);
    let columns = lock.columns(key);
    let written = columns
        .iter()
        .filter(|c| c.kind == MutationKind::Put)
        .map(|c| (c.family.as_slice(), c.qualifier.as_slice()));
    match delete_data_versions(&key.row, written, lock.start_ts) {
        Some(delete) => cam.delete(delete),
        None => cam,
    }
}

/// Makes a prewrite of the primary at `start_ts` impossible, so that the transaction can be
/// declared rolled back while its primary prewrite may still be in flight (parallel prewrite).
/// Passes under the same condition as that prewrite would (released below start_ts), so
/// exactly one of the two wins. `absent` as in [`super::prewrite`]; `primary_row`: the
/// primary's lock is its row's lock.
pub fn fence(
    schema: &Schema,
    primary: &CellKey,
    start_ts: u64,
    absent: bool,
    primary_row: bool,
) -> CheckAndMutate {
    let (op, expected) = unlocked_below(start_ts, absent);
    let q = LockGranularity::of_primary(primary_row)
        .lock_qualifier(&schema.qualifier(primary))
        .to_vec();
    let put = put_released(schema, q.clone(), Put::new(primary.row.clone()), start_ts);
    let put = put_write_record(
        schema,
        (&primary.family, &primary.qualifier),
        put,
        start_ts,
        &rollback_record(start_ts),
    );
    CheckAndMutate::new(
        primary.row.clone(),
        schema.lock_family.clone(),
        q,
        op,
        expected,
    )
    .put(put)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::fixtures::{key, lock, row_lock};
    use crate::format::{
        decode_lock_state, decode_write, encode_lock, encode_released, LockState,
        ROW_LOCK_QUALIFIER,
    };
    use crate::hbase::{DeleteType, Mutation};

    fn puts(cam: &CheckAndMutate) -> &Put {
        match &cam.mutations.mutations[0] {
            Mutation::Put(p) => p,
            Mutation::Delete(_) => panic!("expected a put first"),
        }
    }

    #[test]
    fn rollback_of_a_secondary_raises_the_mark_and_removes_its_data_version() {
        let schema = Schema::default();
        let l = lock(100, "primary");
        let bytes = encode_lock(&l);
        let cam = rollback(&schema, &key("secondary"), &l, &bytes);
        assert_eq!((cam.op, &cam.value), (CompareOp::Equal, &bytes));
        let put = puts(&cam);
        assert_eq!(put.cells.len(), 1, "no rollback record on secondaries");
        assert_eq!(
            decode_lock_state(Some(&put.cells[0].value)).unwrap(),
            LockState::Released { max_ts: 100 }
        );
        let Mutation::Delete(d) = &cam.mutations.mutations[1] else {
            panic!("expected the data delete")
        };
        assert_eq!(d.delete_type, DeleteType::Column);
        assert_eq!(d.columns[0].timestamp, Some(100));
    }

    #[test]
    fn rollback_of_a_primary_leaves_a_rollback_record() {
        let schema = Schema::default();
        let l = lock(100, "primary");
        let cam = rollback(&schema, &key("primary"), &l, &encode_lock(&l));
        let put = puts(&cam);
        let rec = put
            .cells
            .iter()
            .find(|c| c.family == schema.write_family)
            .unwrap();
        assert_eq!(rec.timestamp, Some(100));
        assert_eq!(decode_write(&rec.value).unwrap().kind, WriteKind::Rollback);
    }

    #[test]
    fn fence_passes_exactly_when_the_prewrite_would() {
        let cam = fence(&Schema::default(), &key("p"), 100, false, false);
        assert_eq!(
            (cam.op, cam.value),
            (CompareOp::Greater, encode_released(100))
        );
        let cam = fence(&Schema::default(), &key("p"), 100, true, false);
        assert_eq!((cam.op, cam.value), (CompareOp::Equal, Vec::new()));
        let cam = fence(&Schema::default(), &key("p"), 100, false, true);
        assert_eq!(
            cam.qualifier, ROW_LOCK_QUALIFIER,
            "a row primary is fenced on its row lock"
        );
    }

    #[test]
    fn rollback_of_a_row_lock_removes_every_data_version_it_wrote_and_records_on_the_primary() {
        let schema = Schema::default();
        let l = row_lock(100, "r1");
        let bytes = encode_lock(&l);
        let cam = rollback(&schema, &key("r1"), &l, &bytes);
        assert_eq!(cam.qualifier, ROW_LOCK_QUALIFIER);
        let put = puts(&cam);
        let rec = put
            .cells
            .iter()
            .find(|c| c.family == schema.write_family)
            .expect("the primary's row records the rollback");
        assert_eq!(rec.qualifier, schema.qualifier(&l.primary));
        let Mutation::Delete(d) = &cam.mutations.mutations[1] else {
            panic!("expected the data delete")
        };
        // f:a was a put, f:b a delete: only f:a left a data version.
        assert_eq!(d.columns.len(), 1);
        assert_eq!(d.columns[0].qualifier.as_deref(), Some(&b"a"[..]));
        assert_eq!(d.columns[0].timestamp, Some(100));
        let secondary = rollback(&schema, &key("r2"), &l, &bytes);
        assert!(puts(&secondary)
            .cells
            .iter()
            .all(|c| c.family != schema.write_family));
    }
}
