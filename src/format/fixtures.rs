//! Stored cells and locks as the tests of the steps that read and write them build them.

use super::{encode_write, Lock, MutationKind, RowColumn, WriteKind, WriteRecord};
use crate::hbase::Cell;
use crate::key::CellKey;

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
        row: None,
        primary_row: false,
    }
}

/// A row lock on row `row` of table `t`, listing `f:a` (a put of "1") and `f:b` (a
/// delete), whose primary is the row lock of `primary`.
pub fn row_lock(start_ts: u64, primary: &str) -> Lock {
    Lock {
        kind: MutationKind::Lock,
        short_value: None,
        row: Some(vec![
            RowColumn {
                family: b"f".to_vec(),
                qualifier: b"a".to_vec(),
                kind: MutationKind::Put,
                short_value: Some(b"1".to_vec()),
            },
            RowColumn {
                family: b"f".to_vec(),
                qualifier: b"b".to_vec(),
                kind: MutationKind::Delete,
                short_value: None,
            },
        ]),
        primary_row: true,
        ..lock(start_ts, primary)
    }
}
