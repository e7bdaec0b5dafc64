//! Every timestamp a source hands out, with when it was asked for and when it came back, so
//! that a run across oracle fail-overs can check that all were unique and in real-time order,
//! and find the longest time without one.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use percolator::oracle::TimestampSource;
use percolator::Result;

/// A [`TimestampSource`] that records what the one it wraps hands out.
pub struct Recording {
    inner: Arc<dyn TimestampSource>,
    log: Mutex<Vec<Handed>>,
    failures: AtomicU64,
}

/// One timestamp handed out.
#[derive(Clone, Copy, Debug)]
pub struct Handed {
    pub asked: Instant,
    pub got: Instant,
    pub ts: u64,
}

impl Recording {
    pub fn wrap(inner: Arc<dyn TimestampSource>) -> Arc<Recording> {
        Arc::new(Recording {
            inner,
            log: Mutex::new(Vec::new()),
            failures: AtomicU64::new(0),
        })
    }

    /// What was handed out so far (the log starts again empty).
    pub fn take(&self) -> Vec<Handed> {
        std::mem::take(&mut *self.log.lock())
    }

    /// Requests that failed.
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    fn note(&self, asked: Instant, ts: Option<u64>) {
        match ts {
            Some(ts) => self.log.lock().push(Handed {
                asked,
                got: Instant::now(),
                ts,
            }),
            None => {
                self.failures.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

#[async_trait::async_trait]
impl TimestampSource for Recording {
    async fn timestamp(&self) -> Result<u64> {
        let asked = Instant::now();
        let result = self.inner.timestamp().await;
        self.note(asked, result.as_ref().ok().copied());
        result
    }

    fn recent_timestamp(&self, max_age: Duration) -> Option<u64> {
        let asked = Instant::now();
        let ts = self.inner.recent_timestamp(max_age);
        if ts.is_some() {
            self.note(asked, ts);
        }
        ts
    }
}

/// Checks that no timestamp was handed out twice and that one that came back before another
/// was asked for is smaller; returns the longest time without one, or what broke.
///
/// ```
/// use std::time::{Duration, Instant};
/// use percolator_workloads::handed::{check, Handed};
/// let t0 = Instant::now();
/// let at = |ms| t0 + Duration::from_millis(ms);
/// let log = vec![
///     Handed { asked: at(0), got: at(1), ts: 5 },
///     Handed { asked: at(2), got: at(9), ts: 7 },
/// ];
/// assert_eq!(check(log.clone()), Ok(Duration::from_millis(8)));
/// let backwards = vec![log[0], Handed { asked: at(2), got: at(3), ts: 4 }];
/// assert!(check(backwards).is_err());
/// ```
pub fn check(mut log: Vec<Handed>) -> std::result::Result<Duration, String> {
    let mut seen = HashSet::with_capacity(log.len());
    if let Some(h) = log.iter().find(|h| !seen.insert(h.ts)) {
        return Err(format!("timestamp {} was handed out twice", h.ts));
    }
    log.sort_by_key(|h| h.got);
    let mut highest = Vec::with_capacity(log.len());
    let mut max = 0;
    for h in &log {
        max = max.max(h.ts);
        highest.push(max);
    }
    for h in &log {
        let before = log.partition_point(|earlier| earlier.got < h.asked);
        if before > 0 && highest[before - 1] >= h.ts {
            return Err(format!(
                "{} was handed out after {} had come back",
                h.ts,
                highest[before - 1]
            ));
        }
    }
    Ok(log
        .windows(2)
        .map(|w| w[1].got - w[0].got)
        .max()
        .unwrap_or_default())
}
