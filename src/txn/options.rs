//! Client options, retry policy and the crash-injection seams.

use std::sync::Arc;
use std::time::Duration;

use crate::clock::{Clock, SystemClock};
use crate::txn::liveness::LivenessConfig;
use crate::txn::schema::Schema;

/// The protocol seams where a client can be made to die, by the `fail` crate's failpoints
/// (feature `failpoints`, names from [`Seam::name`]) or by a [`CrashInjector`] at run time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Seam {
    AfterPrimaryPrewrite,
    AfterSecondaryPrewrite,
    BeforePrimaryCommit,
    AfterPrimaryCommit,
    BetweenSecondaryCommits,
}

impl Seam {
    pub const ALL: [Seam; 5] = [
        Seam::AfterPrimaryPrewrite,
        Seam::AfterSecondaryPrewrite,
        Seam::BeforePrimaryCommit,
        Seam::AfterPrimaryCommit,
        Seam::BetweenSecondaryCommits,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Seam::AfterPrimaryPrewrite => "txn::after_primary_prewrite",
            Seam::AfterSecondaryPrewrite => "txn::after_secondary_prewrite",
            Seam::BeforePrimaryCommit => "txn::before_primary_commit",
            Seam::AfterPrimaryCommit => "txn::after_primary_commit",
            Seam::BetweenSecondaryCommits => "txn::between_secondary_commits",
        }
    }
}

/// Decides at run time whether the client dies at a seam (the demo's crash injection).
pub type CrashInjector = Arc<dyn Fn(Seam) -> bool + Send + Sync>;

/// Backoff for `Client::run` and for waiting on live locks.
#[derive(Clone, Debug)]
pub struct RetryPolicy {
    pub max_attempts: u32,
    pub base_backoff: Duration,
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 20,
            base_backoff: Duration::from_millis(2),
            max_backoff: Duration::from_millis(200),
        }
    }
}

impl RetryPolicy {
    /// Full-jitter exponential backoff for the given attempt (0-based).
    pub fn backoff(&self, attempt: u32) -> Duration {
        let cap = self
            .base_backoff
            .saturating_mul(1u32 << attempt.min(16))
            .min(self.max_backoff);
        let nanos = cap.as_nanos().max(1) as u64;
        Duration::from_nanos(rand::random::<u64>() % nanos + nanos / 4)
    }
}

#[derive(Clone)]
pub struct TxnOptions {
    pub schema: Schema,
    pub liveness: LivenessConfig,
    /// A lock whose wall time is older than this may be cleaned even if its owner looks alive;
    /// owners refresh their primary lock every third of it while they commit.
    pub lock_ttl: Duration,
    /// How long a read waits on a live lock before failing with `KeyLocked` (retryable).
    pub max_lock_wait: Duration,
    /// Values up to this size are copied into the write record: a read then needs one round
    /// trip (TiKV's short values).
    pub short_value_limit: usize,
    /// Values above this are refused with `ValueTooLarge` (the gateway's frame is 2 MB).
    pub max_value_size: usize,
    /// Wait for secondary commits before `commit` returns (they run in the background
    /// otherwise, tracked and drained on shutdown).
    pub sync_secondaries: bool,
    pub retry: RetryPolicy,
    pub crash_injector: Option<CrashInjector>,
    pub clock: Arc<dyn Clock>,
}

impl Default for TxnOptions {
    fn default() -> Self {
        TxnOptions {
            schema: Schema::default(),
            liveness: LivenessConfig::default(),
            lock_ttl: Duration::from_secs(3),
            max_lock_wait: Duration::from_secs(10),
            short_value_limit: 1024,
            max_value_size: 1 << 20,
            sync_secondaries: false,
            retry: RetryPolicy::default(),
            crash_injector: None,
            clock: Arc::new(SystemClock),
        }
    }
}

impl std::fmt::Debug for TxnOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TxnOptions")
            .field("schema", &self.schema)
            .field("liveness", &self.liveness)
            .field("lock_ttl", &self.lock_ttl)
            .field("max_lock_wait", &self.max_lock_wait)
            .field("short_value_limit", &self.short_value_limit)
            .field("max_value_size", &self.max_value_size)
            .field("sync_secondaries", &self.sync_secondaries)
            .field("retry", &self.retry)
            .field("crash_injector", &self.crash_injector.is_some())
            .finish()
    }
}
