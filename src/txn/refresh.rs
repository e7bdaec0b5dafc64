//! A value read from HBase and trusted for a while: a meta row, the GC safe point.
//!
//! Every transaction consults these, so the naive cache (each caller that finds the value
//! expired reads it) sends one read per concurrent transaction whenever it expires, and makes
//! every one of them wait a round trip. Here one caller at a time reads (single flight), and
//! it does so once the value is past half its life, while the others go on with the cached
//! value, which is still within its trust. Only a value past its whole life (a client idle for
//! that long) makes callers wait, for the one read in flight.
//!
//! A value's age counts from when its read was sent, so it is never older than its age says
//! however slow the reply (the migration marker relies on this, docs/design.md invariant 11).

use std::future::Future;
use std::time::{Duration, Instant};

use parking_lot::RwLock;
use tokio::sync::Notify;

use crate::error::Result;

pub(crate) struct Refreshed<T> {
    /// How long a value is trusted after its read was sent.
    life: Duration,
    slot: RwLock<Slot<T>>,
    /// A read ended, well or not: waiters look again.
    read_done: Notify,
}

struct Slot<T> {
    value: Option<(T, Instant)>,
    reading: bool,
}

/// What a caller does.
enum Step<T> {
    Use(T),
    Read,
    Wait,
}

/// Ends a read: whatever happened, the next caller may read, and waiters look again.
struct Reading<'a, T>(&'a Refreshed<T>);

impl<T> Drop for Reading<'_, T> {
    fn drop(&mut self) {
        self.0.slot.write().reading = false;
        self.0.read_done.notify_waiters();
    }
}

impl<T: Clone> Refreshed<T> {
    pub fn new(life: Duration) -> Self {
        Refreshed {
            life,
            slot: RwLock::new(Slot {
                value: None,
                reading: false,
            }),
            read_done: Notify::new(),
        }
    }

    /// The value, read by `read` when it is missing or past half its life (see the module
    /// doc); `now` is the clock ages are taken on.
    pub async fn get<F, Fut>(&self, now: impl Fn() -> Instant, read: F) -> Result<T>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        if let Some(value) = self.young(now()) {
            return Ok(value);
        }
        loop {
            // Registered before the slot is looked at: a read ending in between still wakes.
            let done = self.read_done.notified();
            let asked = now();
            match self.step(asked) {
                Step::Use(value) => return Ok(value),
                Step::Wait => done.await,
                Step::Read => {
                    let _reading = Reading(self);
                    let value = read().await?;
                    self.put(value.clone(), asked);
                    return Ok(value);
                }
            }
        }
    }

    /// The value if it is within half its life: what most callers get, with no wait and no
    /// read.
    pub fn young(&self, now: Instant) -> Option<T> {
        match &self.slot.read().value {
            Some((value, at)) if now.saturating_duration_since(*at) < self.life / 2 => {
                Some(value.clone())
            }
            _ => None,
        }
    }

    /// Stores `value`, read by a request sent at `asked`, unless a later-sent read's value is
    /// there already.
    pub fn put(&self, value: T, asked: Instant) {
        let mut slot = self.slot.write();
        if slot.value.as_ref().is_none_or(|(_, at)| *at <= asked) {
            slot.value = Some((value, asked));
        }
    }

    fn step(&self, now: Instant) -> Step<T> {
        let mut slot = self.slot.write();
        if let Some((value, at)) = &slot.value {
            let age = now.saturating_duration_since(*at);
            // Past half its life, a value is still used while someone reads its successor.
            if age < self.life / 2 || (slot.reading && age < self.life) {
                return Step::Use(value.clone());
            }
        }
        if slot.reading {
            Step::Wait
        } else {
            slot.reading = true;
            Step::Read
        }
    }
}

#[cfg(test)]
#[path = "refresh_tests.rs"]
mod tests;
