//! Server counters: cheap relaxed atomics bumped on the request path, read by the periodic log
//! line and by the protocol's stats request.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use serde::Serialize;

use crate::metrics;

/// Batch sizes are counted in power-of-two buckets: bucket `i` holds counts in `2^i..2^(i+1)`.
pub(crate) const BATCH_BUCKETS: usize = 17;

#[derive(Debug, Default)]
pub(crate) struct Stats {
    requests: AtomicU64,
    timestamps: AtomicU64,
    window_top: AtomicU64,
    last_timestamp: AtomicU64,
    window_extensions: AtomicU64,
    connections_open: AtomicU64,
    connections_total: AtomicU64,
    connections_rejected: AtomicU64,
    bad_requests: AtomicU64,
    batch_sizes: [AtomicU64; BATCH_BUCKETS],
}

impl Stats {
    pub fn served(&self, count: u32, first: u64) {
        self.requests.fetch_add(1, Relaxed);
        self.timestamps.fetch_add(u64::from(count), Relaxed);
        metrics::count(metrics::key!(metrics::ORACLE_REQUESTS));
        metrics::count_n(metrics::key!(metrics::ORACLE_TIMESTAMPS), u64::from(count));
        self.last_timestamp
            .fetch_max(first + u64::from(count) - 1, Relaxed);
        let bucket = (31 - count.leading_zeros()) as usize;
        self.batch_sizes[bucket.min(BATCH_BUCKETS - 1)].fetch_add(1, Relaxed);
    }

    pub fn window_extended(&self, top: u64) {
        self.window_extensions.fetch_add(1, Relaxed);
        metrics::count(metrics::key!(metrics::ORACLE_EXTENSIONS));
        self.window_top.fetch_max(top, Relaxed);
    }

    pub fn set_window_top(&self, top: u64) {
        self.window_top.fetch_max(top, Relaxed);
    }

    pub fn connection_opened(&self) {
        self.connections_total.fetch_add(1, Relaxed);
        self.connections_open.fetch_add(1, Relaxed);
        metrics::gauge_add(metrics::key!(metrics::ORACLE_CONNECTIONS), 1.0);
    }

    pub fn connection_closed(&self) {
        self.connections_open.fetch_sub(1, Relaxed);
        metrics::gauge_add(metrics::key!(metrics::ORACLE_CONNECTIONS), -1.0);
    }

    pub fn connection_rejected(&self) {
        self.connections_rejected.fetch_add(1, Relaxed);
        metrics::count(metrics::key!(metrics::ORACLE_REJECTED));
    }

    pub fn bad_request(&self) {
        self.bad_requests.fetch_add(1, Relaxed);
    }

    pub fn snapshot(&self) -> StatsSnapshot {
        StatsSnapshot {
            requests: self.requests.load(Relaxed),
            timestamps: self.timestamps.load(Relaxed),
            window_top: self.window_top.load(Relaxed),
            last_timestamp: self.last_timestamp.load(Relaxed),
            window_extensions: self.window_extensions.load(Relaxed),
            connections_open: self.connections_open.load(Relaxed),
            connections_total: self.connections_total.load(Relaxed),
            connections_rejected: self.connections_rejected.load(Relaxed),
            bad_requests: self.bad_requests.load(Relaxed),
            batch_sizes: std::array::from_fn(|i| self.batch_sizes[i].load(Relaxed)),
        }
    }
}

/// A point-in-time copy of an oracle server's counters (the stats reply): for monitoring and
/// for checking in tests that clients batch their requests.
///
/// ```
/// use percolator::oracle::{MemoryStore, OracleClient, OracleServer};
/// let oracle = OracleServer::start_local(MemoryStore::new())?;
/// let client = OracleClient::connect(&[oracle.local_addr().to_string()], Default::default())?;
/// let last = *client.get_timestamps(10)?.last().unwrap();
/// let stats = client.server_stats()?;
/// assert_eq!((stats.requests, stats.timestamps), (1, 10));
/// assert_eq!(stats.last_timestamp, last);
/// assert!(stats.window_top >= last, "nothing is served above the persisted top");
/// # Ok::<(), percolator::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StatsSnapshot {
    /// Timestamp requests answered (one request may carry many timestamps).
    pub requests: u64,
    /// Timestamps handed out.
    pub timestamps: u64,
    /// The persisted window top: nothing above it was or will be served by this process.
    pub window_top: u64,
    /// The highest timestamp handed out.
    pub last_timestamp: u64,
    /// Times the persisted window top was raised.
    pub window_extensions: u64,
    /// Connections open now.
    pub connections_open: u64,
    /// Connections accepted since the server started.
    pub connections_total: u64,
    /// Connections turned away because the server was at its connection limit.
    pub connections_rejected: u64,
    /// Connections closed for malformed input or timeouts.
    pub bad_requests: u64,
    /// Requests by count: bucket `i` holds counts in `2^i..2^(i+1)`.
    pub batch_sizes: [u64; BATCH_BUCKETS],
}

const SCALAR_FIELDS: usize = 9;

impl StatsSnapshot {
    /// The wire order of the stats reply's u64 fields.
    pub(crate) fn to_fields(&self) -> Vec<u64> {
        let mut v = vec![
            self.requests,
            self.timestamps,
            self.window_top,
            self.last_timestamp,
            self.window_extensions,
            self.connections_open,
            self.connections_total,
            self.connections_rejected,
            self.bad_requests,
        ];
        v.extend_from_slice(&self.batch_sizes);
        v
    }

    /// Decodes a stats reply's fields (in declaration order, `batch_sizes` last); fields a
    /// newer server adds are ignored and fields an older one lacks read as zero.
    ///
    /// ```
    /// use percolator::oracle::StatsSnapshot;
    /// let stats = StatsSnapshot::from_fields(&[3, 12]);
    /// assert_eq!((stats.requests, stats.timestamps), (3, 12));
    /// assert_eq!(stats.window_top, 0, "missing fields read as zero");
    /// ```
    pub fn from_fields(fields: &[u64]) -> Self {
        let f = |i: usize| fields.get(i).copied().unwrap_or(0);
        StatsSnapshot {
            requests: f(0),
            timestamps: f(1),
            window_top: f(2),
            last_timestamp: f(3),
            window_extensions: f(4),
            connections_open: f(5),
            connections_total: f(6),
            connections_rejected: f(7),
            bad_requests: f(8),
            batch_sizes: std::array::from_fn(|i| f(SCALAR_FIELDS + i)),
        }
    }

    /// Mean timestamps per request.
    pub(crate) fn mean_batch(&self) -> f64 {
        if self.requests == 0 {
            0.0
        } else {
            self.timestamps as f64 / self.requests as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_round_trips_through_wire_fields() {
        let stats = Stats::default();
        stats.served(1, 100);
        stats.served(3, 200);
        stats.served(1 << 16, 300);
        stats.window_extended(999);
        let snap = stats.snapshot();
        assert_eq!(snap.requests, 3);
        assert_eq!(snap.timestamps, 4 + (1 << 16));
        assert_eq!(snap.batch_sizes[0], 1);
        assert_eq!(snap.batch_sizes[1], 1);
        assert_eq!(snap.batch_sizes[16], 1);
        assert_eq!(snap.last_timestamp, 300 + (1 << 16) - 1);
        assert_eq!(StatsSnapshot::from_fields(&snap.to_fields()), snap);
    }
}
