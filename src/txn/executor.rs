//! A fixed pool of worker threads for the work that outlives a call (background secondary
//! commits), tracked so shutdown can drain it. Round trips a transaction overlaps itself are
//! pipelined on its own thread (`HBaseClient::check_and_mutate_all`), not handed out here.

use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::{unbounded, Sender};
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

    fn is_worker(&self) -> bool {
        let me = std::thread::current().id();
        self.workers.lock().iter().any(|w| w.thread().id() == me)
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
        if self.is_worker() {
            // Called from a background job (last client reference dropped there): draining would
            // wait for this very job.
            self.jobs.lock().take();
            return;
        }
        self.drain();
        self.jobs.lock().take();
        let me = std::thread::current().id();
        for w in self.workers.lock().drain(..) {
            // The last reference to the client may be dropped by a background job on a worker:
            // that worker exits by itself once the channel is closed.
            if w.thread().id() != me {
                let _ = w.join();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

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
