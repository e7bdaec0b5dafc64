//! Workloads behind the `percolator` binary: the bank demo (also the bank test) and the bench.
//! Private: the binary reaches them through the hidden `cli` module of the crate root.

pub mod bank;
#[cfg(test)]
mod bank_test;
pub mod bench;
pub mod bench_command;
pub mod demo;
mod floor;
pub mod gc_bench;
pub mod handed;
pub mod large;
pub mod notify_bench;
pub mod observe_demo;
mod rows;
pub mod soak;
pub mod stack;
mod usage;

/// Runs `op` again while it fails with a retryable error (locks of clients that may still be
/// alive, a region in transition), for a minute at most: a workload's own checks and set-up
/// must outlast what the workload itself waits out.
pub fn retried<T>(mut op: impl FnMut() -> percolator::Result<T>) -> percolator::Result<T> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        match op() {
            Err(e)
                if e.retry_class() == percolator::RetryClass::Retry
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
            other => return other,
        }
    }
}

/// Held by a unit test that commits transactions: the library's failpoints are process-wide,
/// and the bank's crash test arms them under the same lock, so the two never overlap.
#[cfg(test)]
fn failpoints_off() -> fail::FailScenario<'static> {
    fail::FailScenario::setup()
}
