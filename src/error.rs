//! The crate's one error type. Every variant keeps the structured facts a caller needs to decide
//! what to do (`retry_class`), so errors are never flattened into strings on the way up.

use std::time::Duration;

use crate::key::{CellKey, InvalidKey};

/// What a caller should do about an error.
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peer {
    HBase,
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

#[derive(Debug, thiserror::Error)]
pub enum Error {
    // ---- HBase access layer ----
    #[error("table {table} not found: {message}")]
    TableNotFound { table: String, message: String },

    #[error("column family {family} not found in table {table}: {message}")]
    FamilyNotFound {
        table: String,
        family: String,
        message: String,
    },

    #[error("illegal argument: {message}")]
    IllegalArgument { message: String },

    /// The gateway answered with `TIOError`.
    #[error("HBase I/O error (can retry: {can_retry}): {message}")]
    ServerIo { message: String, can_retry: bool },

    /// The gateway rejected the call with a Thrift application exception (bad filter, empty row,
    /// missing required field, unknown method).
    #[error("HBase gateway rejected {method}: {message}")]
    Rejected { method: String, message: String },

    #[error("transport error talking to the {peer} at {addr}: {source}")]
    Transport {
        peer: Peer,
        addr: String,
        #[source]
        source: std::io::Error,
    },

    #[error("protocol error talking to the {peer}: {message}")]
    Protocol { peer: Peer, message: String },

    /// A non-idempotent call (checkAndMutate, increment, append) lost its reply: it may or may
    /// not have been applied.
    #[error("outcome of {method} on {table} row {row:?} is unknown: {source}")]
    OutcomeUnknown {
        method: &'static str,
        table: String,
        row: Vec<u8>,
        #[source]
        source: Box<Error>,
    },

    #[error("timed out after {after:?} waiting for {what}")]
    Timeout { what: String, after: Duration },

    // ---- timestamp oracle ----
    #[error("timestamp oracle unavailable (tried {addrs:?}): {reason}")]
    OracleUnavailable { addrs: Vec<String>, reason: String },

    /// Another oracle process claimed the window: this one must stop serving.
    #[error("timestamp oracle fenced: window claimed by another server ({detail})")]
    OracleFenced { detail: String },

    #[error("timestamp oracle store error: {message}")]
    OracleStore { message: String },

    // ---- transactions ----
    /// Another transaction wrote the cell after our snapshot, or holds a newer record.
    #[error("write conflict on {table} row {row:?} column {column:?}: start_ts {start_ts}, conflicting ts {conflict_ts}")]
    WriteConflict {
        table: String,
        row: Vec<u8>,
        column: Vec<u8>,
        start_ts: u64,
        conflict_ts: u64,
    },

    /// `Transaction::insert` of a cell that has a value at the transaction's snapshot.
    #[error("{table} row {row:?} column {column:?} already has a value at snapshot {start_ts}")]
    KeyExists {
        table: String,
        row: Vec<u8>,
        column: Vec<u8>,
        start_ts: u64,
    },

    /// A lock is held by a live transaction and did not clear within the wait budget.
    #[error("{table} row {row:?} column {column:?} is locked by live transaction {lock_ts}")]
    KeyLocked {
        table: String,
        row: Vec<u8>,
        column: Vec<u8>,
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
        start_ts: u64,
        table: String,
        row: Vec<u8>,
    },

    /// The commit point's reply was lost and a re-read could not settle the outcome.
    #[error("commit of transaction {start_ts} (commit_ts {commit_ts}) is undetermined: {reason}")]
    CommitUndetermined {
        start_ts: u64,
        commit_ts: u64,
        /// What [`Client::transaction_status`](crate::Client::transaction_status) needs to
        /// find out later (boxed to keep `Error` small).
        primary: Box<CellKey>,
        reason: String,
    },

    /// A lock or write record that cannot be decoded. Nothing was overwritten.
    #[error("corrupted {what} at {table} row {row:?} column {column:?}: {reason}")]
    Corrupted {
        what: &'static str,
        table: String,
        row: Vec<u8>,
        column: Vec<u8>,
        reason: String,
    },

    #[error("table {table} is not set up for transactions: {reason}")]
    NotTransactional { table: String, reason: String },

    #[error("transaction {start_ts} is already {state}")]
    TransactionClosed { start_ts: u64, state: &'static str },

    #[error("value for {table} row {row:?} is {size} bytes, over the limit of {limit}")]
    ValueTooLarge {
        table: String,
        row: Vec<u8>,
        size: usize,
        limit: usize,
    },

    /// The client died at an injected crash point (tests and the demo): the transaction's
    /// outcome is whatever the other clients' resolution makes of its locks.
    #[error("client crashed at {seam} during transaction {start_ts}")]
    ClientCrashed { start_ts: u64, seam: &'static str },

    #[error("client is shut down")]
    Shutdown,

    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// How a caller should react; `Client::run` retries only `Retry`.
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
            | Error::RolledBack { .. } => RetryClass::Retry,
            Error::OutcomeUnknown { .. }
            | Error::CommitUndetermined { .. }
            | Error::ClientCrashed { .. } => RetryClass::Undetermined,
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
            | Error::TransactionClosed { .. }
            | Error::ValueTooLarge { .. }
            | Error::Shutdown
            | Error::Io { .. } => RetryClass::Fatal,
        }
    }

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

pub type Result<T, E = Error> = std::result::Result<T, E>;
