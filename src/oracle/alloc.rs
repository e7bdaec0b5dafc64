//! Timestamp arithmetic: the `physical_ms << 18 | logical` form, the clock, and the allocator
//! that hands out ranges below the persisted window top.
//!
//! The allocator is pure (the caller passes the clock reading in), so every rule about clocks
//! stepping backwards or logical overflow is checked by unit tests with made-up readings.

/// Bits of the logical counter below the physical milliseconds.
pub(crate) const LOGICAL_BITS: u32 = 18;
/// Timestamps per millisecond: how many an oracle can hand out before its physical part must
/// move on.
///
/// ```
/// use percolator::oracle::{compose, LOGICAL_PER_MS};
/// assert_eq!(compose(1, 0) - compose(0, 0), LOGICAL_PER_MS);
/// ```
pub const LOGICAL_PER_MS: u64 = 1 << LOGICAL_BITS;
/// Largest physical value whose timestamps fit in 64 bits.
pub(crate) const MAX_PHYSICAL_MS: u64 = u64::MAX >> LOGICAL_BITS;

/// The timestamp for `logical` (below [`LOGICAL_PER_MS`]) within millisecond `physical_ms`.
///
/// ```
/// use percolator::oracle::{compose, physical_of};
/// let ts = compose(1_700_000_000_000, 5);
/// assert_eq!(physical_of(ts), 1_700_000_000_000);
/// assert!(compose(1_700_000_000_000, 6) > ts);
/// ```
pub fn compose(physical_ms: u64, logical: u64) -> u64 {
    (physical_ms << LOGICAL_BITS) | logical
}

/// The wall-clock millisecond a timestamp was handed out in (or later, if the oracle's clock
/// was behind): for age checks and for reading timestamps in logs.
///
/// ```
/// use percolator::oracle::{compose, physical_of};
/// assert_eq!(physical_of(compose(42, 7)), 42);
/// ```
pub fn physical_of(ts: u64) -> u64 {
    ts >> LOGICAL_BITS
}

/// The highest timestamp of millisecond `physical_ms`: a window top covers whole milliseconds.
pub(crate) fn last_of_ms(physical_ms: u64) -> u64 {
    compose(physical_ms, LOGICAL_PER_MS - 1)
}

pub use crate::clock::{Clock, SystemClock};

/// The system clock shifted by a fixed offset: lets tests restart an oracle process on a clock
/// that stepped backwards.
///
/// ```
/// use percolator::oracle::{Clock, OffsetClock, SystemClock};
/// let behind = OffsetClock { offset_ms: -60_000 };
/// assert!(behind.now_ms() + 59_000 < SystemClock.now_ms());
/// ```
#[derive(Clone, Copy, Debug)]
pub struct OffsetClock {
    /// Added to the system clock's reading (negative: behind); readings stop at 0.
    pub offset_ms: i64,
}

impl Clock for OffsetClock {
    fn now_ms(&self) -> u64 {
        let shifted = SystemClock.now_ms() as i64 + self.offset_ms;
        shifted.max(0) as u64
    }
}

/// Hands out strictly increasing timestamp ranges, never above `top`.
#[derive(Debug)]
pub(crate) struct Allocator {
    /// Physical part of the last timestamp handed out (or of the starting point).
    physical: u64,
    /// Next unused logical value within `physical`.
    next_logical: u64,
    /// Highest timestamp that may be served: the persisted window top.
    top: u64,
}

impl Allocator {
    /// Starts strictly above `persisted_top`, the top a previous incarnation may have served up
    /// to. Nothing can be served until [`raise_top`](Self::raise_top) grants a window.
    pub fn new(persisted_top: u64, now_ms: u64) -> Self {
        Allocator {
            physical: now_ms.max(physical_of(persisted_top) + 1),
            next_logical: 0,
            top: persisted_top,
        }
    }

    /// The first timestamp of `count` (1..=2^18) consecutive ones, or `None` if they would go
    /// above the window top (the caller must wait for the window to be extended).
    pub fn allocate(&mut self, count: u32, now_ms: u64) -> Option<u64> {
        let count = u64::from(count);
        debug_assert!((1..=LOGICAL_PER_MS).contains(&count));
        // Follow the clock forwards but never backwards; and never past the window's last
        // millisecond, so a clock that jumps ahead cannot make us stop serving while the window
        // still has room (the timestamps are merely behind the wall clock for a moment).
        let mut physical = self.physical.max(now_ms.min(physical_of(self.top)));
        let mut logical = if physical == self.physical {
            self.next_logical
        } else {
            0
        };
        if logical + count > LOGICAL_PER_MS {
            physical += 1;
            logical = 0;
        }
        let first = compose(physical, logical);
        if first + (count - 1) > self.top {
            return None;
        }
        self.physical = physical;
        self.next_logical = logical + count;
        Some(first)
    }

    /// Installs a newly persisted window top (tops only grow).
    pub fn raise_top(&mut self, top: u64) {
        self.top = self.top.max(top);
    }

    /// The highest timestamp the current window allows.
    pub fn top(&self) -> u64 {
        self.top
    }

    /// The physical value the next timestamp will have at least: a new window must start here.
    pub fn physical(&self) -> u64 {
        self.physical
    }

    /// Milliseconds of window left beyond `now_ms` (or beyond our physical value if ahead).
    pub fn remaining_ms(&self, now_ms: u64) -> u64 {
        physical_of(self.top).saturating_sub(self.physical.max(now_ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: u64 = 1_700_000_000_000;

    fn with_window(now: u64, window_ms: u64) -> Allocator {
        let mut a = Allocator::new(0, now);
        a.raise_top(last_of_ms(now + window_ms));
        a
    }

    #[test]
    fn starts_strictly_above_the_persisted_top_even_with_a_clock_behind_it() {
        let persisted = compose(T0 + 5_000, 17);
        let mut a = Allocator::new(persisted, T0);
        assert_eq!(a.allocate(1, T0), None, "no window granted yet");
        a.raise_top(last_of_ms(T0 + 10_000));
        let first = a.allocate(1, T0).unwrap();
        assert!(first > persisted);
        assert_eq!(first, compose(T0 + 5_001, 0));
    }

    #[test]
    fn follows_the_clock_and_counts_logically_within_a_millisecond() {
        let mut a = with_window(T0, 3_000);
        assert_eq!(a.allocate(10, T0), Some(compose(T0, 0)));
        assert_eq!(a.allocate(1, T0), Some(compose(T0, 10)));
        assert_eq!(a.allocate(1, T0 + 2), Some(compose(T0 + 2, 0)));
    }

    #[test]
    fn a_clock_stepping_backwards_keeps_the_last_physical_value() {
        let mut a = with_window(T0, 3_000);
        let before = a.allocate(4, T0 + 1_000).unwrap();
        let after = a.allocate(1, T0 - 60_000).unwrap();
        assert_eq!(after, before + 4);
        assert_eq!(physical_of(after), T0 + 1_000);
        let later = a.allocate(1, T0 + 999).unwrap();
        assert_eq!(later, after + 1);
    }

    #[test]
    fn logical_overflow_moves_to_the_next_millisecond_instead_of_wrapping() {
        let mut a = with_window(T0, 3_000);
        let mut last = 0;
        // Four requests of 2^16 fill the millisecond exactly; the fifth must not wrap.
        for _ in 0..4 {
            last = a.allocate(1 << 16, T0).unwrap() + (1 << 16) - 1;
        }
        assert_eq!(last, last_of_ms(T0));
        assert_eq!(a.allocate(1, T0), Some(compose(T0 + 1, 0)));
        // A range that does not fit in what is left of a millisecond starts the next one whole.
        a.allocate(LOGICAL_PER_MS as u32 - 10, T0).unwrap();
        assert_eq!(a.allocate(20, T0), Some(compose(T0 + 2, 0)));
    }

    #[test]
    fn never_serves_above_the_window_top() {
        let mut a = with_window(T0, 1);
        let top = a.top;
        let mut served = 0u64;
        while let Some(first) = a.allocate(1 << 16, T0) {
            assert!(first + (1 << 16) - 1 <= top);
            served += 1 << 16;
        }
        assert_eq!(
            served,
            2 * LOGICAL_PER_MS,
            "both milliseconds of the window were used"
        );
        assert_eq!(
            a.allocate(1, T0 + 50),
            None,
            "the clock moving on grants nothing"
        );
        a.raise_top(last_of_ms(T0 + 100));
        assert_eq!(a.allocate(1, T0 + 50), Some(compose(T0 + 50, 0)));
    }

    #[test]
    fn a_clock_jumping_past_the_window_still_serves_what_is_left() {
        let mut a = with_window(T0, 3_000);
        a.allocate(1, T0).unwrap();
        let ts = a.allocate(1, T0 + 3_600_000).unwrap();
        assert_eq!(physical_of(ts), T0 + 3_000);
        assert_eq!(a.remaining_ms(T0 + 3_600_000), 0);
    }

    #[test]
    fn remaining_window_shrinks_with_time_and_use() {
        let mut a = with_window(T0, 3_000);
        assert_eq!(a.remaining_ms(T0), 3_000);
        assert_eq!(a.remaining_ms(T0 + 1_000), 2_000);
        a.allocate(1, T0 + 2_500).unwrap();
        assert_eq!(a.remaining_ms(T0 + 1_000), 500);
    }
}
