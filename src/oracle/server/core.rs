//! State shared by the connections and the window keeper: the allocator behind one short
//! mutex, the lease, the serving phase, and the notifications between requests and the keeper.

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::oracle::alloc::{last_of_ms, physical_of, Allocator, Clock, MAX_PHYSICAL_MS};
use crate::oracle::protocol::ErrorCode;
use crate::oracle::stats::Stats;
use crate::{Error, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Serving,
    Fenced,
    Stopping,
}

struct State {
    alloc: Allocator,
    /// For shared stores: serving is allowed only before this instant. `None`: no lease needed.
    lease_until: Option<Instant>,
    phase: Phase,
}

/// Why a request was not served at once.
enum NotNow {
    /// No window (or no valid lease) yet: wait for the keeper.
    Wait,
    Refuse(ErrorCode, &'static str),
}

pub(crate) struct Core {
    state: Mutex<State>,
    clock: Arc<dyn Clock>,
    pub stats: Stats,
    /// Keeper -> requests: a new window or lease was installed, or the phase changed.
    window_changed: Notify,
    /// Requests -> keeper: someone is waiting for a window.
    need_window: Notify,
}

impl Core {
    pub fn new(persisted_top: u64, needs_lease: bool, clock: Arc<dyn Clock>) -> Result<Self> {
        if persisted_top >> 18 >= MAX_PHYSICAL_MS - (1 << 32) {
            return Err(Error::OracleStore {
                message: format!(
                    "persisted window top {persisted_top} leaves no timestamps to serve"
                ),
            });
        }
        let stats = Stats::default();
        stats.set_window_top(persisted_top);
        Ok(Core {
            state: Mutex::new(State {
                alloc: Allocator::new(persisted_top, clock.now_ms()),
                // Expired from the start: nothing is served before the first renewal.
                lease_until: needs_lease.then(Instant::now),
                phase: Phase::Serving,
            }),
            clock,
            stats,
            window_changed: Notify::new(),
            need_window: Notify::new(),
        })
    }

    fn try_allocate(&self, count: u32) -> std::result::Result<u64, NotNow> {
        let now_ms = self.clock.now_ms();
        let mut s = self.state.lock();
        match s.phase {
            Phase::Serving => {}
            Phase::Fenced => {
                return Err(NotNow::Refuse(
                    ErrorCode::Fenced,
                    "another oracle claimed the window",
                ))
            }
            Phase::Stopping => {
                return Err(NotNow::Refuse(
                    ErrorCode::ShuttingDown,
                    "oracle is stopping",
                ))
            }
        }
        if s.lease_until.is_some_and(|until| Instant::now() >= until) {
            return Err(NotNow::Wait);
        }
        s.alloc.allocate(count, now_ms).ok_or(NotNow::Wait)
    }

    /// The first of `count` consecutive timestamps, waiting up to `wait` for the keeper to
    /// extend the window if it is used up.
    pub async fn allocate(
        &self,
        count: u32,
        wait: Duration,
    ) -> std::result::Result<u64, (ErrorCode, &'static str)> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            // Registered before the check, so an extension in between is not missed.
            let changed = self.window_changed.notified();
            match self.try_allocate(count) {
                Ok(first) => {
                    self.stats.served(count, first);
                    return Ok(first);
                }
                Err(NotNow::Refuse(code, why)) => return Err((code, why)),
                Err(NotNow::Wait) => self.need_window.notify_one(),
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                return Err((
                    ErrorCode::Unavailable,
                    "no window to serve from: the store is not keeping up",
                ));
            }
        }
    }

    /// Resolves when a request is waiting for a window.
    pub async fn window_wanted(&self) {
        self.need_window.notified().await
    }

    /// The top the next extension should persist: `window` ahead of the clock or of the last
    /// timestamp served, whichever is later, and above the current top. Renewing a lease while
    /// the window is still ahead of the clock (as after taking over a store) would otherwise
    /// rewrite the same record, which a standby would read as a dead owner.
    pub fn next_top(&self, window: Duration) -> Result<u64> {
        let now_ms = self.clock.now_ms();
        let (base, top) = {
            let s = self.state.lock();
            (s.alloc.physical().max(now_ms), s.alloc.top())
        };
        let physical = base
            .saturating_add(window.as_millis() as u64)
            .max(physical_of(top).saturating_add(1));
        if physical >= MAX_PHYSICAL_MS {
            return Err(Error::OracleStore {
                message: format!("timestamp space exhausted (physical {physical} ms)"),
            });
        }
        Ok(last_of_ms(physical))
    }

    /// How long until the next extension is due: when less than `extend_below` of window is
    /// left, or less than half of the lease.
    pub fn extension_due_in(&self, extend_below: Duration, lease: Option<Duration>) -> Duration {
        let now_ms = self.clock.now_ms();
        let s = self.state.lock();
        let remaining = Duration::from_millis(s.alloc.remaining_ms(now_ms));
        let by_window = remaining.saturating_sub(extend_below);
        match (s.lease_until, lease) {
            (Some(until), Some(lease)) => {
                let by_lease = until
                    .saturating_duration_since(Instant::now())
                    .saturating_sub(lease / 2);
                by_window.min(by_lease)
            }
            _ => by_window,
        }
    }

    /// Installs a persisted top; `lease_until` is when the lease granted with it runs out.
    pub fn install(&self, top: u64, lease_until: Option<Instant>) {
        {
            let mut s = self.state.lock();
            s.alloc.raise_top(top);
            if let (Some(current), Some(new)) = (s.lease_until, lease_until) {
                s.lease_until = Some(current.max(new));
            }
        }
        self.stats.window_extended(top);
        self.window_changed.notify_waiters();
    }

    pub fn fence(&self) {
        self.set_phase(Phase::Fenced);
    }

    /// Refuses new requests from now on (unless already fenced).
    pub fn stop(&self) {
        self.set_phase(Phase::Stopping);
    }

    pub fn is_fenced(&self) -> bool {
        self.state.lock().phase == Phase::Fenced
    }

    fn set_phase(&self, phase: Phase) {
        {
            let mut s = self.state.lock();
            if s.phase == Phase::Serving {
                s.phase = phase;
            }
        }
        self.window_changed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oracle::alloc::compose;
    use crate::oracle::SystemClock;

    /// A standby takes an unchanged record for a dead owner, so each renewal must write a new
    /// top, even when the inherited window is still seconds ahead of the clock.
    #[test]
    fn every_extension_raises_the_top_even_ahead_of_the_clock() {
        let ahead = compose(SystemClock.now_ms() + 60_000, 0);
        let core = Core::new(ahead, true, Arc::new(SystemClock)).unwrap();
        let mut last = ahead;
        for _ in 0..3 {
            let top = core.next_top(Duration::from_secs(3)).unwrap();
            assert!(top > last, "{top} does not raise {last}");
            core.install(top, Some(Instant::now() + Duration::from_secs(3)));
            last = top;
        }
    }
}
