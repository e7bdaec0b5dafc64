//! The crate's one error type. Every variant keeps the structured facts a caller needs to decide
//! what to do (`retry_class`), so errors are never flattened into strings on the way up.

use std::time::Duration;

use crate::hbase::errors::{is_transient_message, one_line, server_io_line};
use crate::key::{Binary, CellKey, InvalidKey};

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
/// Display is one line. Row keys, columns and table names in it are printed as HBase prints
/// them (see [`Binary`]): printable ASCII as is, other bytes as `\xNN`; the fields stay bytes.
/// A gateway's message shows only the Java exception's class and first line; the whole text,
/// stack trace included, is in the variant's `message` field and returned by
/// [`detail`](Error::detail).
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
#[derive(Clone, Debug, thiserror::Error)]
pub enum Error {
    // ---- HBase access layer ----
    /// The table does not exist (or is not visible to the gateway).
    #[error("table {} not found{}", Binary(.table.as_bytes()), what_else(.table, .message))]
    TableNotFound {
        /// The table asked for.
        table: String,
        /// The gateway's whole message (Display shows its first line; see [`Error::detail`]).
        message: String,
    },

    /// The table has no such column family.
    #[error(
        "column family {} not found in table {}: {}",
        Binary(.family.as_bytes()),
        Binary(.table.as_bytes()),
        one_line(.message)
    )]
    FamilyNotFound {
        /// The table asked for.
        table: String,
        /// The family it lacks.
        family: String,
        /// The gateway's whole message (Display shows its first line; see [`Error::detail`]).
        message: String,
    },

    /// The caller passed something unusable (empty row, bad count, unparsable spec).
    #[error("illegal argument: {message}")]
    IllegalArgument {
        /// Details, for the log.
        message: String,
    },

    /// The gateway answered with `TIOError`: an `IOException` in the gateway or behind it.
    ///
    /// Display shows the Java exception's class and the first line of its message, and
    /// `(retryable)` when [`retry_class`](Error::retry_class) says `Retry`; the whole message,
    /// usually with a Java stack trace, stays in `message` (see [`Error::detail`]).
    ///
    /// ```
    /// use percolator::{Error, RetryClass};
    /// let busy = Error::ServerIo {
    ///     message: "org.apache.hadoop.hbase.RegionTooBusyException: Over memstore limit=512.0 M\n\tat org.apache.hadoop.hbase.regionserver.HRegion.checkResources(HRegion.java:5016)".into(),
    ///     can_retry: false,
    ///     exception: Some("org.apache.hadoop.hbase.RegionTooBusyException".into()),
    /// };
    /// assert_eq!(
    ///     busy.to_string(),
    ///     "HBase I/O error (retryable): HBase busy: org.apache.hadoop.hbase.RegionTooBusyException: Over memstore limit=512.0 M"
    /// );
    /// assert_eq!(busy.retry_class(), RetryClass::Retry, "HBase retries a busy region");
    /// assert!(busy.detail().unwrap().contains("HRegion.checkResources"));
    /// ```
    #[error("HBase I/O error{}: {}", retry_note(*.can_retry, .message), server_io_line(.message))]
    ServerIo {
        /// The gateway's whole message: the Java exception's class, its message and often a
        /// multi-line stack trace.
        message: String,
        /// HBase's `canRetry` as the gateway sent it: false for a `DoNotRetryIOException`.
        can_retry: bool,
        /// The Java exception class the message starts with (e.g.
        /// `org.apache.hadoop.hbase.NotServingRegionException`), if it names one; exceptions
        /// HBase's own client retries (a region moving, opening or too busy, a server starting,
        /// a full call queue, ...) are `Retry` whatever `can_retry` says.
        exception: Option<String>,
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
        source: std::sync::Arc<std::io::Error>,
    },

    /// The peer answered with something this client cannot understand.
    #[error("protocol error talking to the {peer}: {message}")]
    Protocol {
        /// Which server.
        peer: Peer,
        /// Details, for the log.
        message: String,
    },

    /// The server at the gateway's address answered with bytes that cannot begin a Thrift
    /// reply in the configured transport and protocol: it is not a Thrift2 gateway (an HTTP
    /// server, a gateway in HTTP mode, another service), or it frames or encodes differently
    /// (framed against buffered, compact against binary). Nothing was applied; retrying
    /// cannot help.
    ///
    /// ```
    /// use percolator::{Error, RetryClass};
    /// let err = Error::NotThrift {
    ///     addr: "gw:9090".into(),
    ///     head: b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n".to_vec(),
    ///     http: true,
    /// };
    /// assert!(err.to_string().starts_with(
    ///     "the HBase gateway at gw:9090 answered in HTTP (HTTP/1.1 400 Bad Request): it may be \
    ///      running in HTTP mode (hbase.regionserver.thrift.http=true)"
    /// ));
    /// assert_eq!(err.retry_class(), RetryClass::Fatal);
    /// ```
    #[error("{}", not_thrift(.addr, .head, *.http))]
    NotThrift {
        /// The address talked to.
        addr: String,
        /// The first bytes of the answer (at most 64).
        head: Vec<u8>,
        /// The answer starts like an HTTP response (`HTTP/`).
        http: bool,
    },

    /// An HTTP-mode gateway answered with another status than 200. 401 and 403 mean it
    /// refused the client (SPNEGO failed): nothing was applied. An end user in `doAs` that the
    /// client may not impersonate comes back as HBase's servlet sends it, a 500 whose detail
    /// names the `AuthorizationException`; nothing was applied either. 502, 503 and 504 come from a proxy in front of a gateway that is
    /// down or busy, and are worth retrying.
    ///
    /// ```
    /// use percolator::{Error, RetryClass};
    /// let refused = Error::HttpStatus {
    ///     addr: "https://gw:9090/".into(),
    ///     status: 403,
    ///     reason: "Forbidden".into(),
    ///     detail: "User: svc is not allowed to impersonate alice".into(),
    /// };
    /// assert_eq!(
    ///     refused.to_string(),
    ///     "the HBase gateway at https://gw:9090/ answered HTTP 403 Forbidden: User: svc is not allowed to impersonate alice"
    /// );
    /// assert_eq!(refused.retry_class(), RetryClass::Fatal);
    /// ```
    #[error(
        "the HBase gateway at {addr} answered HTTP {status} {reason}{}{detail}",
        if .detail.is_empty() { "" } else { ": " }
    )]
    HttpStatus {
        /// The gateway's address.
        addr: String,
        /// The HTTP status.
        status: u16,
        /// Its reason phrase.
        reason: String,
        /// The text of the error page, shortened.
        detail: String,
    },

    /// TLS with an `https://` gateway failed: see [`TlsFailure`](crate::hbase::TlsFailure)
    /// for what to do about each cause.
    #[error("TLS with the HBase gateway at {addr} failed: {failure}")]
    Tls {
        /// The gateway's address.
        addr: String,
        /// Why.
        failure: crate::hbase::TlsFailure,
    },

    /// Kerberos with a gateway failed: no ticket, an expired one, a keytab without the
    /// principal, the gateway refusing the SASL exchange or a qop it does not offer. See
    /// [`KerberosError`](crate::hbase::KerberosError) for what to do about each.
    #[cfg(feature = "kerberos")]
    #[error("Kerberos with the HBase gateway at {addr} failed: {source}")]
    Kerberos {
        /// The gateway's address.
        addr: String,
        /// Why.
        #[source]
        source: std::sync::Arc<crate::hbase::KerberosError>,
    },

    /// A non-idempotent call (checkAndMutate, increment, append) lost its reply: it may or may
    /// not have been applied.
    #[error(
        "outcome of {method} on {} row {} is unknown: {source}",
        Binary(.table.as_bytes()),
        Binary(.row)
    )]
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
    #[error("timestamp oracle unavailable (tried {}): {reason}", .addrs.join(", "))]
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

    /// The oracle refused the client, or the client the oracle: a missing or wrong token, a
    /// missing or unallowed client certificate, plain TCP against TLS, an untrusted server
    /// certificate. Returned at once, without waiting out the request timeout or going round
    /// the fail-over list: retrying cannot help.
    ///
    /// ```
    /// use percolator::oracle::AuthFailure;
    /// use percolator::{Error, RetryClass};
    /// let err = Error::OracleAuth { addr: "tso:7077".into(), failure: AuthFailure::TokenRejected };
    /// assert_eq!(err.to_string(), "authentication with the timestamp oracle at tso:7077 failed: the oracle rejected the token");
    /// assert_eq!(err.retry_class(), RetryClass::Fatal);
    /// ```
    #[error("authentication with the timestamp oracle at {addr} failed: {failure}")]
    OracleAuth {
        /// The oracle's address.
        addr: String,
        /// Why.
        failure: crate::oracle::AuthFailure,
    },

    /// The oracle's TLS or token settings cannot be used: a PEM or token file that cannot be
    /// read or holds nothing usable (`file` names it), or settings that contradict each other.
    #[error("oracle security settings: {detail}")]
    OracleSettings {
        /// The file at fault, if one is.
        file: Option<std::path::PathBuf>,
        /// What is wrong, naming the file.
        detail: String,
    },

    // ---- transactions ----
    /// Another transaction wrote the cell after our snapshot, or holds a newer record.
    #[error(
        "write conflict on {} row {} column {}: start_ts {start_ts}, conflicting ts {conflict_ts}",
        Binary(.table.as_bytes()),
        Binary(.row),
        Binary(.column)
    )]
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
    #[error(
        "{} row {} column {} already has a value at snapshot {start_ts}",
        Binary(.table.as_bytes()),
        Binary(.row),
        Binary(.column)
    )]
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
    #[error(
        "{} row {} column {} is locked by live transaction {lock_ts}",
        Binary(.table.as_bytes()),
        Binary(.row),
        Binary(.column)
    )]
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
        "transaction {start_ts} was rolled back by another client (found at {} row {})",
        Binary(.table.as_bytes()),
        Binary(.row)
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
    #[error(
        "corrupted {what} at {} row {} column {}: {reason}",
        Binary(.table.as_bytes()),
        Binary(.row),
        Binary(.column)
    )]
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
    #[error("table {} is not set up for transactions: {reason}", Binary(.table.as_bytes()))]
    NotTransactional {
        /// The table concerned.
        table: String,
        /// Why, for the log.
        reason: String,
    },

    /// A value is over the configured size limit.
    #[error(
        "value for {} row {} column {} is {size} bytes, over the limit of {limit}",
        Binary(.table.as_bytes()),
        Binary(.row),
        Binary(.column)
    )]
    ValueTooLarge {
        /// The table concerned.
        table: String,
        /// The row concerned.
        row: Vec<u8>,
        /// The column, `family:qualifier`.
        column: Vec<u8>,
        /// The value's size in bytes.
        size: usize,
        /// The configured limit in bytes.
        limit: usize,
    },

    /// A write would take the transaction past `TxnOptions::max_txn_bytes` (its buffered rows,
    /// families, qualifiers and values); the write is refused and nothing of the transaction
    /// has been written. Split the work into smaller transactions, or raise the limit.
    #[error(
        "transaction too large: {cells} cells of {bytes} bytes, over the limit of {limit} bytes"
    )]
    TransactionTooLarge {
        /// Cells the transaction would hold with the refused write.
        cells: usize,
        /// Their keys' and values' bytes.
        bytes: usize,
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
    #[error("table {}: {reason}", Binary(.table.as_bytes()))]
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
        source: std::sync::Arc<std::io::Error>,
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
    /// let busy = Error::ServerIo { message: "region moving".into(), can_retry: true, exception: None };
    /// assert_eq!(busy.retry_class(), RetryClass::Retry);
    /// assert_eq!(Error::Shutdown.retry_class(), RetryClass::Fatal);
    /// ```
    pub fn retry_class(&self) -> RetryClass {
        match self {
            Error::ServerIo {
                message, can_retry, ..
            } => {
                if server_io_retries(*can_retry, message) {
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
            Error::HttpStatus { status, .. } if matches!(status, 429 | 502 | 503 | 504) => {
                RetryClass::Retry
            }
            #[cfg(feature = "kerberos")]
            Error::Kerberos { source, .. } => match **source {
                crate::hbase::KerberosError::Io(_) | crate::hbase::KerberosError::Timeout(_) => {
                    RetryClass::Retry
                }
                _ => RetryClass::Fatal,
            },
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
            | Error::NotThrift { .. }
            | Error::HttpStatus { .. }
            | Error::Tls { .. }
            | Error::OracleFenced { .. }
            | Error::OracleStore { .. }
            | Error::OracleAuth { .. }
            | Error::OracleSettings { .. }
            | Error::Corrupted { .. }
            | Error::NotTransactional { .. }
            | Error::ValueTooLarge { .. }
            | Error::TransactionTooLarge { .. }
            | Error::Shutdown
            | Error::Migration { .. }
            | Error::Io { .. } => RetryClass::Fatal,
        }
    }

    /// The whole text behind a one-line Display, for a `--verbose` output: the gateway's full
    /// message, with the Java stack trace it usually carries ([`Error::ServerIo`],
    /// [`Error::TableNotFound`], [`Error::FamilyNotFound`], or one of them under
    /// [`Error::OutcomeUnknown`]). `None` when Display already shows everything.
    ///
    /// ```
    /// use percolator::Error;
    /// let err = Error::ServerIo {
    ///     message: "java.io.IOException: disk full\n\tat org.example.Store.flush(Store.java:7)".into(),
    ///     can_retry: true,
    ///     exception: Some("java.io.IOException".into()),
    /// };
    /// assert_eq!(err.to_string(), "HBase I/O error (retryable): java.io.IOException: disk full");
    /// assert_eq!(err.detail(), Some("java.io.IOException: disk full\n\tat org.example.Store.flush(Store.java:7)"));
    /// assert_eq!(Error::Shutdown.detail(), None);
    /// ```
    pub fn detail(&self) -> Option<&str> {
        match self {
            Error::ServerIo { message, .. }
            | Error::TableNotFound { message, .. }
            | Error::FamilyNotFound { message, .. } => {
                (one_line(message) != message.as_str()).then_some(message.as_str())
            }
            Error::OutcomeUnknown { source, .. } => source.detail(),
            _ => None,
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
            source: std::sync::Arc::new(source),
        }
    }
}

/// Whether a gateway error is worth retrying: HBase said so, or it names a state that clears
/// by itself (a region moving, opening or too busy, a server starting or replaced, a full
/// queue), by its class or by its message, whatever `canRetry` says.
fn server_io_retries(can_retry: bool, message: &str) -> bool {
    // The class a message starts with is in the message: the text covers it.
    can_retry || is_transient_message(message)
}

/// `: <first line>` of the gateway's message about a missing table, unless that line only
/// names the table again (the gateway's usual message is the bare name, or the exception's
/// class and the name).
fn what_else(table: &str, message: &str) -> String {
    let line = one_line(message);
    let named = line.rsplit(": ").next().unwrap_or(line);
    let bare = |name: &str| name.strip_prefix("default:").unwrap_or(name).to_owned();
    if line.is_empty() || bare(named) == bare(table) {
        String::new()
    } else {
        format!(": {line}")
    }
}

/// ` (retryable)` for a gateway error worth retrying, for [`Error::ServerIo`]'s Display.
fn retry_note(can_retry: bool, message: &str) -> &'static str {
    if server_io_retries(can_retry, message) {
        " (retryable)"
    } else {
        ""
    }
}

/// [`Error::NotThrift`]'s Display: what answered, and what to check.
fn not_thrift(addr: &str, head: &[u8], http: bool) -> String {
    const SHOWN: usize = 16;
    let shown = || {
        let more = if head.len() > SHOWN { "..." } else { "" };
        format!("{}{more}", Binary(&head[..head.len().min(SHOWN)]))
    };
    if http {
        let status = head
            .split(|&b| b == b'\r' || b == b'\n')
            .next()
            .unwrap_or(head);
        format!(
            "the HBase gateway at {addr} answered in HTTP ({}): it may be running in HTTP mode \
             (hbase.regionserver.thrift.http=true); use http://{addr} (https:// if it serves TLS)",
            Binary(status)
        )
    } else if let Some(refusal) = crate::hbase::errors::sasl_refusal(head) {
        format!(
            "the HBase gateway at {addr} answered with a SASL refusal ({refusal:?}): it requires \
             Kerberos (hbase.thrift.security.qop is set); give the client's Kerberos settings \
             (HBaseConfig::kerberos; --kerberos-principal with --kerberos-keytab, or --kerberos \
             with a ticket cache; HBASE_KRB_CLIENT_PRINCIPAL, HBASE_KRB_CLIENT_KEYTAB) and build \
             with the `kerberos` feature"
        )
    } else if crate::hbase::errors::is_tls_record(head) {
        format!(
            "the HBase gateway at {addr} answered in TLS ({}): it serves HTTPS \
             (hbase.thrift.ssl.enabled); use https://{addr}",
            shown()
        )
    } else {
        format!(
            "the HBase gateway at {addr} answered with bytes that cannot begin a Thrift reply \
             ({}): check that the address is a Thrift2 gateway's, and that the transport \
             (buffered or framed) and protocol (binary or compact) match its own",
            shown()
        )
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

#[cfg(test)]
mod tests {
    use super::*;

    fn boxed(table: &str, row: &[u8], family: &[u8], qualifier: &[u8]) -> Box<CellKey> {
        Box::new(CellKey {
            table: table.into(),
            row: row.to_vec(),
            family: family.to_vec(),
            qualifier: qualifier.to_vec(),
        })
    }

    #[test]
    fn keys_in_errors_read_as_hbase_prints_them() {
        let ascii = Error::WriteConflict {
            table: "bank".into(),
            row: b"acct00".to_vec(),
            column: b"f:bal".to_vec(),
            start_ts: 10,
            conflict_ts: 12,
        };
        assert_eq!(
            ascii.to_string(),
            "write conflict on bank row acct00 column f:bal: start_ts 10, conflicting ts 12"
        );
        let binary = Error::WriteConflict {
            table: "bank".into(),
            row: b"\x00\x01acct\xff\\".to_vec(),
            column: b"f:\x80".to_vec(),
            start_ts: 10,
            conflict_ts: 12,
        };
        assert_eq!(
            binary.to_string(),
            r"write conflict on bank row \x00\x01acct\xFF\x5C column f:\x80: start_ts 10, conflicting ts 12"
        );
        let cases: Vec<(Error, &str)> = vec![
            (
                Error::ValueTooLarge {
                    table: "users".into(),
                    row: b"big".to_vec(),
                    column: b"f:photo".to_vec(),
                    size: 20_000_000,
                    limit: 10_485_760,
                },
                "value for users row big column f:photo is 20000000 bytes, over the limit of 10485760",
            ),
            (
                Error::TransactionTooLarge {
                    cells: 700_001,
                    bytes: 67_108_900,
                    limit: 67_108_864,
                },
                "transaction too large: 700001 cells of 67108900 bytes, over the limit of 67108864 bytes",
            ),
            (
                Error::KeyExists {
                    table: "t".into(),
                    row: 7u32.to_be_bytes().to_vec(),
                    column: b"f:q".to_vec(),
                    start_ts: 5,
                },
                r"t row \x00\x00\x00\x07 column f:q already has a value at snapshot 5",
            ),
            (
                Error::KeyLocked {
                    table: "t".into(),
                    row: b"r 1".to_vec(),
                    column: b"f:\tq".to_vec(),
                    lock_ts: 9,
                    primary: Some(boxed("t", b"p", b"f", b"q")),
                },
                r"t row r 1 column f:\x09q is locked by live transaction 9",
            ),
            (
                Error::RolledBack {
                    start_ts: 4,
                    table: "t".into(),
                    row: "é".as_bytes().to_vec(),
                },
                r"transaction 4 was rolled back by another client (found at t row \xC3\xA9)",
            ),
            (
                Error::Corrupted {
                    what: "lock",
                    table: "t".into(),
                    row: b"r\n".to_vec(),
                    column: b"f:q".to_vec(),
                    reason: "truncated".into(),
                },
                r"corrupted lock at t row r\x0A column f:q: truncated",
            ),
            (
                Error::OutcomeUnknown {
                    method: "checkAndMutate",
                    table: "accounts".into(),
                    row: b"alice\x00".to_vec(),
                    source: Box::new(Error::Shutdown),
                },
                r"outcome of checkAndMutate on accounts row alice\x00 is unknown: client is shut down",
            ),
            (
                Error::TableNotFound {
                    table: "ns:t".into(),
                    message: "ns:t".into(),
                },
                "table ns:t not found",
            ),
            (
                Error::TableNotFound {
                    table: "t".into(),
                    message: "org.apache.hadoop.hbase.TableNotFoundException: default:t".into(),
                },
                "table t not found",
            ),
            (
                Error::TableNotFound {
                    table: "t".into(),
                    message: "Failed 1 action: t: 1 time, servers with issues: null".into(),
                },
                "table t not found: Failed 1 action: t: 1 time, servers with issues: null",
            ),
        ];
        for (error, text) in cases {
            assert_eq!(error.to_string(), text, "{error:?}");
        }
        let key = boxed("t", b"\x00r", b"f", b"\xffq");
        assert_eq!(key.to_string(), r"t/\x00r/f:\xFFq");
    }

    #[test]
    fn gateway_errors_show_one_line_and_keep_the_rest() {
        let trace = "org.apache.hadoop.hbase.TableNotFoundException: ns:t\n\tat org.apache.hadoop.hbase.client.ConnectionImplementation.locateRegion(ConnectionImplementation.java:900)\n\tat org.apache.hadoop.hbase.client.HTable.get(HTable.java:384)\n";
        let missing = Error::TableNotFound {
            table: "ns:t".into(),
            message: trace.into(),
        };
        assert_eq!(missing.to_string(), "table ns:t not found");
        assert_eq!(missing.detail(), Some(trace));
        let unknown = Error::OutcomeUnknown {
            method: "increment",
            table: "t".into(),
            row: b"r".to_vec(),
            source: Box::new(missing),
        };
        assert_eq!(unknown.detail(), Some(trace));
        let single = Error::ServerIo {
            message: "t is disabled.".into(),
            can_retry: false,
            exception: None,
        };
        assert_eq!(single.to_string(), "HBase I/O error: t is disabled.");
        assert_eq!(single.detail(), None, "Display already says it all");
    }
}
