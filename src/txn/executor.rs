//! A fixed pool of worker threads for the RPCs a transaction issues in parallel (the Thrift
//! client is blocking: parallel round trips need parallel threads), plus tracking of the
//! background work that outlives a call (secondary commits), so shutdown can drain it.

use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::{bounded, unbounded, Sender};
use parking_lot::{Condvar, Mutex};

type Job = Box<dyn FnOnce() + Send + 'static>;

pub(crate) struct Executor {
    jobs: Mutex<Option<Sender<Job>>>,
    workers: Mutex<Vec<JoinHandle<()>>>,
    background: Arc<Pending>,
}

#[derive(Default)]
struct Pending {
    count: Mutex<usize>,
    idle: Condvar,
}

impl Executor {
    pub fn new(threads: usize) -> Executor {
        let (tx, rx) = unbounded::<Job>();
        let workers = (0..threads.max(1))
            .map(|i| {
                let rx = rx.clone();
                std::thread::Builder::new()
                    .name(format!("percolator-rpc-{i}"))
                    .spawn(move || {
                        while let Ok(job) = rx.recv() {
                            job();
                        }
                    })
                    .expect("spawn worker thread")
            })
            .collect();
        Executor {
            jobs: Mutex::new(Some(tx)),
            workers: Mutex::new(workers),
            background: Arc::new(Pending::default()),
        }
    }

    /// Hands `job` to the pool, or gives it back once the pool is shut down.
    fn submit(&self, job: Job) -> Result<(), Job> {
        match self.jobs.lock().as_ref() {
            Some(tx) => tx.send(job).map_err(|e| e.0),
            None => Err(job),
        }
    }

    /// Runs `f` over `items` in parallel, the first on the calling thread, and returns the
    /// results in order. Must not be called from a worker (it would wait on its own pool).
    pub fn map<T, R, F>(&self, items: Vec<T>, f: F) -> Vec<R>
    where
        T: Send + 'static,
        R: Send + 'static,
        F: Fn(T) -> R + Send + Sync + 'static,
    {
        let n = items.len();
        let f = Arc::new(f);
        let (tx, rx) = bounded::<(usize, R)>(n);
        let mut items = items.into_iter();
        let first = items.next();
        for (i, item) in items.enumerate() {
            let (f, tx) = (f.clone(), tx.clone());
            let job: Job = Box::new(move || {
                let _ = tx.send((i + 1, f(item)));
            });
            if let Err(job) = self.submit(job) {
                // Pool shut down: run it here instead of losing it.
                job();
            }
        }
        let mut out: Vec<Option<R>> = (0..n).map(|_| None).collect();
        if let Some(item) = first {
            out[0] = Some(f(item));
        }
        drop(tx);
        for (i, r) in rx.iter() {
            out[i] = Some(r);
        }
        out.into_iter()
            .map(|r| r.expect("every job reports exactly once"))
            .collect()
    }

    /// Runs `job` in the background, tracked until it finishes (see [`Executor::drain`]).
    pub fn spawn(&self, job: impl FnOnce() + Send + 'static) {
        *self.background.count.lock() += 1;
        let pending = self.background.clone();
        let tracked = move || {
            job();
            let mut count = pending.count.lock();
            *count -= 1;
            if *count == 0 {
                pending.idle.notify_all();
            }
        };
        if let Err(job) = self.submit(Box::new(tracked)) {
            // After shutdown nothing may be dropped silently: do it now, on this thread.
            job();
        }
    }

    /// Waits until every background job has finished.
    pub fn drain(&self) {
        let mut count = self.background.count.lock();
        while *count > 0 {
            self.background.idle.wait(&mut count);
        }
    }

    /// Drains, then stops and joins the workers. Idempotent.
    pub fn shutdown(&self) {
        self.drain();
        self.jobs.lock().take();
        for w in self.workers.lock().drain(..) {
            let _ = w.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn map_keeps_order_and_runs_everything() {
        let ex = Executor::new(3);
        let out = ex.map((0..50).collect(), |i: i32| i * 2);
        assert_eq!(out, (0..50).map(|i| i * 2).collect::<Vec<_>>());
        ex.shutdown();
    }

    #[test]
    fn drain_waits_for_background_jobs() {
        let ex = Executor::new(2);
        let done = Arc::new(AtomicUsize::new(0));
        for _ in 0..20 {
            let done = done.clone();
            ex.spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(2));
                done.fetch_add(1, Ordering::SeqCst);
            });
        }
        ex.drain();
        assert_eq!(done.load(Ordering::SeqCst), 20);
        ex.shutdown();
    }
}
