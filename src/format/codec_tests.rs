//! Round trips and damage of locks, write records and column qualifiers.

use super::fixtures::row_lock;
use super::lock::{LOCK_FORMAT, LOCK_FORMAT_ROW};
use super::*;
use crate::key::CellKey;

fn lock(start_ts: u64) -> Lock {
    Lock {
        start_ts,
        kind: MutationKind::Put,
        primary: CellKey::new("t", b"r1".to_vec(), b"f".to_vec(), b"q".to_vec()).unwrap(),
        owner: "owner-1".into(),
        wall_ms: 1_700_000_000_000,
        ttl_ms: 3000,
        short_value: Some(b"v".to_vec()),
        row: None,
        primary_row: false,
    }
}

#[test]
fn row_locks_round_trip_and_cell_locks_keep_format_1() {
    for l in [
        row_lock(42, "r1"),
        Lock {
            primary_row: true,
            ..lock(43)
        },
    ] {
        let bytes = encode_lock(&l);
        assert_eq!(bytes[1], LOCK_FORMAT_ROW);
        assert_eq!(
            decode_lock_state(Some(&bytes)).unwrap(),
            LockState::Locked(l)
        );
    }
    assert_eq!(encode_lock(&lock(44))[1], LOCK_FORMAT);
}

#[test]
fn a_row_lock_is_stored_apart_from_every_column_and_covers_only_its_own() {
    let l = row_lock(42, "r1");
    let key = CellKey::new("t", b"r1".to_vec(), b"f".to_vec(), b"a".to_vec()).unwrap();
    assert_eq!(l.qualifier(&key), ROW_LOCK_QUALIFIER);
    assert_ne!(column_qualifier(b"f", b""), ROW_LOCK_QUALIFIER);
    assert!(l.covers(b"f", b"a") && l.covers(b"f", b"b"));
    assert!(!l.covers(b"f", b"") && !l.covers(b"f", b"c") && !l.covers(b"g", b"a"));
    let other_row = CellKey::new("t", b"r2".to_vec(), b"f".to_vec(), b"a".to_vec()).unwrap();
    let other_column = CellKey::new("t", b"r1".to_vec(), b"g".to_vec(), b"z".to_vec()).unwrap();
    assert!(l.is_primary_lock(&other_column) && !l.is_primary_lock(&other_row));
    assert!(!lock(42).is_primary_lock(&other_column));
}

#[test]
fn damaged_row_locks_are_errors_not_panics() {
    let good = encode_lock(&row_lock(9, "r1"));
    for cut in 0..good.len() {
        assert!(
            decode_lock_state(Some(&good[..cut])).is_err(),
            "cut at {cut}"
        );
    }
    let mut huge_count = encode_lock(&Lock {
        row: Some(Vec::new()),
        ..row_lock(9, "r1")
    });
    let n = huge_count.len();
    huge_count[n - 4..].copy_from_slice(&u32::MAX.to_be_bytes());
    assert!(decode_lock_state(Some(&huge_count)).is_err());
    let empty = encode_lock(&Lock {
        row: Some(Vec::new()),
        ..row_lock(9, "r1")
    });
    assert!(decode_lock_state(Some(&empty)).is_err());
}

#[test]
fn lock_round_trips() {
    let l = lock(42);
    assert_eq!(
        decode_lock_state(Some(&encode_lock(&l))).unwrap(),
        LockState::Locked(l)
    );
}

#[test]
fn released_round_trips_and_absent_is_absent() {
    assert_eq!(
        decode_lock_state(Some(&encode_released(7))).unwrap(),
        LockState::Released { max_ts: 7 }
    );
    assert_eq!(decode_lock_state(None).unwrap(), LockState::Absent);
}

/// The byte order that makes a prewrite one CAS: `0x00||BE(s) > cell` iff released with M < s.
#[test]
fn prewrite_condition_is_carried_by_byte_order() {
    let probe = encode_released(100);
    assert!(probe.as_slice() > encode_released(99).as_slice());
    assert!(probe.as_slice() <= encode_released(100).as_slice());
    assert!(probe.as_slice() <= encode_released(101).as_slice());
    assert!(probe.as_slice() < encode_lock(&lock(1)).as_slice());
    assert!(probe.as_slice() < encode_lock(&lock(500)).as_slice());
}

/// The mark is stored big-endian, so that byte order is numeric order for every value, not
/// only for values under 256 (where both byte orders sort alike). Real oracle timestamps
/// (`ms << 18 | logical`) that differ in a high byte and go the other way in the low byte
/// must compare as numbers: a prewrite's probe `0x00||BE(start_ts)` sorts above the stored
/// mark exactly when the mark is below start_ts (invariant 2). A little-endian mark that
/// decodes back to the same number round-trips but fails here.
#[test]
fn released_marks_sort_as_their_timestamps_in_every_byte() {
    assert_eq!(
        encode_released(0x0102_0304_0506_0708),
        [0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08],
        "tag, then the mark big-endian"
    );
    assert_eq!(
        decode_lock_state(Some(&[
            0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08
        ]))
        .unwrap(),
        LockState::Released {
            max_ts: 0x0102_0304_0506_0708
        },
        "a mark stored big-endian decodes as such"
    );
    let ts = |ms: u64, logical: u64| ms << 18 | logical;
    let ms = 1_764_000_000_123;
    let marks = [
        0,
        1,
        255,
        256,
        257,
        0x00ff_ffff,
        0x0100_0000,
        0x0100_0000_0000_0000,
        0x00ff_ffff_ffff_ffff,
        ts(ms, 0),
        ts(ms, 1),
        ts(ms, 255),
        ts(ms, 256),
        ts(ms, (1 << 18) - 1),
        ts(ms + 1, 0),
        ts(ms + 1, 254),
        ts(ms + 255, 3),
        ts(ms + 256, 0),
        ts(ms + 1_000, 7),
        ts(ms + 86_400_000, 0),
        u64::MAX,
    ];
    for &start_ts in &marks {
        let probe = encode_released(start_ts);
        for &max_ts in &marks {
            let stored = encode_released(max_ts);
            assert_eq!(
                probe.as_slice().cmp(stored.as_slice()),
                start_ts.cmp(&max_ts),
                "probe {start_ts:#x} against mark {max_ts:#x}"
            );
            assert_eq!(
                probe.as_slice() > stored.as_slice(),
                max_ts < start_ts,
                "a prewrite at {start_ts:#x} passes iff the mark {max_ts:#x} is below it"
            );
        }
        assert!(probe.as_slice() < encode_lock(&lock(start_ts)).as_slice());
    }
}

#[test]
fn corrupted_cells_are_errors_not_panics() {
    let good = encode_lock(&lock(9));
    for cut in 0..good.len() {
        assert!(
            decode_lock_state(Some(&good[..cut])).is_err(),
            "cut at {cut}"
        );
    }
    let mut trailing = good.clone();
    trailing.push(0);
    assert!(decode_lock_state(Some(&trailing)).is_err());
    assert!(decode_lock_state(Some(&[0xff, 1, 2])).is_err());
    assert!(decode_lock_state(Some(&[0x00, 1])).is_err());
    assert!(decode_write(&[9, 0, 0]).is_err());
    assert!(decode_write(&[]).is_err());
}

#[test]
fn write_records_round_trip() {
    for rec in [
        WriteRecord {
            kind: WriteKind::Put,
            start_ts: 5,
            short_value: Some(b"abc".to_vec()),
        },
        WriteRecord {
            kind: WriteKind::Put,
            start_ts: 5,
            short_value: None,
        },
        WriteRecord {
            kind: WriteKind::Delete,
            start_ts: 6,
            short_value: None,
        },
        WriteRecord {
            kind: WriteKind::Rollback,
            start_ts: 7,
            short_value: None,
        },
        WriteRecord {
            kind: WriteKind::Lock,
            start_ts: 8,
            short_value: None,
        },
    ] {
        assert_eq!(decode_write(&encode_write(&rec)).unwrap(), rec);
    }
}

#[test]
fn lock_only_locks_round_trip_and_may_not_carry_a_value_into_their_record() {
    let mut l = lock(9);
    l.kind = MutationKind::Lock;
    l.short_value = None;
    assert_eq!(
        decode_lock_state(Some(&encode_lock(&l))).unwrap(),
        LockState::Locked(l)
    );
    let mut bad = encode_write(&WriteRecord {
        kind: WriteKind::Lock,
        start_ts: 8,
        short_value: None,
    });
    bad.truncate(9);
    bad.extend_from_slice(&[1, 0, 0, 0, 1, b'v']);
    assert!(decode_write(&bad).is_err(), "a lock record with a value");
}

#[test]
fn column_qualifiers_do_not_collide() {
    assert_ne!(column_qualifier(b"ab", b"c"), column_qualifier(b"a", b"bc"));
    assert_eq!(
        split_column_qualifier(&column_qualifier(b"fam", b"q")).unwrap(),
        (b"fam".to_vec(), b"q".to_vec())
    );
    assert!(split_column_qualifier(&[5, b'a']).is_err());
}

/// HBase allows an empty qualifier, and so does `CellKey`: such a column's key is the
/// family alone, and it splits back whole (scans and GC name columns from these keys).
#[test]
fn a_column_with_an_empty_qualifier_splits_back() {
    let encoded = column_qualifier(b"fam", b"");
    assert_eq!(encoded, b"\x03fam");
    assert_eq!(
        split_column_qualifier(&encoded).unwrap(),
        (b"fam".to_vec(), Vec::new())
    );
    assert!(split_column_qualifier(b"\x04fam").is_err());
}
