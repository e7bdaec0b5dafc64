//! The crate's one error type. Every variant keeps the structured facts a caller needs to decide
//! what to do (`retry_class`), so errors are never flattened into strings on the way up.

use std::time::Duration;

use crate::key::{CellKey, InvalidKey};

/// What a caller should do about an error, so retry loops need not match on variants.
///
/// ```
/// use percolator::{Error, RetryClass};
/// let conflict = Error::WriteConflict {
///     table: "t".into(),
///     row: b"r".to_vec(),
///     column: b"f:q".to_vec(),
///     start_ts: 10,
///     conflict_ts: 12,
/// };
/// assert_eq!(conflict.retry_class(), RetryClass::Retry);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetryClass {
    /// Safe to try again, usually in a new transaction (conflicts, busy or restarting servers).
    Retry,
    /// Trying again cannot help (bad input, missing table, corrupted data, fenced oracle).
    Fatal,
    /// The operation may or may not have taken effect; the caller must find out before acting.
    Undetermined,
}

/// Which side of the system a transport problem came from, for messages and metrics.
///
/// ```
/// use percolator::{Error, Peer};
/// let err = Error::Protocol { peer: Peer::Oracle, message: "bad hello".into() };
/// assert_eq!(err.to_string(), "protocol error talking to the timestamp oracle: bad hello");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peer {
    /// The HBase Thrift2 gateway (or the emulator).
    HBase,
    /// The timestamp oracle.
    Oracle,
}

impl std::fmt::Display for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Peer::HBase => "HBase gateway",
            Peer::Oracle => "timestamp oracle",
        })
    }
}

/// Why `percolator migrate` refused a table or stopped (see [`Error::Migration`]).
///
/// ```
/// use percolator::{Error, MigrationIssue};
/// let e = Error::Migration { table: "t".into(), kind: MigrationIssue::NothingToDo, reason: "already migrated".into() };
/// assert_eq!(e.to_string(), "table t: already migrated");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MigrationIssue {
    /// The table is already migrated (or was created transactional): nothing to do.
    NothingToDo,
    /// A user family has the name of one of the project's families.
    FamilyClash,
    /// Something in the table or its settings prevents adopting its data.
    Blocked,
    /// The command needs a migrated table and this one is not.
    NotMigrated,
    /// Locks are present (disable refuses them unless forced).
    LocksPresent,
    /// The run stopped at an injected crash point (tests); running again resumes it.
    Interrupted,
}

/// Everything that can go wrong, with the facts needed to act on it; see
/// [`retry_class`](Error::retry_class).
///
/// ```
/// use percolator::{Error, RetryClass};
/// let lost = Error::OutcomeUnknown {
///     method: "checkAndMutate",
///     table: "accounts".into(),
///     row: b"alice".to_vec(),
///     source: Box::new(Error::Shutdown),
/// };
/// assert_eq!(lost.retry_class(), RetryClass::Undetermined);
/// assert!(matches!(lost, Error::OutcomeUnknown { ref table, .. } if table == "accounts"));
/// ```
#[derive(Debug, thiserror::Error)]
pub enum Error {
    // ---- HBase access layer ----
    /// The table does not exist (or is not visible to the gateway).
    #[error("table {table} not found: {message}")]
    TableNotFound {
        /// The table asked for.
        table: String,
        /// Details, for the log.
        message: String,
    },

    /// The table has no such column family.
    #[error("column family {family} not found in table {table}: {message}")]
    FamilyNotFound {
        /// The table asked for.
        table: String,
        /// The family it lacks.
        family: String,
        /// Details, for the log.
        message: String,
    },

    /// The caller passed something unusable (empty row, bad count, unparsable spec).
    #[error("illegal argument: {message}")]
    IllegalArgument {
        /// Details, for the log.
        message: String,
    },

    /// The gateway answered with `TIOError`.
    #[error("HBase I/O error (can retry: {can_retry}): {message}")]
    ServerIo {
        /// Details, for the log.
        message: String,
        /// HBase's `canRetry`: false for a `DoNotRetryIOException`.
        can_retry: bool,
    },

    /// The gateway rejected the call with a Thrift application exception (bad filter, empty row,
    /// missing required field, unknown method).
    #[error("HBase gateway rejected {method}: {message}")]
    Rejected {
        /// The Thrift method called.
        method: String,
        /// Details, for the log.
        message: String,
    },

    /// The connection failed (refused, reset, closed): the server may be down or restarting.
    #[error("transport error talking to the {peer} at {addr}: {source}")]
    Transport {
        /// Which server.
        peer: Peer,
        /// The address talked to.
        addr: String,
        /// The underlying failure.
        #[source]
        source: std::io::Error,
    },

    /// The peer answered with something this client cannot understand.
    #[error("protocol error talking to the {peer}: {message}")]
    Protocol {
        /// Which server.
        peer: Peer,
        /// Details, for the log.
        message: String,
    },

    /// A non-idempotent call (checkAndMutate, increment, append) lost its reply: it may or may
    /// not have been applied.
    #[error("outcome of {method} on {table} row {row:?} is unknown: {source}")]
    OutcomeUnknown {
        /// The call whose reply was lost.
        method: &'static str,
        /// The table concerned.
        table: String,
        /// The row concerned.
        row: Vec<u8>,
        /// The underlying failure.
        #[source]
        source: Box<Error>,
    },

    /// A call took longer than its configured timeout.
    #[error("timed out after {after:?} waiting for {what}")]
    Timeout {
        /// What was being waited for.
        what: String,
        /// The timeout that ran out.
        after: Duration,
    },

    // ---- timestamp oracle ----
    /// No oracle on the list answered in time: retry, or check the oracles.
    #[error("timestamp oracle unavailable (tried {addrs:?}): {reason}")]
    OracleUnavailable {
        /// The oracles tried, in order.
        addrs: Vec<String>,
        /// Why, for the log.
        reason: String,
    },

    /// Another oracle process claimed the window: this one must stop serving.
    #[error("timestamp oracle fenced: window claimed by another server ({detail})")]
    OracleFenced {
        /// Who holds the store now, as far as known.
        detail: String,
    },

    /// The oracle could not read or write its window store.
    #[error("timestamp oracle store error: {message}")]
    OracleStore {
        /// Details, for the log.
        message: String,
    },

    // ---- transactions ----
    /// Another transaction wrote the cell after our snapshot, or holds a newer record.
    #[error("write conflict on {table} row {row:?} column {column:?}: start_ts {start_ts}, conflicting ts {conflict_ts}")]
    WriteConflict {
        /// The table concerned.
        table: String,
        /// The row concerned.
        row: Vec<u8>,
        /// The column, `family:qualifier`.
        column: Vec<u8>,
        /// The transaction's start timestamp.
        start_ts: u64,
        /// The other transaction's timestamp.
        conflict_ts: u64,
    },

    /// `Transaction::insert` of a cell that has a value at the transaction's snapshot.
    #[error("{table} row {row:?} column {column:?} already has a value at snapshot {start_ts}")]
    KeyExists {
        /// The table concerned.
        table: String,
        /// The row concerned.
        row: Vec<u8>,
        /// The column, `family:qualifier`.
        column: Vec<u8>,
        /// The transaction's start timestamp.
        start_ts: u64,
    },

    /// A lock is held by a live transaction and did not clear within the wait budget.
    #[error("{table} row {row:?} column {column:?} is locked by live transaction {lock_ts}")]
    KeyLocked {
        /// The table concerned.
        table: String,
        /// The row concerned.
        row: Vec<u8>,
        /// The column, `family:qualifier`.
        column: Vec<u8>,
        /// The lock holder's start timestamp.
        lock_ts: u64,
        /// The holder's primary cell (boxed to keep `Error` small); `None` when the holder was
        /// gone by the time we looked.
        primary: Option<Box<CellKey>>,
    },

    /// Our transaction was rolled back by another client (it found us dead or stale).
    #[error(
        "transaction {start_ts} was rolled back by another client (found at {table} row {row:?})"
    )]
    RolledBack {
        /// The transaction's start timestamp.
        start_ts: u64,
        /// The table concerned.
        table: String,
        /// The row concerned.
        row: Vec<u8>,
    },

    /// The commit point's reply was lost and a re-read could not settle the outcome.
    #[error("commit of transaction {start_ts} (commit_ts {commit_ts}) is undetermined: {reason}")]
    CommitUndetermined {
        /// The transaction's start timestamp.
        start_ts: u64,
        /// The commit timestamp the transaction was committing at.
        commit_ts: u64,
        /// What [`Client::transaction_status`](crate::Client::transaction_status) needs to
        /// find out later (boxed to keep `Error` small).
        primary: Box<CellKey>,
        /// Why, for the log.
        reason: String,
    },

    /// A lock or write record that cannot be decoded. Nothing was overwritten.
    #[error("corrupted {what} at {table} row {row:?} column {column:?}: {reason}")]
    Corrupted {
        /// What was being decoded (a lock or a write record).
        what: &'static str,
        /// The table concerned.
        table: String,
        /// The row concerned.
        row: Vec<u8>,
        /// The column, `family:qualifier`.
        column: Vec<u8>,
        /// Why, for the log.
        reason: String,
    },

    /// The table lacks the lock and write column families transactions need.
    #[error("table {table} is not set up for transactions: {reason}")]
    NotTransactional {
        /// The table concerned.
        table: String,
        /// Why, for the log.
        reason: String,
    },

    /// A value is over the configured size limit.
    #[error("value for {table} row {row:?} is {size} bytes, over the limit of {limit}")]
    ValueTooLarge {
        /// The table concerned.
        table: String,
        /// The row concerned.
        row: Vec<u8>,
        /// The value's size in bytes.
        size: usize,
        /// The configured limit in bytes.
        limit: usize,
    },

    /// The client died at an injected crash point (tests and the demo; feature `testing`): the
    /// transaction's outcome is whatever the other clients' resolution makes of its locks.
    #[cfg(feature = "testing")]
    #[error("client crashed at {seam} during transaction {start_ts}")]
    ClientCrashed {
        /// The transaction's start timestamp.
        start_ts: u64,
        /// The crash point.
        seam: &'static str,
    },

    /// The transaction's snapshot is below the GC safe point: versions it would read may
    /// have been collected, so it must not read (or commit) at all. A new transaction gets a
    /// new start timestamp above the safe point, hence `Retry` (docs/gc.md).
    #[error("snapshot {start_ts} is older than the GC safe point {safe_point}")]
    SnapshotTooOld {
        /// The transaction's start timestamp.
        start_ts: u64,
        /// The safe point it is below.
        safe_point: u64,
    },

    /// The client (or the oracle client under it) was shut down.
    #[error("client is shut down")]
    Shutdown,

    /// `percolator migrate` refused a table, or stopped: `kind` says why. Nothing was changed
    /// unless `kind` is [`MigrationIssue::Interrupted`] (the run can be resumed).
    #[error("table {table}: {reason}")]
    Migration {
        /// The table concerned.
        table: String,
        /// What kind of problem, for callers that branch on it.
        kind: MigrationIssue,
        /// What to do about it, for the operator.
        reason: String,
    },

    /// Local I/O failed (binding, files, threads); `context` says what was being done.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The underlying failure.
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// A stored cell (`what`: a lock, a write record) that does not decode, named by its
    /// stored address.
    pub(crate) fn corrupted_cell(
        what: &'static str,
        table: &str,
        row: &[u8],
        column: &[u8],
        reason: String,
    ) -> Error {
        Error::Corrupted {
            what,
            table: table.to_string(),
            row: row.to_vec(),
            column: column.to_vec(),
            reason,
        }
    }

    /// How a caller should react; `Client::run` retries only `Retry`.
    ///
    /// ```
    /// use percolator::{Error, RetryClass};
    /// let busy = Error::ServerIo { message: "region moving".into(), can_retry: true };
    /// assert_eq!(busy.retry_class(), RetryClass::Retry);
    /// assert_eq!(Error::Shutdown.retry_class(), RetryClass::Fatal);
    /// ```
    pub fn retry_class(&self) -> RetryClass {
        match self {
            Error::ServerIo { can_retry, .. } => {
                if *can_retry {
                    RetryClass::Retry
                } else {
                    RetryClass::Fatal
                }
            }
            Error::Transport { .. }
            | Error::Timeout { .. }
            | Error::OracleUnavailable { .. }
            | Error::WriteConflict { .. }
            | Error::KeyLocked { .. }
            | Error::RolledBack { .. }
            | Error::SnapshotTooOld { .. } => RetryClass::Retry,
            Error::OutcomeUnknown { .. } | Error::CommitUndetermined { .. } => {
                RetryClass::Undetermined
            }
            #[cfg(feature = "testing")]
            Error::ClientCrashed { .. } => RetryClass::Undetermined,
            // A new snapshot would see the same value: put-if-absent has its answer.
            Error::KeyExists { .. }
            | Error::TableNotFound { .. }
            | Error::FamilyNotFound { .. }
            | Error::IllegalArgument { .. }
            | Error::Rejected { .. }
            | Error::Protocol { .. }
            | Error::OracleFenced { .. }
            | Error::OracleStore { .. }
            | Error::Corrupted { .. }
            | Error::NotTransactional { .. }
            | Error::ValueTooLarge { .. }
            | Error::Shutdown
            | Error::Migration { .. }
            | Error::Io { .. } => RetryClass::Fatal,
        }
    }

    /// An I/O failure with what was being done, e.g. `"binding 127.0.0.1:7077"`.
    ///
    /// ```
    /// use percolator::Error;
    /// let err = Error::io("reading the config", std::io::ErrorKind::NotFound.into());
    /// assert!(err.to_string().starts_with("reading the config: "));
    /// ```
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }
}

impl From<InvalidKey> for Error {
    fn from(e: InvalidKey) -> Self {
        Error::IllegalArgument { message: e.0 }
    }
}

/// The crate's result type.
///
/// ```
/// fn parse(s: &str) -> percolator::Result<u64> {
///     s.parse().map_err(|_| percolator::Error::IllegalArgument { message: format!("{s:?}") })
/// }
/// assert!(parse("x").is_err());
/// assert_eq!(parse("7").ok(), Some(7));
/// ```
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What a client killed at an injected crash returns. Crashes are injected only with the
/// `testing` feature; without it this is never reached, and a dead client is one shut down.
pub(crate) fn client_crashed(start_ts: u64, seam: &'static str) -> Error {
    #[cfg(feature = "testing")]
    return Error::ClientCrashed { start_ts, seam };
    #[cfg(not(feature = "testing"))]
    {
        let _ = (start_ts, seam);
        Error::Shutdown
    }
}
