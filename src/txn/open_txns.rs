//! The start timestamps of this client's open transactions (snapshots at a chosen timestamp
//! included). The heartbeat publishes the oldest in the client's liveness row, and GC never
//! moves the safe point above any published one (docs/gc.md), so a long transaction keeps
//! its versions.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;

/// Every transaction registers and unregisters here, from any runtime thread: the map is split
/// in shards so that they rarely wait on one another's lock.
const SHARDS: usize = 16;

/// start_ts -> how many open transactions share it (snapshots may repeat a timestamp).
type Starts = BTreeMap<u64, u32>;

#[derive(Default)]
pub(crate) struct OpenTransactions {
    shards: [Mutex<Starts>; SHARDS],
}

impl OpenTransactions {
    fn shard(&self, start_ts: u64) -> &Mutex<Starts> {
        &self.shards[(start_ts as usize) % SHARDS]
    }

    /// Registers `start_ts` until the returned guard is dropped.
    pub fn register(self: &Arc<Self>, start_ts: u64) -> Registration {
        *self.shard(start_ts).lock().entry(start_ts).or_default() += 1;
        Registration {
            open: Arc::clone(self),
            start_ts,
        }
    }

    pub fn oldest(&self) -> Option<u64> {
        self.shards
            .iter()
            .filter_map(|s| s.lock().keys().next().copied())
            .min()
    }
}

/// One open transaction; dropping it (commit, rollback, or the transaction dropped) ends it.
pub(crate) struct Registration {
    open: Arc<OpenTransactions>,
    start_ts: u64,
}

impl Registration {
    pub fn start_ts(&self) -> u64 {
        self.start_ts
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut starts = self.open.shard(self.start_ts).lock();
        if let Some(n) = starts.get_mut(&self.start_ts) {
            *n -= 1;
            if *n == 0 {
                starts.remove(&self.start_ts);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_open_start_ts_is_published_until_its_last_holder_ends() {
        let open = Arc::new(OpenTransactions::default());
        assert_eq!(open.oldest(), None);
        let a = open.register(20);
        let b = open.register(10);
        let c = open.register(10);
        assert_eq!(open.oldest(), Some(10));
        drop(b);
        assert_eq!(
            open.oldest(),
            Some(10),
            "a second snapshot at 10 is still open"
        );
        drop(c);
        assert_eq!(open.oldest(), Some(20));
        drop(a);
        assert_eq!(open.oldest(), None);
    }
}
