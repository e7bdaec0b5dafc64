//! Which prewrite variant a client tries first. A prewrite must match "no lock cell" or "lock
//! cell released below start_ts", and HBase's checkAndMutate compares one value: an absent
//! cell never matches a non-empty one, so the protocol has two variants (see
//! `actions::prewrite`). Always trying "released" first cost every insert three calls (a failed
//! CAS, a read of the lock cell, the CAS for an absent cell). Tables tend to be written one way
//! (rows inserted once, or the same rows updated), so each table keeps a small saturating
//! counter of what its prewrites met, as a branch predictor does, and the committer tries the
//! predicted variant first and the other one straight after a failure. The counter lives with
//! the rest of what the client knows of the table (`families::KnownTable`), so a commit finds
//! it with the same lookup.

use std::sync::atomic::{AtomicI8, Ordering};

/// How far the counter saturates: this many opposite outcomes in a row turn the guess.
const SATURATE: i8 = 3;

/// One table's guess.
#[derive(Debug)]
pub(crate) struct LockCellGuess(AtomicI8);

impl Default for LockCellGuess {
    /// A table starts firmly on "released", so the few inserts that create a table's first
    /// rows do not make the updates that follow pay for a wrong guess.
    fn default() -> Self {
        LockCellGuess(AtomicI8::new(-SATURATE))
    }
}

impl LockCellGuess {
    /// Whether the next prewrite should try the variant for an absent lock cell.
    pub fn absent_first(&self) -> bool {
        self.0.load(Ordering::Relaxed) > 0
    }

    /// Records what a prewrite found: no lock cell (`absent`) or a lock cell.
    pub fn learn(&self, absent: bool) {
        let step = if absent { 1 } else { -1 };
        // A saturated counter, as in nearly every commit of a table written one way, is only
        // read (the closure declines), so its cache line stays shared between the cores.
        let _ = self
            .0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |c| {
                let next = (c + step).clamp(-SATURATE, SATURATE);
                (next != c).then_some(next)
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inserts_turn_the_guess_and_updates_turn_it_back() {
        let guess = LockCellGuess::default();
        assert!(!guess.absent_first(), "a table starts with updates");
        for _ in 0..=SATURATE {
            assert!(!guess.absent_first());
            guess.learn(true);
        }
        assert!(guess.absent_first());
        for _ in 0..10 {
            guess.learn(true);
        }
        // Saturated: as many updates as the bound turn it back, not ten.
        for _ in 0..SATURATE {
            assert!(guess.absent_first());
            guess.learn(false);
        }
        assert!(!guess.absent_first());
    }
}
