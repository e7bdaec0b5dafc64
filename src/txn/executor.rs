//! Tracked background work (secondary commits), drained on shutdown.
//!
//! Jobs go to [`Executor::later`]: one collector thread runs them in batches, a tick after
//! the first one arrives, so one wake-up serves every transaction that committed in the
//! meantime instead of one thread wake per transaction. Round trips a transaction overlaps
//! itself are pipelined on its own thread (`HBaseClient::check_and_mutate_all`), not handed
//! out here.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

type Job = Box<dyn FnOnce() + Send + 'static>;

/// How long the collector lets a batch of jobs fill after the first one arrives.
const TICK: Duration = Duration::from_micros(500);

pub(crate) struct Executor {
    background: Arc<Pending>,
    later: Arc<Later>,
    collector: Mutex<Option<JoinHandle<()>>>,
}

#[derive(Default)]
struct Later {
    state: Mutex<LaterState>,
    wake: Condvar,
}

#[derive(Default)]
struct LaterState {
    jobs: Vec<Job>,
    stopped: bool,
}

impl Later {
    /// The collector: waits for a first job, lets the batch fill for a tick, runs it all.
    /// After `stopped`, runs what is left and returns.
    fn collect(&self) {
        let mut state = self.state.lock();
        loop {
            while state.jobs.is_empty() && !state.stopped {
                self.wake.wait(&mut state);
            }
            if state.jobs.is_empty() {
                return;
            }
            if !state.stopped {
                self.wake.wait_for(&mut state, TICK);
            }
            let jobs = std::mem::take(&mut state.jobs);
            parking_lot::MutexGuard::unlocked(&mut state, || {
                for job in jobs {
                    job();
                }
            });
        }
    }
}

#[derive(Default)]
struct Pending {
    count: Mutex<usize>,
    idle: Condvar,
}

impl Executor {
    pub fn new() -> Executor {
        let later = Arc::new(Later::default());
        let collector = {
            let later = Arc::clone(&later);
            std::thread::Builder::new()
                .name("percolator-collect".into())
                .spawn(move || later.collect())
                .expect("spawn collector thread")
        };
        Executor {
            background: Arc::new(Pending::default()),
            later,
            collector: Mutex::new(Some(collector)),
        }
    }

    /// Runs `job` in the background, tracked until it finishes (see [`Executor::drain`]), up
    /// to a tick later, together with the other jobs of that tick. After shutdown nothing may
    /// be dropped silently: the job runs at once, on the caller.
    pub fn later(&self, job: impl FnOnce() + Send + 'static) {
        let job = self.tracked(job);
        let mut state = self.later.state.lock();
        if state.stopped {
            drop(state);
            return job();
        }
        state.jobs.push(job);
        if state.jobs.len() == 1 {
            self.later.wake.notify_one();
        }
    }

    /// `job`, counted as background work until it finishes.
    fn tracked(&self, job: impl FnOnce() + Send + 'static) -> Job {
        *self.background.count.lock() += 1;
        let pending = self.background.clone();
        Box::new(move || {
            job();
            let mut count = pending.count.lock();
            *count -= 1;
            if *count == 0 {
                pending.idle.notify_all();
            }
        })
    }

    fn is_collector(&self) -> bool {
        let me = std::thread::current().id();
        self.collector
            .lock()
            .as_ref()
            .is_some_and(|c| c.thread().id() == me)
    }

    /// Jobs queued from now on run at once on their caller; the collector runs what is queued
    /// and exits.
    fn stop_collector(&self) {
        self.later.state.lock().stopped = true;
        self.later.wake.notify_all();
    }

    /// Waits until every background job has finished.
    pub fn drain(&self) {
        let mut count = self.background.count.lock();
        while *count > 0 {
            self.background.idle.wait(&mut count);
        }
    }

    /// Drains, then stops and joins the collector. Idempotent.
    pub fn shutdown(&self) {
        if self.is_collector() {
            // Called from a background job (last client reference dropped there): draining
            // would wait for this very job, and the collector exits by itself once stopped.
            self.stop_collector();
            return;
        }
        self.drain();
        self.stop_collector();
        if let Some(c) = self.collector.lock().take() {
            let _ = c.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn drain_waits_for_background_jobs() {
        let ex = Executor::new();
        let done = Arc::new(AtomicUsize::new(0));
        for _ in 0..20 {
            let done = done.clone();
            ex.later(move || {
                std::thread::sleep(std::time::Duration::from_millis(2));
                done.fetch_add(1, Ordering::SeqCst);
            });
        }
        ex.drain();
        assert_eq!(done.load(Ordering::SeqCst), 20);
        ex.shutdown();
    }

    #[test]
    fn later_jobs_run_in_batches_are_drained_and_run_inline_after_shutdown() {
        let ex = Executor::new();
        let done = Arc::new(AtomicUsize::new(0));
        let threads = Arc::new(Mutex::new(Vec::new()));
        for _ in 0..50 {
            let (done, threads) = (done.clone(), threads.clone());
            ex.later(move || {
                threads.lock().push(std::thread::current().id());
                done.fetch_add(1, Ordering::SeqCst);
            });
        }
        ex.drain();
        assert_eq!(done.load(Ordering::SeqCst), 50);
        let me = std::thread::current().id();
        assert!(
            threads.lock().iter().all(|t| *t != me),
            "run by the collector"
        );
        ex.shutdown();
        let d = done.clone();
        ex.later(move || {
            d.fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(
            done.load(Ordering::SeqCst),
            51,
            "after shutdown: at once, here"
        );
    }
}
