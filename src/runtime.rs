//! Where the clients' I/O and background tasks run, and how a blocking caller waits for an
//! async call.
//!
//! A socket belongs to the runtime that registered it, and its readiness only arrives while
//! that runtime runs. So connections and background tasks live on a multi-thread runtime,
//! whose own threads drive them whatever the callers do: the caller's, when a client is built
//! inside one, else a small process-wide runtime built on first use. A current-thread runtime
//! is never used: its I/O stops whenever its one thread blocks, e.g. in a blocking call.
//!
//! A blocking call polls its future on the caller's own thread (`Handle::block_on`), so the
//! request is written without a hand-off; only the reply comes from the reader's thread.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use tokio::runtime::{Builder, Handle, Runtime, RuntimeFlavor};

use crate::{Error, Result};

/// The environment variable that sets the worker count of the runtime the clients fall back
/// on (a positive integer): the one the blocking API and clients built outside a multi-thread
/// runtime use. Unset: two, or one in the `percolator` binary's embedded profile.
pub const IO_THREADS_ENV: &str = "PERCOLATOR_IO_THREADS";

/// Worker threads of the shared runtime by default. They read replies, wake callers and run
/// background commits and heartbeats. Two keep a reply's wake-up short where calls wait on a
/// network: one of them is often still awake when a reply comes, where a lone worker would be
/// parked. Against the cluster profile, a transaction of two calls took 1.96-1.99 times a put's
/// p50 with two workers and 2.07-2.25 with one (measured on b25f77f; docs/benchmarks.md).
const DEFAULT_IO_THREADS: usize = 2;

/// A worker count asked for by [`prefer_io_threads`] (0: none).
static PREFERRED: AtomicUsize = AtomicUsize::new(0);

/// Asks for `threads` workers in the shared runtime, for a process whose clients share its
/// cores with the gateway (the embedded emulator). There, a second worker costs more than it
/// gives: the worker that reads a reply wakes the waiting task, the idle one is woken to steal
/// it, and on a 2-core machine that hand-off made every call cost 14-26% more CPU with no gain
/// in throughput (measured on b25f77f). `PERCOLATOR_IO_THREADS` still wins, and a runtime
/// already built keeps its size.
#[cfg_attr(not(feature = "testing"), allow(dead_code))]
pub fn prefer_io_threads(threads: usize) {
    PREFERRED.store(threads, Ordering::Relaxed);
}

/// The worker count: `PERCOLATOR_IO_THREADS` (`env`), else the one `preferred`, else the
/// default.
fn io_threads(env: Option<&str>, preferred: usize) -> Result<usize> {
    match env.map(str::trim) {
        None if preferred > 0 => Ok(preferred),
        None => Ok(DEFAULT_IO_THREADS),
        Some(text) => match text.parse::<usize>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(Error::IllegalArgument {
                message: format!("{IO_THREADS_ENV} must be a positive integer, not {text:?}"),
            }),
        },
    }
}

/// The shared I/O runtime's handle, built on first use. A bad `PERCOLATOR_IO_THREADS` fails
/// the call and builds nothing.
pub(crate) fn io_handle() -> Result<Handle> {
    static IO: OnceLock<std::result::Result<Runtime, String>> = OnceLock::new();
    let built = match IO.get() {
        Some(built) => built,
        None => {
            let env = std::env::var(IO_THREADS_ENV).ok();
            let threads = io_threads(env.as_deref(), PREFERRED.load(Ordering::Relaxed))?;
            IO.get_or_init(|| {
                Builder::new_multi_thread()
                    .worker_threads(threads)
                    .thread_name("percolator-io")
                    .enable_all()
                    .build()
                    .map_err(|e| e.to_string())
            })
        }
    };
    match built {
        Ok(runtime) => Ok(runtime.handle().clone()),
        Err(message) => Err(Error::io(
            "building the percolator I/O runtime",
            std::io::Error::other(message.clone()),
        )),
    }
}

/// The caller's runtime if it is a multi-thread one, else the shared I/O runtime.
pub fn ambient_or_io() -> Result<Handle> {
    match Handle::try_current() {
        Ok(current) if current.runtime_flavor() == RuntimeFlavor::MultiThread => Ok(current),
        _ => io_handle(),
    }
}

/// Runs `future` to completion from synchronous code on any thread, `handle` being the runtime
/// its I/O is registered with.
pub fn wait<F>(handle: &Handle, future: F) -> F::Output
where
    F: Future + Send,
    F::Output: Send,
{
    match Handle::try_current().map(|current| current.runtime_flavor()) {
        Err(_) => handle.block_on(future),
        // Blocking a current-thread runtime's only thread would stall everything on it,
        // including timers this call may need: wait on a thread of our own instead.
        Ok(RuntimeFlavor::CurrentThread) => std::thread::scope(|scope| {
            let waiter = scope.spawn(|| handle.block_on(future));
            match waiter.join() {
                Ok(output) => output,
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }),
        // A worker of a multi-thread runtime: hand its other tasks to another thread first.
        Ok(_) => tokio::task::block_in_place(|| handle.block_on(future)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_then_the_preference_then_the_default_size_the_shared_runtime() {
        assert_eq!(io_threads(None, 0).unwrap(), DEFAULT_IO_THREADS);
        assert_eq!(io_threads(None, 1).unwrap(), 1);
        assert_eq!(io_threads(Some(" 3 "), 1).unwrap(), 3);
        for bad in ["0", "-1", "two", ""] {
            let err = io_threads(Some(bad), 1).unwrap_err();
            assert!(
                matches!(&err, Error::IllegalArgument { message } if message.contains(IO_THREADS_ENV)),
                "{bad}: {err}"
            );
        }
    }
}
