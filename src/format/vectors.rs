//! Compatibility vectors: the bytes of each stored format as tables hold them today, written out
//! by hand from the layouts documented beside each format. A change that alters what is
//! written, or how stored bytes read, fails here: existing tables hold these bytes, and a
//! new format must be added beside them (a new format byte, a new qualifier), never in their
//! place.

use super::liveness::{decode_oldest, encode_oldest};
use super::meta::{
    decode_safe_point, encode_safe_point, meta_row, META_FAMILY, SAFE_POINT_QUALIFIER,
};
use super::observer::{
    ack_qualifier, bucket, lease_row, lease_value, notification_qualifier, observed_qualifier,
    parse_lease, parse_notification, parse_observed, worker_expiry, worker_prefix,
};
use super::*;
use crate::hbase::{Cell, RowResult};
use crate::key::CellKey;

fn hex(text: &str) -> Vec<u8> {
    let digits: String = text.split_whitespace().collect();
    (0..digits.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&digits[i..i + 2], 16).expect("hex"))
        .collect()
}

fn cell_lock() -> Lock {
    Lock {
        start_ts: 0x10,
        kind: MutationKind::Put,
        primary: CellKey::new("t", "r", "f", "q").expect("key"),
        owner: "o".into(),
        wall_ms: 0x20,
        ttl_ms: 0x30,
        short_value: Some(b"v".to_vec()),
        row: None,
        primary_row: false,
    }
}

/// A cell lock: format 1, the bytes cell-granularity tables always had.
const CELL_LOCK: &str = "01 01 0000000000000010 01 0000000000000020 0000000000000030
    0001 6f  0001 74  00000001 72  0001 66  0001 71  01 00000001 76";

/// A row lock listing `f:a` (a put of "1"): format 2, the format 1 fields, then the row part.
const ROW_LOCK: &str = "01 02 0000000000000010 03 0000000000000020 0000000000000030
    0001 6f  0001 74  00000001 72  0001 66  0001 71  00
    01 01 00000001  0001 66  0001 61  01  01 00000001 31";

#[test]
fn locks_are_stored_as_they_always_were() {
    assert_eq!(encode_lock(&cell_lock()), hex(CELL_LOCK));
    assert_eq!(
        decode_lock_state(Some(&hex(CELL_LOCK))),
        Ok(LockState::Locked(cell_lock()))
    );
    let row_lock = Lock {
        kind: MutationKind::Lock,
        short_value: None,
        row: Some(vec![RowColumn {
            family: b"f".to_vec(),
            qualifier: b"a".to_vec(),
            kind: MutationKind::Put,
            short_value: Some(b"1".to_vec()),
        }]),
        primary_row: true,
        ..cell_lock()
    };
    assert_eq!(encode_lock(&row_lock), hex(ROW_LOCK));
    assert_eq!(
        decode_lock_state(Some(&hex(ROW_LOCK))),
        Ok(LockState::Locked(row_lock))
    );
    assert_eq!(ROW_LOCK_QUALIFIER, b"");
}

#[test]
fn released_lock_cells_and_write_records_are_stored_as_they_always_were() {
    let released = hex("00 0102030405060708");
    assert_eq!(encode_released(0x0102_0304_0506_0708), released);
    assert_eq!(
        decode_lock_state(Some(&released)),
        Ok(LockState::Released {
            max_ts: 0x0102_0304_0506_0708
        })
    );
    assert_eq!(decode_lock_state(None), Ok(LockState::Absent));
    let records = [
        (
            WriteKind::Put,
            Some(b"v".to_vec()),
            "01 0000000000000010 01 00000001 76",
        ),
        (WriteKind::Put, None, "01 0000000000000010 00"),
        (WriteKind::Delete, None, "02 0000000000000010 00"),
        (WriteKind::Rollback, None, "03 0000000000000010 00"),
        (WriteKind::Lock, None, "04 0000000000000010 00"),
    ];
    for (kind, short_value, bytes) in records {
        let record = WriteRecord {
            kind,
            start_ts: 0x10,
            short_value,
        };
        assert_eq!(encode_write(&record), hex(bytes), "{kind:?}");
        assert_eq!(decode_write(&hex(bytes)), Ok(record));
    }
}

#[test]
fn column_and_observer_qualifiers_are_stored_as_they_always_were() {
    assert_eq!(column_qualifier(b"f", b"q"), hex("01 66 71"));
    assert_eq!(
        split_column_qualifier(&hex("01 66 71")),
        Ok((b"f".to_vec(), b"q".to_vec()))
    );
    assert_eq!(notification_qualifier(b"f", b"q"), b"n\x01fq");
    assert_eq!(
        parse_notification(b"n\x01fq"),
        Some((b"f".to_vec(), b"q".to_vec()))
    );
    assert_eq!(ack_qualifier("obs", b"f", b"q"), b"aobs\x00\x01fq");
    assert_eq!(observed_qualifier(b"f", b"q"), b"obs:col:\x01fq");
    assert_eq!(
        parse_observed(b"obs:col:\x01fq"),
        Some((b"f".to_vec(), b"q".to_vec()))
    );
}

#[test]
fn meta_and_liveness_rows_are_stored_as_they_always_were() {
    assert_eq!(meta_row("accounts"), b"table/accounts");
    assert_eq!(encode_safe_point(100), hex("0000000000000064"));
    let global = RowResult {
        row: b"global".to_vec(),
        cells: vec![Cell {
            family: META_FAMILY.to_vec(),
            qualifier: SAFE_POINT_QUALIFIER.to_vec(),
            timestamp: 1,
            value: hex("0000000000000064"),
        }],
        partial: false,
    };
    assert_eq!(decode_safe_point(&global, "m").expect("safe point"), 100);
    assert_eq!(
        (META_FAMILY, SAFE_POINT_QUALIFIER),
        (&b"m"[..], &b"gc:safe_point"[..])
    );
    assert_eq!(encode_oldest(Some(5)), hex("0000000000000005"));
    assert_eq!(encode_oldest(None), b"");
    assert_eq!(decode_oldest(&hex("0000000000000005")), Some(5));
    assert_eq!(decode_oldest(b""), None);
    assert_eq!(
        decode_oldest(&hex("000005")),
        None,
        "a value that does not decode"
    );
}

/// The partition function is stored too: a change to it would move rows between partitions
/// across a rolling upgrade.
#[test]
fn observer_leases_and_partitions_are_stored_as_they_always_were() {
    assert_eq!(lease_row("docs", 7), b"obs-hash-lease/docs/007");
    assert_eq!(lease_value("w-1", 42), b"w-1\n42");
    assert_eq!(parse_lease(b"w-1\n42"), Some(("w-1".to_string(), 42)));
    assert_eq!(parse_lease(b"garbage"), None);
    assert_eq!(worker_prefix("docs"), b"obs-hash-worker/docs/");
    assert_eq!((worker_expiry(b"1700"), worker_expiry(b"soon")), (1700, 0));
    let pinned: Vec<usize> = ["", "a", "user000000", "user099999"]
        .iter()
        .map(|k| bucket(k.as_bytes(), 256))
        .collect();
    // Computed apart from this code (a few lines of Python of the same definition).
    assert_eq!(pinned, [38, 91, 141, 121]);
}
