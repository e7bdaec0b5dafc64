//! Tracked background work: secondary commits and the heartbeat task run as tasks the client
//! can wait for (`Client::drain`) and that shutdown drains, never fire-and-forget.

use std::future::Future;

use tokio::runtime::Handle;
use tokio_util::task::TaskTracker;

pub(crate) struct Background {
    tasks: TaskTracker,
    runtime: Handle,
}

impl Background {
    pub fn new(runtime: Handle) -> Background {
        Background {
            tasks: TaskTracker::new(),
            runtime,
        }
    }

    pub fn runtime(&self) -> &Handle {
        &self.runtime
    }

    /// Runs `work` on the client's runtime, tracked until it finishes.
    pub fn spawn(&self, work: impl Future<Output = ()> + Send + 'static) {
        let queued = Queued::new();
        self.tasks.spawn_on(
            async move {
                let _queued = queued;
                work.await;
            },
            &self.runtime,
        );
    }

    /// Waits for every task spawned before this call (and any they spawn meanwhile).
    pub async fn drain(&self) {
        self.tasks.close();
        self.tasks.wait().await;
        self.tasks.reopen();
    }
}

/// Counts a task in the background gauge until it ends or is dropped unrun (at shutdown).
struct Queued;

impl Queued {
    fn new() -> Queued {
        Queued::count(1.0);
        Queued
    }

    fn count(delta: f64) {
        crate::metrics::gauge_add(crate::metrics::key!(crate::metrics::BACKGROUND), delta);
    }
}

impl Drop for Queued {
    fn drop(&mut self) {
        Queued::count(-1.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[test]
    fn drain_waits_for_every_spawned_task_and_the_tracker_takes_more_after() {
        let bg = Background::new(crate::runtime::ambient_or_io().unwrap());
        let done = Arc::new(AtomicUsize::new(0));
        for _ in 0..20 {
            let done = done.clone();
            bg.spawn(async move {
                tokio::time::sleep(std::time::Duration::from_millis(2)).await;
                done.fetch_add(1, Ordering::SeqCst);
            });
        }
        crate::runtime::wait(bg.runtime(), bg.drain());
        assert_eq!(done.load(Ordering::SeqCst), 20);
        let d = done.clone();
        bg.spawn(async move {
            d.fetch_add(1, Ordering::SeqCst);
        });
        crate::runtime::wait(bg.runtime(), bg.drain());
        assert_eq!(done.load(Ordering::SeqCst), 21);
    }
}
