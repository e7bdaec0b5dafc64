//! The primary locks of commits under way, which the heartbeat keeps fresh.
//!
//! A guard is never held across a round trip: the heartbeat copies what it rewrites, sends,
//! and records the result only if the commit has not retired the guard meanwhile. A commit
//! point that races a heartbeat then meets bytes it did not expect, and settles by re-reading
//! the primary (see `commit_point`).

use std::sync::Arc;

use parking_lot::Mutex;

use crate::format::Lock;
use crate::key::CellKey;
use crate::txn::open_txns::{probes, SLOTS};
use crate::txn::FastMap;

/// A primary's lock as its commit prewrote it: the commit's own, shared rather than copied.
pub(crate) trait Prewritten: Send + Sync {
    /// Its key, its lock and the lock's bytes.
    fn parts(&self) -> (&CellKey, &Lock, &[u8]);
}

/// One registered primary.
struct Guard {
    start_ts: u64,
    /// The primary as prewritten, shared with the commit.
    prewritten: Arc<dyn Prewritten>,
    /// The lock and its bytes as a heartbeat rewrote them, once one has (boxed: few commits
    /// last long enough, and a slot stays small).
    refreshed: Option<Box<(Lock, Vec<u8>)>>,
    /// Cleared when a heartbeat found the lock changed or lost its reply: no more heartbeats,
    /// and the commit point settles what is stored.
    live: bool,
}

impl Guard {
    fn lock(&self) -> &Lock {
        self.refreshed
            .as_deref()
            .map_or(self.prewritten.parts().1, |(lock, _)| lock)
    }

    fn bytes(&self) -> &[u8] {
        self.refreshed
            .as_deref()
            .map_or(self.prewritten.parts().2, |(_, bytes)| bytes)
    }
}

/// The primary's lock as stored (as far as this client knows): the retired guard itself, so
/// a commit compares against the prewritten mutation without copying it.
pub(crate) struct StoredLock(Guard);

impl StoredLock {
    pub fn key(&self) -> &CellKey {
        self.0.prewritten.parts().0
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

/// Every commit registers its primary and retires it, from any runtime thread, while the
/// heartbeat looks at them all a few times per lock TTL. So each primary takes a slot of a
/// fixed table, found by its start_ts as the open transactions' are, under a lock of its own;
/// only when a primary's slots are all taken does it go to a map under one lock. A start_ts
/// registers once.
pub(crate) struct Primaries {
    slots: Box<[Mutex<Option<Guard>>]>,
    overflow: Mutex<FastMap<u64, Guard>>,
}

impl Default for Primaries {
    fn default() -> Self {
        Primaries {
            slots: (0..SLOTS).map(|_| Mutex::new(None)).collect(),
            overflow: Mutex::default(),
        }
    }
}

impl Primaries {
    pub fn register(&self, primary: Arc<dyn Prewritten>) {
        let start_ts = primary.parts().1.start_ts;
        let guard = Guard {
            start_ts,
            prewritten: primary,
            refreshed: None,
            live: true,
        };
        for i in probes(start_ts) {
            let mut slot = self.slots[i].lock();
            if slot.is_none() {
                *slot = Some(guard);
                return;
            }
        }
        self.overflow.lock().insert(start_ts, guard);
    }

    /// Stops heartbeats of `start_ts` and returns its lock as stored now.
    pub fn retire(&self, start_ts: u64) -> Option<StoredLock> {
        for i in probes(start_ts) {
            let mut slot = self.slots[i].lock();
            if slot.as_ref().is_some_and(|g| g.start_ts == start_ts) {
                return slot.take().map(StoredLock);
            }
        }
        self.overflow.lock().remove(&start_ts).map(StoredLock)
    }

    /// The primaries whose wall time is older than `older_than_ms`.
    pub fn due(&self, older_than_ms: u64) -> Vec<Due> {
        let due = |g: &Guard| {
            (g.live && g.lock().wall_ms < older_than_ms).then(|| Due {
                start_ts: g.start_ts,
                key: g.prewritten.parts().0.clone(),
                lock: g.lock().clone(),
                bytes: g.bytes().to_vec(),
            })
        };
        let mut found: Vec<Due> = self
            .slots
            .iter()
            .filter_map(|slot| slot.lock().as_ref().and_then(due))
            .collect();
        found.extend(self.overflow.lock().values().filter_map(due));
        found
    }

    /// Records a heartbeat that rewrote the lock of `due` to `lock`/`bytes`, unless the commit
    /// retired it meanwhile.
    pub fn refreshed(&self, due: &Due, lock: Lock, bytes: Vec<u8>) {
        self.update(due.start_ts, |g| {
            if g.bytes() == due.bytes.as_slice() {
                g.refreshed = Some(Box::new((lock, bytes)));
            }
        });
    }

    /// Stops heartbeats of a primary whose heartbeat found it changed or could not tell.
    pub fn stop(&self, start_ts: u64) {
        self.update(start_ts, |g| g.live = false);
    }

    /// Runs `f` on `start_ts`'s guard, if it is registered.
    fn update(&self, start_ts: u64, f: impl FnOnce(&mut Guard)) {
        for i in probes(start_ts) {
            if let Some(g) = self.slots[i]
                .lock()
                .as_mut()
                .filter(|g| g.start_ts == start_ts)
            {
                return f(g);
            }
        }
        if let Some(g) = self.overflow.lock().get_mut(&start_ts) {
            f(g);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::txn::actions::HandPut;

    struct Primary {
        key: CellKey,
        lock: Lock,
        bytes: Vec<u8>,
    }

    impl Prewritten for Primary {
        fn parts(&self) -> (&CellKey, &Lock, &[u8]) {
            (&self.key, &self.lock, &self.bytes)
        }
    }

    fn primary(start_ts: u64, wall_ms: u64) -> Arc<Primary> {
        let key = CellKey::new("t", format!("row{start_ts}"), "f", "q").unwrap();
        let HandPut { lock, bytes, .. } =
            HandPut::new(start_ts, &key, "owner", (wall_ms, 3_000), b"v");
        Arc::new(Primary { key, lock, bytes })
    }

    #[test]
    fn a_retired_primary_gets_no_more_heartbeats_and_is_retired_once() {
        let primaries = Primaries::default();
        let (a, b) = (primary(10, 100), primary(11, 100));
        primaries.register(a.clone());
        primaries.register(b.clone());
        let starts = |due: Vec<Due>| {
            let mut s: Vec<u64> = due.iter().map(|d| d.start_ts).collect();
            s.sort();
            s
        };
        assert_eq!(starts(primaries.due(200)), [10, 11]);
        assert_eq!(starts(primaries.due(100)), [0u64; 0], "none older than 100");
        let stored = primaries.retire(10).expect("registered");
        assert_eq!(stored.bytes(), a.bytes.as_slice());
        assert_eq!(starts(primaries.due(200)), [11]);
        assert!(
            primaries.retire(10).is_none(),
            "a second retire finds nothing"
        );
    }

    #[test]
    fn the_commit_point_compares_against_the_bytes_a_heartbeat_wrote() {
        let primaries = Primaries::default();
        let m = primary(7, 100);
        primaries.register(m.clone());
        let due = primaries.due(200).pop().expect("due");
        let refreshed = Lock {
            wall_ms: 500,
            ..m.lock.clone()
        };
        primaries.refreshed(&due, refreshed.clone(), b"rewritten".to_vec());
        // A stale heartbeat (bytes no longer as it read them) changes nothing.
        primaries.refreshed(&due, m.lock.clone(), b"stale".to_vec());
        assert!(primaries.due(200).is_empty(), "refreshed at 500");
        primaries.stop(7);
        assert!(primaries.due(1_000).is_empty(), "stopped");
        let stored = primaries.retire(7).expect("registered");
        assert_eq!(stored.bytes(), b"rewritten");
        assert_eq!(stored.lock(), &refreshed);
    }

    #[test]
    fn primaries_beyond_their_slots_are_kept_heartbeaten_and_retired() {
        let primaries = Primaries::default();
        // Every slot taken, then more: those spill into the map.
        let all: Vec<_> = (1..=SLOTS as u64 + 20).map(|ts| primary(ts, 100)).collect();
        for m in &all {
            primaries.register(m.clone());
        }
        assert!(!primaries.overflow.lock().is_empty());
        assert_eq!(primaries.due(200).len(), all.len());
        for m in all.iter().rev() {
            let stored = primaries.retire(m.lock.start_ts).expect("registered");
            assert_eq!(stored.key(), &m.key);
        }
        assert!(primaries.due(200).is_empty());
        assert!(primaries.overflow.lock().is_empty());
        assert!(primaries.slots.iter().all(|s| s.lock().is_none()));
    }
}
