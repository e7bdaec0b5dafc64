//! The wall clock, as a seam: the oracle's allocator and the transaction layer's lock
//! staleness both read it, and tests step it (backwards, or past a TTL) without sleeping.

use std::time::{SystemTime, UNIX_EPOCH};

/// Wall-clock milliseconds since the Unix epoch: what the oracle stamps timestamps with and
/// what lock staleness is judged by. Implement it to step time in tests.
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use percolator::oracle::Clock;
///
/// /// A clock that moves only when the test says so.
/// struct Manual(AtomicU64);
/// impl Clock for Manual {
///     fn now_ms(&self) -> u64 {
///         self.0.load(Ordering::SeqCst)
///     }
/// }
///
/// let clock = Manual(AtomicU64::new(1_000));
/// clock.0.fetch_add(500, Ordering::SeqCst);
/// assert_eq!(clock.now_ms(), 1_500);
/// ```
pub trait Clock: Send + Sync + 'static {
    /// The current reading; it may step backwards, and readers must cope.
    ///
    /// ```
    /// use percolator::oracle::{Clock, SystemClock};
    /// assert!(SystemClock.now_ms() > 1_600_000_000_000); // after September 2020
    /// ```
    fn now_ms(&self) -> u64;
}

/// The system's wall clock: the default everywhere a [`Clock`] is asked for.
///
/// ```
/// use percolator::oracle::{Clock, SystemClock};
/// let (a, b) = (SystemClock.now_ms(), SystemClock.now_ms());
/// assert!(b + 1_000 > a, "two readings in a row are close");
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        // A clock before 1970 reads as 0: the oracle's allocator then keeps its last physical
        // value, and locks simply look fresh.
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0)
    }
}
