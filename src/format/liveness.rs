//! A liveness row: one row per live client in the liveness table, keyed by the client's
//! owner id (the id its locks name), written with server time so that the families' TTLs
//! count from the last refresh.
//!
//! | family (TTL) | qualifier | value |
//! |---|---|---|
//! | `l` (liveness TTL, 5 s by default) | `a` | the owner's wall ms, BE u64 |
//! | `l` | `o` | the oldest open start_ts, BE u64; empty when none is open |
//! | `p` (publication TTL, 120 s by default) | `o` | the same, under the longer lease |
//!
//! A row with `l:a` is a live client. Clients of an earlier version write only `l:o`.

/// The liveness family: a row with a cell here is a live client.
pub const LIVENESS_FAMILY: &[u8] = b"l";
/// The publication family: the oldest open start_ts again, under the longer lease.
pub const PUBLICATION_FAMILY: &[u8] = b"p";
/// The cell that says a client is alive.
pub const ALIVE_QUALIFIER: &[u8] = b"a";
/// The oldest start_ts among the client's open transactions: GC keeps the safe point at or
/// below every one published (docs/gc.md).
pub const OLDEST_QUALIFIER: &[u8] = b"o";

/// How a published oldest open start_ts is stored.
pub fn encode_oldest(oldest_open: Option<u64>) -> Vec<u8> {
    oldest_open.map_or(Vec::new(), |ts| ts.to_be_bytes().to_vec())
}

/// A published oldest open start_ts; `None` when none is open, or for a value that does not
/// decode (a row being rewritten by an older client).
pub fn decode_oldest(value: &[u8]) -> Option<u64> {
    <[u8; 8]>::try_from(value).ok().map(u64::from_be_bytes)
}
