//! Client options and their builder, the retry policy, and the crash-injection seams.

use std::sync::Arc;
use std::time::Duration;

use crate::clock::{Clock, SystemClock};
use crate::txn::liveness::LivenessConfig;
use crate::txn::schema::Schema;

/// `TxnOptions::max_txn_bytes` unless set: 64 MiB of keys and values, about 550,000 cells of
/// 100-byte values.
const MAX_TXN_BYTES: usize = 64 << 20;

/// The protocol seams where a client can be made to die, by the `fail` crate's failpoints
/// (feature `failpoints`, names from [`Seam::name`]) or by a crash injector (feature
/// `testing`).
///
/// ```
/// # #[cfg(feature = "testing")] {
/// use percolator::txn::Seam;
/// assert_eq!(Seam::BeforePrimaryCommit.name(), "txn::before_primary_commit");
/// # }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Seam {
    AfterPrimaryPrewrite,
    AfterSecondaryPrewrite,
    BeforePrimaryCommit,
    AfterPrimaryCommit,
    BetweenSecondaryCommits,
}

impl Seam {
    /// ```
    /// assert_eq!(percolator::txn::Seam::ALL.len(), 5);
    /// ```
    #[cfg(feature = "testing")]
    pub const ALL: [Seam; 5] = [
        Seam::AfterPrimaryPrewrite,
        Seam::AfterSecondaryPrewrite,
        Seam::BeforePrimaryCommit,
        Seam::AfterPrimaryCommit,
        Seam::BetweenSecondaryCommits,
    ];

    /// ```
    /// assert_eq!(percolator::txn::Seam::AfterPrimaryCommit.name(), "txn::after_primary_commit");
    /// ```
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

/// Held by a unit test that commits transactions: the seams' failpoints are process-wide, and
/// a test that arms them (the bank's crash test) holds the same lock, so the two never overlap.
#[cfg(all(test, feature = "failpoints"))]
pub(crate) fn failpoints_off() -> fail::FailScenario<'static> {
    fail::FailScenario::setup()
}

/// Without the failpoints feature nothing is process-wide: nothing to hold.
#[cfg(all(test, not(feature = "failpoints")))]
pub(crate) fn failpoints_off() -> impl Sized {}

/// Decides at run time whether the client dies at a seam (the demo's crash injection).
///
/// ```
/// use percolator::txn::{CrashInjector, Seam};
/// let injector: CrashInjector = std::sync::Arc::new(|seam| seam == Seam::BeforePrimaryCommit);
/// assert!(injector(Seam::BeforePrimaryCommit));
/// ```
pub type CrashInjector = Arc<dyn Fn(Seam) -> bool + Send + Sync>;

/// Backoff for `Client::run` and for waiting on live locks: full-jitter exponential.
///
/// ```
/// use std::time::Duration;
/// let policy = percolator::txn::RetryPolicy::new(5, Duration::from_millis(1), Duration::from_millis(50));
/// assert!(policy.backoff(3) <= Duration::from_millis(10));
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RetryPolicy {
    pub max_attempts: u32,
    pub base_backoff: Duration,
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy::new(20, Duration::from_millis(2), Duration::from_millis(200))
    }
}

impl RetryPolicy {
    /// ```
    /// use std::time::Duration;
    /// let p = percolator::txn::RetryPolicy::new(3, Duration::from_millis(1), Duration::from_millis(8));
    /// assert_eq!(p.max_attempts, 3);
    /// ```
    pub fn new(max_attempts: u32, base_backoff: Duration, max_backoff: Duration) -> Self {
        RetryPolicy {
            max_attempts: max_attempts.max(1),
            base_backoff,
            max_backoff,
        }
    }

    /// The pause before attempt `attempt + 1` (0-based): at most the capped exponential, at
    /// least a quarter of it.
    ///
    /// ```
    /// let p = percolator::txn::RetryPolicy::default();
    /// assert!(p.backoff(0) <= p.base_backoff);
    /// assert!(p.backoff(30) <= p.max_backoff);
    /// ```
    pub fn backoff(&self, attempt: u32) -> Duration {
        let cap = self
            .base_backoff
            .saturating_mul(1u32 << attempt.min(16))
            .min(self.max_backoff);
        let nanos = cap.as_nanos().max(1) as u64;
        Duration::from_nanos(rand::random::<u64>() % nanos * 3 / 4 + nanos / 4)
    }
}

/// How a client runs transactions. Build with [`TxnOptions::builder`]; read with the getters.
///
/// ```
/// use std::time::Duration;
/// use percolator::TxnOptions;
/// let options = TxnOptions::builder()
///     .lock_ttl(Duration::from_secs(5))
///     .sync_secondaries(true)
///     .build();
/// assert_eq!(options.lock_ttl(), Duration::from_secs(5));
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct TxnOptions {
    pub(crate) schema: Schema,
    pub(crate) liveness: LivenessConfig,
    pub(crate) lock_ttl: Duration,
    pub(crate) max_lock_wait: Duration,
    pub(crate) start_timeout: Duration,
    pub(crate) settle_timeout: Duration,
    pub(crate) short_value_limit: usize,
    pub(crate) max_value_size: usize,
    pub(crate) max_txn_bytes: usize,
    pub(crate) sync_secondaries: bool,
    pub(crate) blind_write_start_age: Duration,
    pub(crate) retry: RetryPolicy,
    pub(crate) crash_injector: Option<CrashInjector>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) oracle: crate::oracle::ClientConfig,
}

impl Default for TxnOptions {
    fn default() -> Self {
        TxnOptions {
            schema: Schema::default(),
            liveness: LivenessConfig::default(),
            lock_ttl: Duration::from_secs(3),
            max_lock_wait: Duration::from_secs(10),
            start_timeout: Duration::from_secs(30),
            settle_timeout: Duration::from_secs(30),
            short_value_limit: 1024,
            max_value_size: 1 << 20,
            max_txn_bytes: MAX_TXN_BYTES,
            sync_secondaries: false,
            blind_write_start_age: Duration::from_millis(2),
            retry: RetryPolicy::default(),
            crash_injector: None,
            clock: Arc::new(SystemClock),
            oracle: crate::oracle::ClientConfig::default(),
        }
    }
}

impl TxnOptions {
    /// A builder starting from the defaults.
    ///
    /// ```
    /// let o = percolator::TxnOptions::builder().sync_secondaries(true).build();
    /// assert!(o.sync_secondaries());
    /// ```
    pub fn builder() -> TxnOptionsBuilder {
        TxnOptionsBuilder(TxnOptions::default())
    }

    /// A builder starting from these options.
    ///
    /// ```
    /// let base = percolator::TxnOptions::default();
    /// let o = base.to_builder().max_value_size(64).build();
    /// assert_eq!((o.max_value_size(), o.lock_ttl()), (64, base.lock_ttl()));
    /// ```
    pub fn to_builder(&self) -> TxnOptionsBuilder {
        TxnOptionsBuilder(self.clone())
    }

    /// The column families of locks and write records.
    ///
    /// ```
    /// assert_eq!(percolator::TxnOptions::default().schema().lock_family, b"_pl");
    /// ```
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// Where liveness rows live and how long they last.
    ///
    /// ```
    /// assert!(!percolator::TxnOptions::default().liveness().table.is_empty());
    /// ```
    pub fn liveness(&self) -> &LivenessConfig {
        &self.liveness
    }

    /// A lock whose wall time is older than this may be cleaned even if its owner looks
    /// alive; owners refresh their primary lock every third of it while they commit.
    ///
    /// ```
    /// assert_eq!(percolator::TxnOptions::default().lock_ttl(), std::time::Duration::from_secs(3));
    /// ```
    pub fn lock_ttl(&self) -> Duration {
        self.lock_ttl
    }

    /// How long a read waits on a live lock before failing with `KeyLocked` (retryable).
    ///
    /// ```
    /// assert_eq!(percolator::TxnOptions::default().max_lock_wait(), std::time::Duration::from_secs(10));
    /// ```
    pub fn max_lock_wait(&self) -> Duration {
        self.max_lock_wait
    }

    /// How long a client's start waits out HBase states that clear by themselves (a region of
    /// the liveness table moving, splitting, or reopening after its server crashed) before it
    /// fails with the last such error. A gateway that cannot be reached fails at once.
    ///
    /// ```
    /// assert_eq!(percolator::TxnOptions::default().start_timeout(), std::time::Duration::from_secs(30));
    /// ```
    pub fn start_timeout(&self) -> Duration {
        self.start_timeout
    }

    /// How long a read that meets a region in transition (the gateway's HBase client gave up
    /// on a region moving, splitting, opening, or on a crashed server) is sent again before
    /// its error is returned. It bounds, too, how long a commit whose commit point went
    /// unanswered waits to re-read its primary before it reports `CommitUndetermined`. A
    /// region whose server crashed is back once the master noticed (the ZooKeeper session
    /// timeout) and reassigned it: seconds to tens of seconds. Writes are never resent blind.
    ///
    /// ```
    /// assert_eq!(percolator::TxnOptions::default().settle_timeout(), std::time::Duration::from_secs(30));
    /// ```
    pub fn settle_timeout(&self) -> Duration {
        self.settle_timeout
    }

    /// Values up to this size are copied into the write record, so a read needs one round
    /// trip (TiKV's short values).
    ///
    /// ```
    /// assert_eq!(percolator::TxnOptions::default().short_value_limit(), 1024);
    /// ```
    pub fn short_value_limit(&self) -> usize {
        self.short_value_limit
    }

    /// Values above this are refused with `ValueTooLarge` (the gateway's frame is 2 MB).
    ///
    /// ```
    /// assert_eq!(percolator::TxnOptions::default().max_value_size(), 1 << 20);
    /// ```
    pub fn max_value_size(&self) -> usize {
        self.max_value_size
    }

    /// The most a transaction may buffer, counting the rows, families, qualifiers and values
    /// of the cells it writes; a write past it is refused with `TransactionTooLarge` and
    /// nothing of the transaction is written. The client holds every buffered write until
    /// the commit ends (about twice this in memory while it commits), and readers of a cell
    /// wait while the commit holds its lock (docs/design.md, "Large transactions").
    ///
    /// ```
    /// assert_eq!(percolator::TxnOptions::default().max_txn_bytes(), 64 << 20);
    /// ```
    pub fn max_txn_bytes(&self) -> usize {
        self.max_txn_bytes
    }

    /// Whether `commit` waits for the secondary commits.
    ///
    /// ```
    /// assert!(!percolator::TxnOptions::default().sync_secondaries());
    /// ```
    pub fn sync_secondaries(&self) -> bool {
        self.sync_secondaries
    }

    /// How old a start timestamp at hand may be for a transaction that read nothing (a blind
    /// write); zero: always fetch one. Such a transaction needs no snapshot, only a start_ts
    /// above its own client's earlier commits and below its commit_ts, so at commit it takes a
    /// spare the oracle client got with a recent batch
    /// ([`TimestampSource::recent_timestamp`](crate::oracle::TimestampSource::recent_timestamp))
    /// and saves a round trip. Its write-conflict check then starts from up to this much
    /// earlier: it can only refuse more, a commit by another client in that interval.
    ///
    /// ```
    /// use std::time::Duration;
    /// assert_eq!(percolator::TxnOptions::default().blind_write_start_age(), Duration::from_millis(2));
    /// ```
    pub fn blind_write_start_age(&self) -> Duration {
        self.blind_write_start_age
    }

    /// ```
    /// assert_eq!(percolator::TxnOptions::default().retry().max_attempts, 20);
    /// ```
    pub fn retry(&self) -> &RetryPolicy {
        &self.retry
    }

    /// How the client connects to the oracle (see [`TxnOptionsBuilder::oracle`]).
    ///
    /// ```
    /// assert!(percolator::TxnOptions::default().oracle().tls.is_none(), "plain TCP");
    /// ```
    pub fn oracle(&self) -> &crate::oracle::ClientConfig {
        &self.oracle
    }

    /// ```
    /// assert!(percolator::TxnOptions::default().clock().now_ms() > 0);
    /// ```
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// The crash injector, if one is set.
    ///
    /// ```
    /// assert!(percolator::TxnOptions::default().crash_injector().is_none());
    /// ```
    #[cfg(feature = "testing")]
    pub fn crash_injector(&self) -> Option<&CrashInjector> {
        self.crash_injector.as_ref()
    }
}

/// Sets [`TxnOptions`] one by one; see there for what each means.
///
/// ```
/// let options = percolator::TxnOptions::builder().short_value_limit(4096).build();
/// assert_eq!(options.short_value_limit(), 4096);
/// ```
#[derive(Clone)]
pub struct TxnOptionsBuilder(TxnOptions);

impl TxnOptionsBuilder {
    /// ```
    /// let schema = percolator::txn::Schema { lock_family: b"_l".to_vec(), ..Default::default() };
    /// let o = percolator::TxnOptions::builder().schema(schema.clone()).build();
    /// assert_eq!(o.schema(), &schema);
    /// ```
    pub fn schema(mut self, schema: Schema) -> Self {
        self.0.schema = schema;
        self
    }

    /// ```
    /// let live = percolator::txn::LivenessConfig { table: "alive".into(), ttl_secs: 2, ..Default::default() };
    /// let o = percolator::TxnOptions::builder().liveness(live).build();
    /// assert_eq!(o.liveness().table, "alive");
    /// ```
    pub fn liveness(mut self, liveness: LivenessConfig) -> Self {
        self.0.liveness = liveness;
        self
    }

    /// ```
    /// let o = percolator::TxnOptions::builder().lock_ttl(std::time::Duration::from_secs(9)).build();
    /// assert_eq!(o.lock_ttl().as_secs(), 9);
    /// ```
    pub fn lock_ttl(mut self, ttl: Duration) -> Self {
        self.0.lock_ttl = ttl;
        self
    }

    /// ```
    /// let o = percolator::TxnOptions::builder().max_lock_wait(std::time::Duration::from_secs(1)).build();
    /// assert_eq!(o.max_lock_wait().as_secs(), 1);
    /// ```
    pub fn max_lock_wait(mut self, wait: Duration) -> Self {
        self.0.max_lock_wait = wait;
        self
    }

    /// ```
    /// let o = percolator::TxnOptions::builder().start_timeout(std::time::Duration::from_secs(5)).build();
    /// assert_eq!(o.start_timeout().as_secs(), 5);
    /// ```
    pub fn start_timeout(mut self, timeout: Duration) -> Self {
        self.0.start_timeout = timeout;
        self
    }

    /// ```
    /// let o = percolator::TxnOptions::builder().settle_timeout(std::time::Duration::from_secs(5)).build();
    /// assert_eq!(o.settle_timeout().as_secs(), 5);
    /// ```
    pub fn settle_timeout(mut self, timeout: Duration) -> Self {
        self.0.settle_timeout = timeout;
        self
    }

    /// ```
    /// let o = percolator::TxnOptions::builder().short_value_limit(0).build();
    /// assert_eq!(o.short_value_limit(), 0, "every value then lives in the data column only");
    /// ```
    pub fn short_value_limit(mut self, bytes: usize) -> Self {
        self.0.short_value_limit = bytes;
        self
    }

    /// ```
    /// let o = percolator::TxnOptions::builder().max_value_size(4096).build();
    /// assert_eq!(o.max_value_size(), 4096);
    /// ```
    pub fn max_value_size(mut self, bytes: usize) -> Self {
        self.0.max_value_size = bytes;
        self
    }

    /// ```
    /// let o = percolator::TxnOptions::builder().max_txn_bytes(1 << 30).build();
    /// assert_eq!(o.max_txn_bytes(), 1 << 30);
    /// ```
    pub fn max_txn_bytes(mut self, bytes: usize) -> Self {
        self.0.max_txn_bytes = bytes;
        self
    }

    /// ```
    /// let o = percolator::TxnOptions::builder().sync_secondaries(true).build();
    /// assert!(o.sync_secondaries());
    /// ```
    pub fn sync_secondaries(mut self, wait: bool) -> Self {
        self.0.sync_secondaries = wait;
        self
    }

    /// ```
    /// use std::time::Duration;
    /// let o = percolator::TxnOptions::builder().blind_write_start_age(Duration::ZERO).build();
    /// assert!(o.blind_write_start_age().is_zero());
    /// ```
    pub fn blind_write_start_age(mut self, age: Duration) -> Self {
        self.0.blind_write_start_age = age;
        self
    }

    /// ```
    /// use std::time::Duration;
    /// let policy = percolator::txn::RetryPolicy::new(2, Duration::from_millis(1), Duration::from_millis(2));
    /// assert_eq!(percolator::TxnOptions::builder().retry(policy).build().retry().max_attempts, 2);
    /// ```
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.0.retry = policy;
        self
    }

    /// How `Client::connect` (and the other `connect`s given oracle addresses) reach the
    /// oracle: timeouts, TLS, token.
    ///
    /// ```
    /// use percolator::oracle::{ClientConfig, OracleToken};
    /// let o = percolator::TxnOptions::builder()
    ///     .oracle(ClientConfig {
    ///         tls: Some(percolator::hbase::TlsOptions::default()),
    ///         token: Some(OracleToken::new("s3cret")?),
    ///         ..ClientConfig::default()
    ///     })
    ///     .build();
    /// assert!(o.oracle().tls.is_some() && o.oracle().token.is_some());
    /// # Ok::<(), percolator::Error>(())
    /// ```
    pub fn oracle(mut self, config: crate::oracle::ClientConfig) -> Self {
        self.0.oracle = config;
        self
    }

    /// The wall clock locks and liveness rows are stamped with (tests move it).
    ///
    /// ```
    /// let o = percolator::TxnOptions::builder()
    ///     .clock(std::sync::Arc::new(percolator::txn::SystemClock))
    ///     .build();
    /// assert!(o.clock().now_ms() > 0);
    /// ```
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.0.clock = clock;
        self
    }

    /// Makes the client die at the seams `injector` picks (tests and the demo).
    ///
    /// ```
    /// let o = percolator::TxnOptions::builder()
    ///     .crash_injector(std::sync::Arc::new(|_| false))
    ///     .build();
    /// assert!(o.crash_injector().is_some());
    /// ```
    #[cfg(feature = "testing")]
    pub fn crash_injector(self, injector: CrashInjector) -> Self {
        self.with_crash_injector(Some(injector))
    }

    /// Sets or clears the crash injector (tests and the demo).
    ///
    /// ```
    /// let o = percolator::TxnOptions::builder().with_crash_injector(None).build();
    /// assert!(o.crash_injector().is_none());
    /// ```
    #[cfg(feature = "testing")]
    pub fn with_crash_injector(mut self, injector: Option<CrashInjector>) -> Self {
        self.0.crash_injector = injector;
        self
    }

    /// ```
    /// let o = percolator::TxnOptions::builder().build();
    /// assert_eq!(o.lock_ttl(), percolator::TxnOptions::default().lock_ttl());
    /// ```
    pub fn build(self) -> TxnOptions {
        self.0
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
            .field("blind_write_start_age", &self.blind_write_start_age)
            .field("retry", &self.retry)
            .field("crash_injector", &self.crash_injector.is_some())
            .field("oracle", &self.oracle)
            .finish()
    }
}

impl TxnOptions {
    /// True when the client must die at `seam` (failpoint or injector).
    pub(crate) fn crashes_at(&self, seam: Seam) -> bool {
        failpoint_fires(seam) || self.crash_injector.as_ref().is_some_and(|f| f(seam))
    }
}

#[cfg(feature = "failpoints")]
fn failpoint_fires(seam: Seam) -> bool {
    fail::eval(seam.name(), |_| true).unwrap_or(false)
}

#[cfg(not(feature = "failpoints"))]
fn failpoint_fires(_seam: Seam) -> bool {
    false
}
