//! The start timestamps of this client's open transactions (snapshots at a chosen timestamp
//! included). The heartbeat publishes the oldest in the client's liveness row, and GC never
//! moves the safe point above any published one (docs/gc.md), so a long transaction keeps
//! its versions.
//!
//! Every transaction registers and unregisters, from any runtime thread, while the oldest is
//! read once per heartbeat. So registering is one compare-and-swap on a slot of a fixed table
//! and ending one store; only when a transaction's slots are all taken (hundreds open at once)
//! does it go to a locked map.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

/// Slots in the table: 32 cache lines of 8.
pub(crate) const SLOTS: usize = 256;
const PER_LINE: usize = 8;
const LINES: usize = SLOTS / PER_LINE;
/// Slots a registration tries before it goes to the overflow map.
const PROBES: u64 = 8;
/// A slot no transaction holds. A transaction at start_ts 0 registers in the overflow map.
const FREE: u64 = 0;

pub(crate) struct OpenTransactions {
    /// The start_ts of the transaction holding each slot, or `FREE`.
    slots: Box<[AtomicU64]>,
    /// start_ts -> how many open transactions beyond the slots share it (snapshots may repeat
    /// a timestamp).
    overflow: Mutex<BTreeMap<u64, u32>>,
}

impl Default for OpenTransactions {
    fn default() -> Self {
        OpenTransactions {
            slots: (0..SLOTS).map(|_| AtomicU64::new(FREE)).collect(),
            overflow: Mutex::default(),
        }
    }
}

/// The slot a registration at `start_ts` tries on its `probe`-th attempt. Consecutive
/// timestamps fall on different cache lines, so that two cores registering the oracle's
/// consecutive timestamps do not write the same line.
fn slot_of(start_ts: u64, probe: u64) -> usize {
    let n = start_ts.wrapping_add(probe) as usize;
    (n % LINES) * PER_LINE + (n / LINES) % PER_LINE
}

/// The slots of a table of [`SLOTS`] a registration at `start_ts` tries, in order (the
/// commits' primaries use the same probing).
pub(crate) fn probes(start_ts: u64) -> impl Iterator<Item = usize> {
    (0..PROBES).map(move |p| slot_of(start_ts, p))
}

impl OpenTransactions {
    /// Registers `start_ts` until the returned guard is dropped.
    pub fn register(self: &Arc<Self>, start_ts: u64) -> Registration {
        let place = match self.claim_slot(start_ts) {
            Some(i) => Place::Slot(i),
            None => {
                *self.overflow.lock().entry(start_ts).or_default() += 1;
                Place::Overflow
            }
        };
        Registration {
            open: Arc::clone(self),
            start_ts,
            place,
        }
    }

    /// A free slot among `start_ts`'s probes, now holding it; `None` when all are taken (or
    /// `start_ts` is `FREE` itself).
    fn claim_slot(&self, start_ts: u64) -> Option<usize> {
        if start_ts == FREE {
            return None;
        }
        probes(start_ts).find(|&i| {
            self.slots[i]
                .compare_exchange(FREE, start_ts, Ordering::SeqCst, Ordering::Relaxed)
                .is_ok()
        })
    }

    pub fn oldest(&self) -> Option<u64> {
        let in_slots = self
            .slots
            .iter()
            .map(|s| s.load(Ordering::SeqCst))
            .filter(|&ts| ts != FREE)
            .min();
        let in_overflow = self.overflow.lock().keys().next().copied();
        in_slots.into_iter().chain(in_overflow).min()
    }
}

/// Where a registration is held.
enum Place {
    Slot(usize),
    Overflow,
}

/// One open transaction; dropping it (commit, rollback, or the transaction dropped) ends it.
pub(crate) struct Registration {
    open: Arc<OpenTransactions>,
    start_ts: u64,
    place: Place,
}

impl Registration {
    pub fn start_ts(&self) -> u64 {
        self.start_ts
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        match self.place {
            Place::Slot(i) => self.open.slots[i].store(FREE, Ordering::Release),
            Place::Overflow => {
                let mut starts = self.open.overflow.lock();
                if let Some(n) = starts.get_mut(&self.start_ts) {
                    *n -= 1;
                    if *n == 0 {
                        starts.remove(&self.start_ts);
                    }
                }
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

    #[test]
    fn transactions_beyond_the_slots_are_published_too() {
        let open = Arc::new(OpenTransactions::default());
        // Many at one start_ts fill its probes and spill; the oldest is among the spilled.
        let many: Vec<_> = (0..2 * SLOTS)
            .map(|i| open.register(1_000 + i as u64))
            .collect();
        let spilled: Vec<_> = (0..PROBES + 3).map(|_| open.register(500)).collect();
        assert!(spilled.iter().any(|r| matches!(r.place, Place::Overflow)));
        assert_eq!(open.oldest(), Some(500));
        drop(spilled);
        assert_eq!(open.oldest(), Some(1_000));
        drop(many);
        assert_eq!(open.oldest(), None);
        assert!(open.overflow.lock().is_empty(), "every spilled one removed");
        assert!(open.slots.iter().all(|s| s.load(Ordering::SeqCst) == FREE));
    }

    #[test]
    fn a_snapshot_at_timestamp_zero_is_published() {
        let open = Arc::new(OpenTransactions::default());
        let zero = open.register(0);
        let later = open.register(7);
        assert_eq!(open.oldest(), Some(0));
        drop(zero);
        assert_eq!(open.oldest(), Some(7));
        drop(later);
    }

    #[test]
    fn consecutive_timestamps_fall_on_different_cache_lines() {
        for ts in 0..1_000u64 {
            let (a, b) = (slot_of(ts, 0), slot_of(ts + 1, 0));
            assert!(a < SLOTS && b < SLOTS);
            assert_ne!(a / PER_LINE, b / PER_LINE, "{ts}");
        }
        // And a start_ts's probes are distinct slots.
        let probes: std::collections::HashSet<_> = (0..PROBES).map(|p| slot_of(42, p)).collect();
        assert_eq!(probes.len(), PROBES as usize);
    }
}
