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
use std::sync::OnceLock;

use tokio::runtime::{Builder, Handle, Runtime, RuntimeFlavor};

use crate::{Error, Result};

/// Worker threads of the shared runtime: they read replies, wake callers and run background
/// commits and heartbeats; the machines this targets are small.
const IO_THREADS: usize = 2;

/// The shared I/O runtime's handle, built on first use.
pub(crate) fn io_handle() -> Result<Handle> {
    static IO: OnceLock<std::result::Result<Runtime, String>> = OnceLock::new();
    let built = IO.get_or_init(|| {
        Builder::new_multi_thread()
            .worker_threads(IO_THREADS)
            .thread_name("percolator-io")
            .enable_all()
            .build()
            .map_err(|e| e.to_string())
    });
    match built {
        Ok(runtime) => Ok(runtime.handle().clone()),
        Err(message) => Err(Error::io(
            "building the percolator I/O runtime",
            std::io::Error::other(message.clone()),
        )),
    }
}

/// The caller's runtime if it is a multi-thread one, else the shared I/O runtime.
pub(crate) fn ambient_or_io() -> Result<Handle> {
    match Handle::try_current() {
        Ok(current) if current.runtime_flavor() == RuntimeFlavor::MultiThread => Ok(current),
        _ => io_handle(),
    }
}

/// Runs `future` to completion from synchronous code on any thread, `handle` being the runtime
/// its I/O is registered with.
pub(crate) fn wait<F>(handle: &Handle, future: F) -> F::Output
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
