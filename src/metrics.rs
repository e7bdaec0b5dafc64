//! What the library measures, recorded through the [`metrics`](https://docs.rs/metrics) facade:
//! a service installs the recorder of its choice (Prometheus, StatsD, OpenTelemetry) and these
//! appear in it; without one, recording costs a check of a global. Names and units follow
//! Prometheus conventions (`_total` counters, `_seconds` durations).
//!
//! | name | kind | labels | what |
//! |---|---|---|---|
//! | `percolator_transactions_total` | counter | `outcome` | commits by outcome: `committed`, `conflict`, `locked`, `rolled_back`, `undetermined`, `crashed`, `failed` |
//! | `percolator_transaction_retries_total` | counter | | attempts `Client::run` made again |
//! | `percolator_locks_resolved_total` | counter | `outcome` | other transactions' locks `rolled_forward` or `rolled_back` |
//! | `percolator_lock_waits_total` | counter | | backoffs behind a live transaction's lock |
//! | `percolator_commit_duration_seconds` | histogram | | a commit, from the check of its tables to the commit point |
//! | `percolator_commit_phase_duration_seconds` | histogram | `phase` | `prewrite` (with the checks of the tables), `commit_ts`, `commit_point`, `secondaries` |
//! | `percolator_oracle_wait_seconds` | histogram | | waiting for a timestamp |
//! | `percolator_hbase_calls_total` | counter | `method` | Thrift2 calls made |
//! | `percolator_hbase_call_errors_total` | counter | `method`, `class` | calls that failed, by retry class |
//! | `percolator_hbase_call_duration_seconds` | histogram | `method` | a call, replay included |
//! | `percolator_region_transition_wait_seconds` | histogram | | a call or a step of a long run waiting out a region in transition (moving, splitting, on a crashed server) |
//! | `percolator_background_tasks` | gauge | | secondary commits and heartbeats queued or running |
//! | `percolator_observer_runs_total` | counter | `outcome` | observer runs: `processed`, `already_acked`, `stale`, `failed` |
//! | `percolator_observer_lag_seconds` | histogram | | from a change's commit to the commit of the run that processed it |
//! | `percolator_observer_notifications_pending` | gauge | | notifications found and not yet run |
//! | `percolator_gc_safe_point_lag_seconds` | gauge | | how far the GC safe point is behind the oracle |
//! | `percolator_gc_cells_collected_total` | counter | | versions GC deleted |
//! | `percolator_oracle_requests_total` | counter | | timestamp requests a server answered |
//! | `percolator_oracle_timestamps_total` | counter | | timestamps a server handed out |
//! | `percolator_oracle_window_extensions_total` | counter | | window tops persisted |
//! | `percolator_oracle_connections` | gauge | | client connections open |
//! | `percolator_oracle_connections_rejected_total` | counter | | connections refused over the limit |
//!
//! [`longest_waits`] keeps the longest of the call and region waits since the process started,
//! with or without a recorder: the figure a run under region moves and crashes reports.
//!
//! [`describe`] registers each one's unit and help text with the installed recorder.
//!
//! ```
//! percolator::metrics::describe(); // harmless without a recorder
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use metrics::{counter, describe_counter, describe_gauge, describe_histogram, histogram};
use metrics::{Key, Level, Metadata, Unit};

use crate::{Error, RetryClass};

pub(crate) const TRANSACTIONS: &str = "percolator_transactions_total";
pub(crate) const RETRIES: &str = "percolator_transaction_retries_total";
pub(crate) const LOCKS_RESOLVED: &str = "percolator_locks_resolved_total";
pub(crate) const LOCK_WAITS: &str = "percolator_lock_waits_total";
pub(crate) const COMMIT: &str = "percolator_commit_duration_seconds";
pub(crate) const COMMIT_PHASE: &str = "percolator_commit_phase_duration_seconds";
pub(crate) const ORACLE_WAIT: &str = "percolator_oracle_wait_seconds";
pub(crate) const HBASE_CALLS: &str = "percolator_hbase_calls_total";
pub(crate) const HBASE_ERRORS: &str = "percolator_hbase_call_errors_total";
pub(crate) const HBASE_DURATION: &str = "percolator_hbase_call_duration_seconds";
pub(crate) const REGION_WAIT: &str = "percolator_region_transition_wait_seconds";
pub(crate) const BACKGROUND: &str = "percolator_background_tasks";
pub(crate) const OBSERVER_RUNS: &str = "percolator_observer_runs_total";
pub(crate) const OBSERVER_LAG: &str = "percolator_observer_lag_seconds";
pub(crate) const OBSERVER_PENDING: &str = "percolator_observer_notifications_pending";
pub(crate) const GC_LAG: &str = "percolator_gc_safe_point_lag_seconds";
pub(crate) const GC_COLLECTED: &str = "percolator_gc_cells_collected_total";
pub(crate) const ORACLE_REQUESTS: &str = "percolator_oracle_requests_total";
pub(crate) const ORACLE_TIMESTAMPS: &str = "percolator_oracle_timestamps_total";
pub(crate) const ORACLE_EXTENSIONS: &str = "percolator_oracle_window_extensions_total";
pub(crate) const ORACLE_CONNECTIONS: &str = "percolator_oracle_connections";
pub(crate) const ORACLE_REJECTED: &str = "percolator_oracle_connections_rejected_total";

/// Registers the unit and help text of every metric above with the installed recorder (call
/// it after installing one; exporters print them as `# HELP` and `# TYPE`).
pub fn describe() {
    describe_counter!(TRANSACTIONS, Unit::Count, "Transaction commits by outcome.");
    describe_counter!(
        RETRIES,
        Unit::Count,
        "Transaction attempts made again by Client::run."
    );
    describe_counter!(
        LOCKS_RESOLVED,
        Unit::Count,
        "Other transactions' locks resolved, by outcome."
    );
    describe_counter!(
        LOCK_WAITS,
        Unit::Count,
        "Backoffs behind a live transaction's lock."
    );
    describe_histogram!(
        COMMIT,
        Unit::Seconds,
        "Commit latency: table checks and prewrites to the commit point."
    );
    describe_histogram!(COMMIT_PHASE, Unit::Seconds, "Commit latency by phase.");
    describe_histogram!(
        ORACLE_WAIT,
        Unit::Seconds,
        "Time spent waiting for a timestamp."
    );
    describe_counter!(
        HBASE_CALLS,
        Unit::Count,
        "Thrift2 calls to HBase by method."
    );
    describe_counter!(
        HBASE_ERRORS,
        Unit::Count,
        "Failed Thrift2 calls by method and retry class."
    );
    describe_histogram!(
        HBASE_DURATION,
        Unit::Seconds,
        "Thrift2 call latency by method."
    );
    describe_histogram!(
        REGION_WAIT,
        Unit::Seconds,
        "Time a call or a step waited out a region in transition."
    );
    describe_gauge!(
        BACKGROUND,
        Unit::Count,
        "Background tasks queued or running."
    );
    describe_counter!(OBSERVER_RUNS, Unit::Count, "Observer runs by outcome.");
    describe_histogram!(
        OBSERVER_LAG,
        Unit::Seconds,
        "From a change's commit to its run's."
    );
    describe_gauge!(
        OBSERVER_PENDING,
        Unit::Count,
        "Notifications found and not yet run."
    );
    describe_gauge!(
        GC_LAG,
        Unit::Seconds,
        "How far the GC safe point is behind the oracle."
    );
    describe_counter!(GC_COLLECTED, Unit::Count, "Versions deleted by GC.");
    describe_counter!(ORACLE_REQUESTS, Unit::Count, "Timestamp requests answered.");
    describe_counter!(ORACLE_TIMESTAMPS, Unit::Count, "Timestamps handed out.");
    describe_counter!(ORACLE_EXTENSIONS, Unit::Count, "Window tops persisted.");
    describe_gauge!(ORACLE_CONNECTIONS, Unit::Count, "Client connections open.");
    describe_counter!(
        ORACLE_REJECTED,
        Unit::Count,
        "Connections refused over the limit."
    );
}

/// The key of metric `$name`, with or without one label, built at compile time: recording
/// under it allocates and hashes nothing per call, where the `metrics` macros build (and hash)
/// a key each time they run, on the heap when it has labels.
macro_rules! key {
    ($name:expr) => {{
        static KEY: ::metrics::Key = ::metrics::Key::from_static_name($name);
        &KEY
    }};
    ($name:expr, $label:literal => $value:literal) => {{
        static LABELS: [::metrics::Label; 1] =
            [::metrics::Label::from_static_parts($label, $value)];
        static KEY: ::metrics::Key = ::metrics::Key::from_static_parts($name, &LABELS);
        &KEY
    }};
}
pub(crate) use key;

/// What the `metrics` macros would attach at a call site in this module.
static METADATA: Metadata<'static> =
    Metadata::new(module_path!(), Level::INFO, Some(module_path!()));

/// The transactions counter's key for a commit that ended with `result` (its `outcome`).
pub(crate) fn transaction_outcome<T>(result: &Result<T, Error>) -> &'static Key {
    match result {
        Ok(_) => key!(TRANSACTIONS, "outcome" => "committed"),
        Err(Error::WriteConflict { .. }) => key!(TRANSACTIONS, "outcome" => "conflict"),
        Err(Error::KeyLocked { .. }) => key!(TRANSACTIONS, "outcome" => "locked"),
        Err(Error::RolledBack { .. }) => key!(TRANSACTIONS, "outcome" => "rolled_back"),
        #[cfg(feature = "testing")]
        Err(Error::ClientCrashed { .. }) => key!(TRANSACTIONS, "outcome" => "crashed"),
        Err(e) if e.retry_class() == RetryClass::Undetermined => {
            key!(TRANSACTIONS, "outcome" => "undetermined")
        }
        Err(_) => key!(TRANSACTIONS, "outcome" => "failed"),
    }
}

pub(crate) fn count(key: &'static Key) {
    count_n(key, 1);
}

pub(crate) fn count_n(key: &'static Key, n: u64) {
    metrics::with_recorder(|r| r.register_counter(key, &METADATA).increment(n));
}

pub(crate) fn seconds(key: &'static Key, took: Duration) {
    metrics::with_recorder(|r| {
        r.register_histogram(key, &METADATA)
            .record(took.as_secs_f64())
    });
}

pub(crate) fn gauge_add(key: &'static Key, delta: f64) {
    metrics::with_recorder(|r| r.register_gauge(key, &METADATA).increment(delta));
}

pub(crate) fn gauge_set(key: &'static Key, value: f64) {
    metrics::with_recorder(|r| r.register_gauge(key, &METADATA).set(value));
}

/// The longest waits this process has seen (see [`longest_waits`]), in microseconds.
static LONGEST_CALL_US: AtomicU64 = AtomicU64::new(0);
static LONGEST_REGION_WAIT_US: AtomicU64 = AtomicU64::new(0);

/// The longest waits of this process so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LongestWaits {
    /// One Thrift2 call, from its send to its answer (the gateway's own retries inside it).
    pub call: Duration,
    /// One call or step waiting out a region in transition, over all its tries.
    pub region_in_transition: Duration,
}

impl std::fmt::Display for LongestWaits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "longest gateway call {:.2} s, longest wait for a region in transition {:.2} s",
            self.call.as_secs_f64(),
            self.region_in_transition.as_secs_f64()
        )
    }
}

/// The longest one Thrift2 call took, and the longest a call or a step waited out a region in
/// transition, since the process started.
///
/// ```
/// eprintln!("{}", percolator::metrics::longest_waits());
/// ```
pub fn longest_waits() -> LongestWaits {
    let read = |v: &AtomicU64| Duration::from_micros(v.load(Ordering::Relaxed));
    LongestWaits {
        call: read(&LONGEST_CALL_US),
        region_in_transition: read(&LONGEST_REGION_WAIT_US),
    }
}

fn keep_longest(longest: &AtomicU64, took: Duration) {
    longest.fetch_max(took.as_micros() as u64, Ordering::Relaxed);
}

/// A call or a step that waited `took` for a region in transition.
pub(crate) fn region_wait(took: Duration) {
    keep_longest(&LONGEST_REGION_WAIT_US, took);
    seconds(key!(REGION_WAIT), took);
}

/// One HBase call of `method` that took `took` and ended `ok` or with `error`.
pub(crate) fn hbase_call(method: &'static str, took: Duration, error: Option<&Error>) {
    keep_longest(&LONGEST_CALL_US, took);
    counter!(HBASE_CALLS, "method" => method).increment(1);
    histogram!(HBASE_DURATION, "method" => method).record(took.as_secs_f64());
    if let Some(e) = error {
        let class = match e.retry_class() {
            RetryClass::Retry => "retry",
            RetryClass::Fatal => "fatal",
            RetryClass::Undetermined => "undetermined",
        };
        counter!(HBASE_ERRORS, "method" => method, "class" => class).increment(1);
    }
}
