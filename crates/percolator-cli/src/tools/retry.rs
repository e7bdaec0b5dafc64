//! Calls made again while HBase is in transition.

/// Runs `op` again while it fails with a retryable error (locks of clients that may still be
/// alive, a region in transition), for a minute at most: a workload's own checks and set-up,
/// and a test's plain calls, must outlast what the work itself waits out.
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
