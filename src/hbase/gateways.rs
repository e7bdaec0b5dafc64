//! Several gateways behind one client: which one a call goes to, which ones are left out for
//! now, and where each open scanner lives.
//!
//! Calls go round the gateways in turn. One that cannot be reached (its connect failed, or a
//! connection to it broke) is left out for a second, then for twice as long each time it
//! fails again, up to 30 s; when its time is up, the next call to pick it probes it, and a
//! call that succeeds on it brings it back for good. If every gateway is out, the one due back
//! first is tried anyway: the client never refuses a call without trying.
//!
//! Thrift gateways keep no state between calls except scanners, so a scanner's pages must be
//! read from the gateway that opened it. With several gateways, the client hands out scanner
//! ids of its own and remembers which gateway's scanner each one is.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::pool::Pool;

const FIRST_OUT: Duration = Duration::from_secs(1);
const LONGEST_OUT: Duration = Duration::from_secs(30);

/// One gateway: its connections and whether it is left out.
pub(crate) struct Gateway {
    pub pool: Pool,
    /// How the gateway is named in errors (its address as configured).
    pub name: String,
    /// Failures in a row; 0 for a healthy gateway, so the hot path reads only this.
    failures: AtomicU32,
    out_until: Mutex<Option<Instant>>,
}

impl Gateway {
    pub(crate) fn new(pool: Pool, name: String) -> Gateway {
        Gateway {
            pool,
            name,
            failures: AtomicU32::new(0),
            out_until: Mutex::new(None),
        }
    }

    /// When it may be tried again, if it is left out at `now`.
    fn out_at(&self, now: Instant) -> Option<Instant> {
        if self.failures.load(Ordering::Relaxed) == 0 {
            return None;
        }
        (*self.out_until.lock()).filter(|until| *until > now)
    }
}

pub(crate) struct Gateways {
    all: Vec<Gateway>,
    next: AtomicUsize,
    scanners: Mutex<HashMap<i32, (usize, i32)>>,
    next_scanner: AtomicI32,
}

impl Gateways {
    pub(crate) fn new(all: Vec<Gateway>) -> Gateways {
        assert!(!all.is_empty(), "a client has at least one gateway");
        Gateways {
            all,
            next: AtomicUsize::new(0),
            scanners: Mutex::new(HashMap::new()),
            next_scanner: AtomicI32::new(1),
        }
    }

    pub(crate) fn get(&self, index: usize) -> &Gateway {
        &self.all[index]
    }

    pub(crate) fn first(&self) -> &Gateway {
        &self.all[0]
    }

    pub(crate) fn len(&self) -> usize {
        self.all.len()
    }

    /// The gateway for a call, not `avoid` if another is in: the next in turn that is not
    /// left out, else the one due back first.
    pub(crate) fn pick(&self, avoid: Option<usize>) -> usize {
        let n = self.all.len();
        if n == 1 {
            return 0;
        }
        let now = Instant::now();
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let mut soonest: Option<(Instant, usize)> = None;
        let mut avoided = None;
        for step in 0..n {
            let i = (start + step) % n;
            match self.all[i].out_at(now) {
                None if Some(i) == avoid => avoided = Some(i),
                None => return i,
                Some(until) => {
                    if soonest.is_none_or(|(best, _)| until < best) {
                        soonest = Some((until, i));
                    }
                }
            }
        }
        avoided.or(soonest.map(|(_, i)| i)).unwrap_or(start % n)
    }

    /// The gateway at `index` could not be reached: leave it out for a while.
    pub(crate) fn failed(&self, index: usize) {
        if self.all.len() == 1 {
            return;
        }
        let gateway = &self.all[index];
        let failures = gateway.failures.fetch_add(1, Ordering::Relaxed) + 1;
        let out = FIRST_OUT
            .saturating_mul(1 << failures.saturating_sub(1).min(5))
            .min(LONGEST_OUT);
        *gateway.out_until.lock() = Some(Instant::now() + out);
        tracing::warn!(gateway = %gateway.name, failures, ?out, "leaving an unreachable HBase gateway out");
    }

    /// A call on the gateway at `index` succeeded: it is back, if it was out.
    pub(crate) fn succeeded(&self, index: usize) {
        let gateway = &self.all[index];
        if gateway.failures.load(Ordering::Relaxed) != 0 {
            gateway.failures.store(0, Ordering::Relaxed);
            *gateway.out_until.lock() = None;
            tracing::info!(gateway = %gateway.name, "an HBase gateway answers again");
        }
    }

    /// The id handed out for the scanner `id` that the gateway at `index` opened.
    pub(crate) fn scanner_opened(&self, index: usize, id: i32) -> i32 {
        if self.all.len() == 1 {
            return id;
        }
        let mine = self.next_scanner.fetch_add(1, Ordering::Relaxed);
        self.scanners.lock().insert(mine, (index, id));
        mine
    }

    /// The gateway and its own id for a scanner id handed out, if it is known.
    pub(crate) fn scanner(&self, id: i32) -> Option<(usize, i32)> {
        if self.all.len() == 1 {
            return Some((0, id));
        }
        self.scanners.lock().get(&id).copied()
    }

    /// Forgets a closed scanner.
    pub(crate) fn scanner_closed(&self, id: i32) {
        if self.all.len() > 1 {
            self.scanners.lock().remove(&id);
        }
    }
}
