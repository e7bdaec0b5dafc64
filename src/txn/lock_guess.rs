//! Which prewrite variant a client tries first. A prewrite must match "no lock cell" or "lock
//! cell released below start_ts", and HBase's checkAndMutate compares one value: an absent
//! cell never matches a non-empty one, so the protocol has two variants (see
//! `actions::prewrite`). Always trying "released" first cost every insert three calls (a failed
//! CAS, a read of the lock cell, the CAS for an absent cell). Tables tend to be written one way
//! (rows inserted once, or the same rows updated), so each table keeps a small saturating
//! counter of what its prewrites met, as a branch predictor does, and the committer tries the
//! predicted variant first and the other one straight after a failure.

use std::sync::atomic::{AtomicI8, Ordering};

use parking_lot::RwLock;

use crate::txn::FastMap;

/// How far the counter saturates: this many opposite outcomes in a row turn the guess.
const SATURATE: i8 = 3;

#[derive(Default)]
pub(crate) struct LockCellGuess {
    tables: RwLock<FastMap<String, AtomicI8>>,
}

impl LockCellGuess {
    /// Whether the next prewrite in `table` should try the variant for an absent lock cell.
    pub fn absent_first(&self, table: &str) -> bool {
        self.tables
            .read()
            .get(table)
            .is_some_and(|c| c.load(Ordering::Relaxed) > 0)
    }

    /// Records what a prewrite in `table` found: no lock cell (`absent`) or a lock cell. A
    /// table starts firmly on "released", so the few inserts that create a table's first rows
    /// do not make the updates that follow pay for a wrong guess.
    pub fn learn(&self, table: &str, absent: bool) {
        let step = if absent { 1 } else { -1 };
        // A saturated counter, as in nearly every commit of a table written one way, is only
        // read (the closure declines), so its cache line stays shared between the cores.
        let bump = |counter: &AtomicI8| {
            let _ = counter.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |c| {
                let next = (c + step).clamp(-SATURATE, SATURATE);
                (next != c).then_some(next)
            });
        };
        if let Some(counter) = self.tables.read().get(table) {
            return bump(counter);
        }
        let mut tables = self.tables.write();
        bump(
            tables
                .entry(table.to_string())
                .or_insert_with(|| AtomicI8::new(-SATURATE)),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inserts_turn_the_guess_and_updates_turn_it_back() {
        let guess = LockCellGuess::default();
        assert!(
            !guess.absent_first("t"),
            "unknown tables start with updates"
        );
        for _ in 0..=SATURATE {
            assert!(!guess.absent_first("t"));
            guess.learn("t", true);
        }
        assert!(guess.absent_first("t"));
        assert!(!guess.absent_first("other"), "each table learns alone");
        for _ in 0..10 {
            guess.learn("t", true);
        }
        // Saturated: as many updates as the bound turn it back, not ten.
        for _ in 0..SATURATE {
            assert!(guess.absent_first("t"));
            guess.learn("t", false);
        }
        assert!(!guess.absent_first("t"));
    }
}
