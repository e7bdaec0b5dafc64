//! The emulator's notion of "now", injectable so tests of TTL, server-assigned timestamps and
//! scanner expiry can move time by hand instead of sleeping.

use std::fmt;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// A source of wall-clock time in epoch milliseconds (HBase's server clock).
#[derive(Clone)]
pub struct Clock(Arc<dyn Fn() -> i64 + Send + Sync>);

impl Clock {
    /// The system wall clock, as a real region server uses.
    pub fn system() -> Self {
        Clock(Arc::new(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
                .unwrap_or(0)
        }))
    }

    /// Any function returning epoch milliseconds, e.g. a counter a test advances.
    pub fn from_fn(f: impl Fn() -> i64 + Send + Sync + 'static) -> Self {
        Clock(Arc::new(f))
    }

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
        pub fn set(&self, ms: i64) {
            self.0.store(ms, Ordering::SeqCst);
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
