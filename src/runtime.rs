//! Where the client's tasks run, and how synchronous callers wait for async work.
//!
//! The async API runs on the caller's runtime. A client built outside a multi-thread runtime
//! (the synchronous API, or a current-thread runtime that only makes progress while it is
//! polled) puts its background tasks on one shared, process-wide runtime instead, so they keep
//! running whatever the caller's thread does.

use std::future::Future;
use std::sync::OnceLock;

use tokio::runtime::{Handle, Runtime, RuntimeFlavor};

/// Worker threads of the shared runtime: one per core is enough for I/O and protocol steps,
/// and the machines this targets are small.
fn shared_threads() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().clamp(1, 4))
}

fn shared() -> &'static Runtime {
    static SHARED: OnceLock<Runtime> = OnceLock::new();
    SHARED.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(shared_threads())
            .thread_name("percolator-rt")
            .enable_all()
            .build()
            // Without threads or an event loop nothing in this crate can work; there is no
            // better answer to give than the OS's refusal.
            .expect("building the percolator runtime")
    })
}

/// The runtime a client created here should use: the caller's when it is a multi-thread
/// runtime, the shared one otherwise.
pub(crate) fn handle() -> Handle {
    match Handle::try_current() {
        Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => h,
        _ => shared().handle().clone(),
    }
}

/// Runs `future` to completion for a synchronous caller, from any thread: a plain thread polls
/// it itself (the request leaves without a hand-off); a worker of a multi-thread runtime
/// steps aside first; a current-thread runtime, which must not be blocked in place, waits on a
/// helper thread.
pub(crate) fn block_on<F>(handle: &Handle, future: F) -> F::Output
where
    F: Future + Send,
    F::Output: Send,
{
    match Handle::try_current().map(|h| h.runtime_flavor()) {
        Err(_) => handle.block_on(future),
        Ok(RuntimeFlavor::MultiThread) => tokio::task::block_in_place(|| handle.block_on(future)),
        Ok(_) => std::thread::scope(|s| match s.spawn(|| handle.block_on(future)).join() {
            Ok(out) => out,
            Err(panic) => std::panic::resume_unwind(panic),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_on_works_from_a_plain_thread_and_from_inside_runtimes() {
        let h = handle();
        assert_eq!(block_on(&h, async { 1 }), 1);
        let multi = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let inner = multi
            .block_on(async { tokio::spawn(async { block_on(&handle(), async { 2 }) }).await });
        assert_eq!(inner.unwrap(), 2);
        let current = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let h2 = handle();
        assert_eq!(
            current.block_on(async {
                block_on(&h2, async {
                    tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                    3
                })
            }),
            3
        );
    }
}
