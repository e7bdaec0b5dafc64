//! The client's counters.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

/// Counters a client exposes (see `Client::stats`).
///
/// ```
/// let stats = percolator::txn::ClientStats::default();
/// assert_eq!(stats.committed, 0);
/// ```
#[derive(Clone, Debug, Default, Serialize)]
#[non_exhaustive]
pub struct ClientStats {
    pub begun: u64,
    pub committed: u64,
    /// Commits that failed and rolled back their own locks (conflicts, locked cells).
    pub aborted: u64,
    pub hbase_rpcs: u64,
    /// Timestamps used, fetched or taken at hand.
    pub timestamps: u64,
    /// Start timestamps of transactions that read nothing, taken from the oracle client's
    /// spares without a round trip (`TxnOptions::blind_write_start_age`).
    pub spare_timestamps: u64,
    /// Locks of other transactions this client rolled forward.
    pub rolled_forward: u64,
    /// Locks of other transactions this client rolled back (or primaries it fenced).
    pub rolled_back: u64,
    /// Times a read or prewrite backed off because a live transaction held a lock.
    pub lock_waits: u64,
    pub heartbeats: u64,
}

/// The live counters behind [`ClientStats`].
#[derive(Default)]
pub(crate) struct Stats {
    pub begun: AtomicU64,
    pub committed: AtomicU64,
    pub aborted: AtomicU64,
    pub hbase_rpcs: AtomicU64,
    pub timestamps: AtomicU64,
    pub spare_timestamps: AtomicU64,
    pub rolled_forward: AtomicU64,
    pub rolled_back: AtomicU64,
    pub lock_waits: AtomicU64,
    pub heartbeats: AtomicU64,
}

impl Stats {
    pub fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> ClientStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        ClientStats {
            begun: get(&self.begun),
            committed: get(&self.committed),
            aborted: get(&self.aborted),
            hbase_rpcs: get(&self.hbase_rpcs),
            timestamps: get(&self.timestamps),
            spare_timestamps: get(&self.spare_timestamps),
            rolled_forward: get(&self.rolled_forward),
            rolled_back: get(&self.rolled_back),
            lock_waits: get(&self.lock_waits),
            heartbeats: get(&self.heartbeats),
        }
    }
}
