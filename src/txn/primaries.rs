//! The primary locks of commits under way, which the heartbeat keeps fresh.
//!
//! A guard is never held across a round trip: the heartbeat copies what it rewrites, sends,
//! and records the result only if the commit has not retired the guard meanwhile. A commit
//! point that races a heartbeat then meets bytes it did not expect, and settles by re-reading
//! the primary (see `commit_point`).

use std::sync::Arc;

use parking_lot::Mutex;

use crate::key::CellKey;
use crate::txn::codec::Lock;
use crate::txn::mutation::Mutation;
use crate::txn::FastMap;

/// One registered primary.
struct Guard {
    /// The primary as prewritten, shared with the commit.
    prewritten: Arc<Mutation>,
    /// The lock and its bytes as a heartbeat rewrote them, once one has.
    refreshed: Option<(Lock, Vec<u8>)>,
    /// Cleared when a heartbeat found the lock changed or lost its reply: no more heartbeats,
    /// and the commit point settles what is stored.
    live: bool,
}

impl Guard {
    fn lock(&self) -> &Lock {
        self.refreshed
            .as_ref()
            .map_or(&self.prewritten.lock, |(lock, _)| lock)
    }

    fn bytes(&self) -> &[u8] {
        self.refreshed
            .as_ref()
            .map_or(&self.prewritten.bytes, |(_, bytes)| bytes)
    }
}

/// The primary's lock as stored (as far as this client knows): the retired guard itself, so
/// a commit compares against the prewritten mutation without copying it.
pub(crate) struct StoredLock(Guard);

impl StoredLock {
    pub fn key(&self) -> &CellKey {
        &self.0.prewritten.key
    }

    pub fn lock(&self) -> &Lock {
        self.0.lock()
    }

    pub fn bytes(&self) -> &[u8] {
        self.0.bytes()
    }
}

/// A heartbeat to send: the lock's key and the bytes it must still hold.
pub(crate) struct Due {
    pub start_ts: u64,
    pub key: CellKey,
    pub lock: Lock,
    pub bytes: Vec<u8>,
}

#[derive(Default)]
pub(crate) struct Primaries {
    guards: Mutex<FastMap<u64, Guard>>,
}

impl Primaries {
    pub fn register(&self, primary: &Arc<Mutation>) {
        self.guards.lock().insert(
            primary.lock.start_ts,
            Guard {
                prewritten: Arc::clone(primary),
                refreshed: None,
                live: true,
            },
        );
    }

    /// Stops heartbeats of `start_ts` and returns its lock as stored now.
    pub fn retire(&self, start_ts: u64) -> Option<StoredLock> {
        self.guards.lock().remove(&start_ts).map(StoredLock)
    }

    /// The primaries whose wall time is older than `older_than_ms`.
    pub fn due(&self, older_than_ms: u64) -> Vec<Due> {
        self.guards
            .lock()
            .iter()
            .filter(|(_, g)| g.live && g.lock().wall_ms < older_than_ms)
            .map(|(&start_ts, g)| Due {
                start_ts,
                key: g.prewritten.key.clone(),
                lock: g.lock().clone(),
                bytes: g.bytes().to_vec(),
            })
            .collect()
    }

    /// Records a heartbeat that rewrote the lock of `due` to `lock`/`bytes`, unless the commit
    /// retired it meanwhile.
    pub fn refreshed(&self, due: &Due, lock: Lock, bytes: Vec<u8>) {
        if let Some(g) = self.guards.lock().get_mut(&due.start_ts)
            && g.bytes() == due.bytes.as_slice()
        {
            g.refreshed = Some((lock, bytes));
        }
    }

    /// Stops heartbeats of a primary whose heartbeat found it changed or could not tell.
    pub fn stop(&self, start_ts: u64) {
        if let Some(g) = self.guards.lock().get_mut(&start_ts) {
            g.live = false;
        }
    }
}
