//! The emulator's notion of "now", injectable so tests of TTL, server-assigned timestamps and
//! scanner expiry can move time by hand instead of sleeping.

use std::fmt;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// A source of wall-clock time in epoch milliseconds (HBase's server clock): server-assigned
/// cell timestamps, TTL and scanner expiry read it, so tests can move time by hand.
///
/// ```
/// use std::sync::atomic::{AtomicI64, Ordering};
/// use std::sync::Arc;
/// use hbase_emulator::{Clock, EmulatorConfig};
/// let now = Arc::new(AtomicI64::new(1_000));
/// let clock = Clock::from_fn({
///     let now = Arc::clone(&now);
///     move || now.load(Ordering::SeqCst)
/// });
/// let config = EmulatorConfig { clock: clock.clone(), ..EmulatorConfig::default() };
/// now.fetch_add(60_000, Ordering::SeqCst); // a minute passes, instantly
/// assert_eq!(config.clock.now_ms(), 61_000);
/// ```
#[derive(Clone)]
pub struct Clock(Arc<dyn Fn() -> i64 + Send + Sync>);

impl Clock {
    /// The system wall clock, as a real region server uses (the default).
    ///
    /// ```
    /// use hbase_emulator::Clock;
    /// assert!(Clock::system().now_ms() > 1_600_000_000_000); // after September 2020
    /// ```
    pub fn system() -> Self {
        Clock(Arc::new(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
                .unwrap_or(0)
        }))
    }

    /// Any function returning epoch milliseconds, e.g. a counter a test advances.
    ///
    /// ```
    /// use hbase_emulator::Clock;
    /// let frozen = Clock::from_fn(|| 1_700_000_000_000);
    /// assert_eq!(frozen.now_ms(), 1_700_000_000_000);
    /// ```
    pub fn from_fn(f: impl Fn() -> i64 + Send + Sync + 'static) -> Self {
        Clock(Arc::new(f))
    }

    /// The current reading, in epoch milliseconds (signed, like HBase's timestamps).
    ///
    /// ```
    /// use hbase_emulator::Clock;
    /// let a = Clock::system().now_ms();
    /// assert!(Clock::system().now_ms() >= a - 1_000);
    /// ```
    pub fn now_ms(&self) -> i64 {
        (self.0)()
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::system()
    }
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Clock(now_ms = {})", self.now_ms())
    }
}

#[cfg(test)]
pub(crate) mod testing {
    use super::Clock;
    use std::sync::atomic::{AtomicI64, Ordering};
    use std::sync::Arc;

    /// A clock that only moves when the test says so.
    #[derive(Clone)]
    pub struct ManualClock(Arc<AtomicI64>);

    impl ManualClock {
        pub fn at(ms: i64) -> Self {
            ManualClock(Arc::new(AtomicI64::new(ms)))
        }
        pub fn advance(&self, ms: i64) {
            self.0.fetch_add(ms, Ordering::SeqCst);
        }
        pub fn clock(&self) -> Clock {
            let cell = self.0.clone();
            Clock::from_fn(move || cell.load(Ordering::SeqCst))
        }
    }
}
