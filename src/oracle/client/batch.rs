//! Request batching: askers join the pending batch of a lane and wait on it together; the
//! lane's task sends the whole batch as one request when its previous one is answered.
//!
//! One `Arc<Batch>` is allocated per batch, not per asker: an asker's share is its slot index,
//! and all waiters of a batch are woken by one `notify_waiters`.

use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;

use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::{Error, Result};

/// Timestamp ranges answering one batch, in slot order: `(first, count)`.
#[derive(Debug)]
pub(crate) struct Ranges(pub Vec<(u64, u32)>);

impl Ranges {
    /// The timestamp of slot `slot` (slots are numbered across the ranges in order).
    pub fn get(&self, slot: u32) -> Option<u64> {
        self.run_from(slot).map(|(ts, _)| ts)
    }

    /// Slot `slot`'s timestamp and how many consecutive ones its range holds from it.
    pub fn run_from(&self, mut slot: u32) -> Option<(u64, u32)> {
        for &(first, count) in &self.0 {
            if slot < count {
                return Some((first + u64::from(slot), count - slot));
            }
            slot -= count;
        }
        None
    }
}

/// Why a batch failed; cloned into an [`Error`] for each of its askers.
#[derive(Clone, Debug)]
pub(crate) enum BatchError {
    Unavailable {
        addrs: Vec<String>,
        reason: String,
    },
    Protocol(String),
    /// Refused by the oracle (or its certificate by us): fails at once.
    Auth {
        addr: String,
        failure: crate::oracle::AuthFailure,
    },
    Shutdown,
}

impl BatchError {
    fn to_error(&self) -> Error {
        match self {
            BatchError::Unavailable { addrs, reason } => Error::OracleUnavailable {
                addrs: addrs.clone(),
                reason: reason.clone(),
            },
            BatchError::Protocol(message) => Error::Protocol {
                peer: crate::Peer::Oracle,
                message: message.clone(),
            },
            BatchError::Auth { addr, failure } => Error::OracleAuth {
                addr: addr.clone(),
                failure: failure.clone(),
            },
            BatchError::Shutdown => Error::Shutdown,
        }
    }
}

pub(crate) type Outcome = std::result::Result<Ranges, BatchError>;

#[derive(Default)]
pub(crate) struct Batch {
    outcome: OnceLock<Outcome>,
    done: Notify,
}

impl Batch {
    pub fn complete(&self, outcome: Outcome) {
        // Only the lane task completes a batch, once.
        let _ = self.outcome.set(outcome);
        self.done.notify_waiters();
    }

    /// Waits for the outcome and returns the timestamps of slots `slot..slot + n`.
    pub async fn wait(&self, slot: u32, n: u32) -> Result<Vec<u64>> {
        let outcome = self.outcome().await;
        (slot..slot + n).map(|s| Self::pick(outcome, s)).collect()
    }

    /// Waits for the outcome and returns the timestamp of slot `slot`.
    pub async fn wait_one(&self, slot: u32) -> Result<u64> {
        Self::pick(self.outcome().await, slot)
    }

    async fn outcome(&self) -> &Outcome {
        loop {
            // Registered before the check: a completion in between still wakes us.
            let done = self.done.notified();
            if let Some(outcome) = self.outcome.get() {
                return outcome;
            }
            done.await;
        }
    }

    fn pick(outcome: &Outcome, slot: u32) -> Result<u64> {
        match outcome {
            Ok(ranges) => ranges.get(slot).ok_or_else(|| Error::Protocol {
                peer: crate::Peer::Oracle,
                message: format!("batch answer has no slot {slot}"),
            }),
            Err(e) => Err(e.to_error()),
        }
    }
}

struct Pending {
    batch: Arc<Batch>,
    slots: u32,
    closed: bool,
}

/// One connection's queue: the batch being filled while the previous one is in flight.
pub(crate) struct Lane {
    pending: Mutex<Pending>,
    wake: Notify,
}

impl Lane {
    pub fn new() -> Self {
        Lane {
            pending: Mutex::new(Pending {
                batch: Arc::new(Batch::default()),
                slots: 0,
                closed: false,
            }),
            wake: Notify::new(),
        }
    }

    /// Joins the pending batch with `n` slots: the batch and the first slot's index.
    pub fn join(&self, n: u32) -> Result<(Arc<Batch>, u32)> {
        let (batch, slot) = {
            let mut p = self.pending.lock();
            if p.closed {
                return Err(Error::Shutdown);
            }
            let slot = p.slots;
            p.slots = slot.checked_add(n).ok_or_else(|| Error::IllegalArgument {
                message: "too many timestamps pending on one connection".into(),
            })?;
            (Arc::clone(&p.batch), slot)
        };
        if slot == 0 {
            self.wake.notify_one();
        }
        Ok((batch, slot))
    }

    /// Takes the pending batch if anyone joined it: the batch and its slot count.
    pub fn take(&self) -> Option<(Arc<Batch>, u32)> {
        let fresh = Arc::new(Batch::default());
        let mut p = self.pending.lock();
        if p.slots == 0 {
            return None;
        }
        let slots = std::mem::replace(&mut p.slots, 0);
        Some((std::mem::replace(&mut p.batch, fresh), slots))
    }

    /// Waits until someone joins an empty pending batch.
    pub async fn joined(&self) {
        self.wake.notified().await
    }

    /// Refuses new askers and fails the pending batch, if any.
    pub fn close(&self) {
        let pending = {
            let mut p = self.pending.lock();
            p.closed = true;
            (p.slots > 0).then(|| Arc::clone(&p.batch))
        };
        if let Some(batch) = pending {
            batch.complete(Err(BatchError::Shutdown));
        }
    }
}

/// Runs a future to completion on the calling thread, parking between polls: the synchronous
/// API's bridge. The futures it runs are woken by the client's own runtime.
pub(crate) fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        match future.as_mut().poll(&mut cx) {
            Poll::Ready(out) => return out,
            // Spurious unparks only cost a poll.
            Poll::Pending => std::thread::park(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_map_across_ranges_in_order() {
        let r = Ranges(vec![(100, 2), (500, 3)]);
        let got: Vec<_> = (0..6).map(|s| r.get(s)).collect();
        assert_eq!(
            got,
            [Some(100), Some(101), Some(500), Some(501), Some(502), None]
        );
    }

    #[test]
    fn askers_share_a_batch_and_see_their_own_slots() {
        let lane = Lane::new();
        let (b1, s1) = lane.join(1).unwrap();
        let (b2, s2) = lane.join(3).unwrap();
        assert!(Arc::ptr_eq(&b1, &b2));
        assert_eq!((s1, s2), (0, 1));
        let (taken, slots) = lane.take().unwrap();
        assert_eq!(slots, 4);
        assert!(lane.take().is_none(), "a taken batch is not taken twice");
        taken.complete(Ok(Ranges(vec![(10, 4)])));
        assert_eq!(block_on(b1.wait_one(s1)).unwrap(), 10);
        assert_eq!(block_on(b2.wait(s2, 3)).unwrap(), vec![11, 12, 13]);
    }

    #[test]
    fn closing_fails_the_pending_batch_and_refuses_new_askers() {
        let lane = Lane::new();
        let (batch, slot) = lane.join(1).unwrap();
        lane.close();
        assert!(matches!(
            block_on(batch.wait_one(slot)),
            Err(Error::Shutdown)
        ));
        assert!(matches!(lane.join(1), Err(Error::Shutdown)));
    }
}
