//! The meta table's rows: transactional state that must live in HBase so that every client and
//! tool sees the same. One family, `m`, one version per cell; one row per user table
//! (`table/<name>`) and one global row (`global`). Each feature owns a qualifier prefix:
//!
//! | row | qualifier | value |
//! |---|---|---|
//! | `table/<name>` | `lock:granularity` | `cell` or `row`; absent: cell |
//! | `table/<name>` | `mig:state` | `applying`, `adopted` or `disabling` |
//! | `table/<name>` | `mig:original` | the user families' settings before the migration (JSON) |
//! | `table/<name>` | `mig:since`, `mig:ttl_cut`, `mig:adopted_at` | wall ms, decimal text |
//! | `table/<name>` | `mig:pass` | the adoption pass under way and its position (JSON) |
//! | `table/<name>` | `obs:col:` + column qualifier | the observer's name (`observer`) |
//! | `global` | `gc:safe_point` | BE u64 |
//!
//! The observers' lease and worker rows share the table (`observer`).

use crate::error::{Error, Result};
use crate::hbase::RowResult;

/// The meta table's one family.
pub const META_FAMILY: &[u8] = b"m";
/// The row of state that belongs to no one table.
pub const GLOBAL_ROW: &[u8] = b"global";

/// The meta row of user table `table`.
///
/// ```
/// assert_eq!(percolator::txn::meta_row("accounts"), b"table/accounts".to_vec());
/// ```
pub fn meta_row(table: &str) -> Vec<u8> {
    // Sized at once: the key is made whenever a table's meta row is read.
    const PREFIX: &[u8] = b"table/";
    let mut row = Vec::with_capacity(PREFIX.len() + table.len());
    row.extend_from_slice(PREFIX);
    row.extend_from_slice(table.as_bytes());
    row
}

/// The cell of a table's lock granularity (docs/design.md invariant 14), and its two values.
pub const LOCK_GRANULARITY: &[u8] = b"lock:granularity";
pub const GRANULARITY_CELL: &[u8] = b"cell";
pub const GRANULARITY_ROW: &[u8] = b"row";

/// The migration marker (`percolator migrate`): `applying` while a table's data is being
/// adopted, `adopted` once done, `disabling` while it is returned to plain use.
pub const MIG_STATE: &[u8] = b"mig:state";
pub const MIG_APPLYING: &[u8] = b"applying";
pub const MIG_ADOPTED: &[u8] = b"adopted";
pub const MIG_DISABLING: &[u8] = b"disabling";
/// The marker states during which transaction clients refuse the table.
pub const MIG_BUSY_STATES: [&[u8]; 2] = [MIG_APPLYING, MIG_DISABLING];
/// The user families' settings before `apply` changed them (JSON), for `disable`.
pub const MIG_ORIGINAL: &[u8] = b"mig:original";
/// Wall ms when the marker was written: clients may trust a cached meta row that long.
pub const MIG_SINCE: &[u8] = b"mig:since";
/// Wall ms just before the TTLs were lifted: cells expired then stay absent.
pub const MIG_TTL_CUT: &[u8] = b"mig:ttl_cut";
/// The adoption pass under way (0 = the first full pass, then catch-up passes).
pub const MIG_PASS: &[u8] = b"mig:pass";
/// Wall ms when the table was adopted.
pub const MIG_ADOPTED_AT: &[u8] = b"mig:adopted_at";

/// The GC safe point's cell in the global row.
pub const SAFE_POINT_QUALIFIER: &[u8] = b"gc:safe_point";

/// How a safe point is stored.
pub fn encode_safe_point(safe_point: u64) -> Vec<u8> {
    safe_point.to_be_bytes().to_vec()
}

/// The safe point stored in `global` (the meta table's global row); 0 when none is stored.
pub fn decode_safe_point(global: &RowResult, meta_table: &str) -> Result<u64> {
    match global.value(META_FAMILY, SAFE_POINT_QUALIFIER) {
        None => Ok(0),
        Some(bytes) => <[u8; 8]>::try_from(bytes)
            .map(u64::from_be_bytes)
            .map_err(|_| Error::Corrupted {
                what: "safe point",
                table: meta_table.to_string(),
                row: GLOBAL_ROW.to_vec(),
                column: SAFE_POINT_QUALIFIER.to_vec(),
                reason: format!("{} bytes, expected 8", bytes.len()),
            }),
    }
}
