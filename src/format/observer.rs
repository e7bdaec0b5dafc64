//! What observers store (docs/observers.md).
//!
//! In the user's tables, under the column qualifier `c` of the column concerned
//! (`column`):
//! - a notification: notify family, qualifier `n || c`, empty value, at its writer's start_ts;
//! - an acknowledgment: ack family, qualifier `a || observer name || 0x00 || c`, a
//!   transactional cell holding the commit_ts of the newest change the observer processed.
//!
//! In the meta table (`meta`):
//! - an observed column: the table's meta row, qualifier `obs:col: || c`, value the observer's
//!   name;
//! - a partition's lease: row `obs-hash-lease/<table>/<index, 3 digits>`, qualifier
//!   `obs:lease`, value `<owner>\n<expiry ms>`;
//! - a worker: row `obs-hash-worker/<table>/<owner>`, qualifier `obs:alive`, value its expiry
//!   ms (decimal text). Rows under `obs-worker/` are an earlier layout's, swept on sight.
//!
//! A row's partition among `count` is [`bucket`]: every worker must compute the same.

use super::column::{column_qualifier, split_column_qualifier};

/// Qualifier prefix of a notification in the notify family (the rest: the encoded column).
const NOTIFICATION: u8 = b'n';
/// Qualifier prefix of an acknowledgment in the ack family: never read as a notification even
/// if the families were one.
const ACK: u8 = b'a';
/// The meta row qualifier prefix of an observed column (then the encoded column).
pub const OBSERVED: &[u8] = b"obs:col:";
/// A partition lease's cell.
pub const LEASE_QUALIFIER: &[u8] = b"obs:lease";
/// A worker row's expiry cell.
pub const ALIVE_QUALIFIER: &[u8] = b"obs:alive";
const LEASE_ROWS: &str = "obs-hash-lease/";
const WORKER_ROWS: &[u8] = b"obs-hash-worker/";
/// The worker rows of the earlier layouts.
pub const LEGACY_WORKER_ROWS: &[u8] = b"obs-worker/";

/// The notification qualifier of a column.
pub fn notification_qualifier(family: &[u8], qualifier: &[u8]) -> Vec<u8> {
    let mut q = vec![NOTIFICATION];
    q.extend_from_slice(&column_qualifier(family, qualifier));
    q
}

/// The column a notification qualifier names, `None` for other cells of the family.
pub fn parse_notification(q: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    match q.split_first() {
        Some((&NOTIFICATION, rest)) => split_column_qualifier(rest).ok(),
        _ => None,
    }
}

/// The filter that makes a scan of the notify family return notifications only.
pub fn notification_filter() -> String {
    format!("ColumnPrefixFilter('{}')", NOTIFICATION as char)
}

/// The acknowledgment qualifier of `observer` for column `family:qualifier`. The observer's
/// name ends at a zero byte, so it may hold none (`check_observer_name`).
pub fn ack_qualifier(observer: &str, family: &[u8], qualifier: &[u8]) -> Vec<u8> {
    let mut q = vec![ACK];
    q.extend_from_slice(observer.as_bytes());
    q.push(0);
    q.extend_from_slice(&column_qualifier(family, qualifier));
    q
}

/// The meta row qualifier that marks the column (`family`, `qualifier`) observed.
pub fn observed_qualifier(family: &[u8], qualifier: &[u8]) -> Vec<u8> {
    let mut q = OBSERVED.to_vec();
    q.extend_from_slice(&column_qualifier(family, qualifier));
    q
}

/// The observed column an observed-qualifier names, `None` for other cells of the meta row.
pub fn parse_observed(q: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    split_column_qualifier(q.strip_prefix(OBSERVED)?).ok()
}

/// The lease row of partition `index` of `table`.
pub fn lease_row(table: &str, index: usize) -> Vec<u8> {
    format!("{LEASE_ROWS}{table}/{index:03}").into_bytes()
}

/// A lease's value: who holds it, until when (ms).
pub fn lease_value(owner: &str, expires_ms: u64) -> Vec<u8> {
    format!("{owner}\n{expires_ms}").into_bytes()
}

/// The holder and expiry of a lease value; `None` when it does not read as one.
pub fn parse_lease(value: &[u8]) -> Option<(String, u64)> {
    let text = std::str::from_utf8(value).ok()?;
    let (owner, expiry) = text.rsplit_once('\n')?;
    Some((owner.to_string(), expiry.parse().ok()?))
}

/// The prefix of the rows of `table`'s workers (then each worker's owner id).
pub fn worker_prefix(table: &str) -> Vec<u8> {
    let mut row = WORKER_ROWS.to_vec();
    row.extend_from_slice(table.as_bytes());
    row.push(b'/');
    row
}

/// A worker row's expiry (ms); 0, long past, when it does not read as one.
pub fn worker_expiry(value: &[u8]) -> u64 {
    std::str::from_utf8(value)
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0)
}

/// The partition of `row` among `count`: FNV-1a (64 bits) of the row key, mixed by
/// MurmurHash3's 64-bit finalizer, modulo `count`. The finalizer matters: FNV-1a's low bits
/// depend only on the low bits of each byte, so without it keys differing in a byte's high
/// bits would collide.
pub fn bucket(row: &[u8], count: usize) -> usize {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in row {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^= h >> 33;
    (h % count.max(1) as u64) as usize
}
