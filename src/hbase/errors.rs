//! Mapping of Thrift failures into the crate's [`Error`], keeping what callers classify on.
//!
//! The gateway reports missing tables and families only inside `TIOError.message` (the Java
//! exception's message), so those two are recognised by the Java class names they carry. The
//! class a message starts with is kept in [`Error::ServerIo`], and the ones HBase's own client
//! retries make it `Retry` (see [`is_retryable_exception`]).

use std::io;
use std::sync::OnceLock;

use regex::Regex;
use thrift::{ApplicationErrorKind, TransportErrorKind};

use crate::thrift::hbase::{TIOError, TIllegalArgument};
use crate::{Error, Peer};

/// Whether a failure left the connection unusable (transport or protocol), as opposed to the
/// server answering with an error on a healthy connection.
pub(crate) fn is_connection_failure(error: &thrift::Error) -> bool {
    match error {
        thrift::Error::Transport(_) | thrift::Error::Protocol(_) => true,
        // Raised by the generated client when the reply does not belong to the request: the
        // stream is out of step and must not be reused.
        thrift::Error::Application(app) => matches!(
            app.kind,
            ApplicationErrorKind::BadSequenceId
                | ApplicationErrorKind::WrongMethodName
                | ApplicationErrorKind::InvalidMessageType
        ),
        thrift::Error::User(_) => false,
    }
}

/// Why a connection stopped being usable. Every call that was on it gets an error built from
/// the same cause, so it is kept as plain data (neither `io::Error` nor `thrift::Error` can be
/// cloned).
#[derive(Clone, Debug)]
pub(crate) enum Cause {
    /// The socket failed, closed, or timed out.
    Io(io::ErrorKind, String),
    /// The gateway sent something that is not the expected reply: the stream is out of step.
    Protocol(String),
    /// The first bytes the server sent on the connection cannot begin a Thrift reply (they
    /// are kept, at most [`NOT_THRIFT_HEAD`]): the server is not a Thrift gateway speaking
    /// this transport and protocol, so nothing it was sent was applied.
    NotThrift(Vec<u8>),
    /// An HTTP gateway's connection answered with something that is not HTTP (the first
    /// bytes, at most [`NOT_THRIFT_HEAD`]).
    NotHttp(Vec<u8>),
    /// An HTTP gateway answered a request with another status than 200: `detail` is the
    /// text of its error page.
    Http {
        status: u16,
        reason: String,
        detail: String,
    },
    /// TLS failed after the handshake.
    Tls(TlsFailure),
    /// Kerberos failed: a SPNEGO token could not be made, or a SASL frame not sealed or
    /// opened.
    #[cfg(feature = "kerberos")]
    Kerberos(std::sync::Arc<super::kerberos::KerberosError>),
}

/// Why TLS with a gateway failed, as a user can act on it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TlsFailure {
    /// The gateway's certificate is not signed by a trusted CA (see `TlsOptions::ca_file`).
    #[error("the gateway's certificate is not trusted ({detail}); give its CA with --hbase-ca or TlsOptions::ca_file")]
    UntrustedCertificate { detail: String },
    /// The certificate does not name the host connected to.
    #[error("the gateway's certificate is not valid for `{host}`")]
    HostnameMismatch { host: String },
    /// The certificate has expired or is not valid yet.
    #[error("the gateway's certificate has expired or is not yet valid")]
    CertificateExpired,
    /// The gateway ended the handshake with an alert (it may require a client certificate,
    /// or share no protocol version or cipher with the client).
    #[error("the gateway refused the TLS handshake (alert: {alert})")]
    Refused { alert: String },
    /// The gateway did not answer in TLS: it may serve plain HTTP or raw Thrift.
    #[error("the gateway does not speak TLS ({detail}); use http:// or a bare host:port for it")]
    NotTls { detail: String },
    /// The client's own TLS settings are unusable: a CA or certificate file that cannot be
    /// read or holds nothing usable.
    #[error("TLS settings: {detail}")]
    Settings { detail: String },
    /// Any other TLS failure.
    #[error("{detail}")]
    Other { detail: String },
}

impl From<TlsFailure> for io::Error {
    fn from(failure: TlsFailure) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, failure)
    }
}

/// How many of a non-Thrift answer's first bytes are kept for the error.
pub(crate) const NOT_THRIFT_HEAD: usize = 64;

/// The first bytes of an answer that is not what was expected, as its error keeps them.
pub(crate) fn head_of(answer: &[u8]) -> Vec<u8> {
    answer[..answer.len().min(NOT_THRIFT_HEAD)].to_vec()
}

impl Cause {
    pub(crate) fn io(error: &io::Error) -> Cause {
        Cause::Io(error.kind(), error.to_string())
    }

    pub(crate) fn thrift(error: &thrift::Error) -> Cause {
        match error {
            thrift::Error::Transport(t) => Cause::Io(io_kind(t.kind), t.message.clone()),
            // Their `Display` leaves the message out.
            thrift::Error::Application(app) => Cause::Protocol(format!("{app}: {}", app.message)),
            thrift::Error::Protocol(p) => Cause::Protocol(format!("{p}: {}", p.message)),
            other => Cause::Protocol(other.to_string()),
        }
    }

    /// The caller's error for a call on the connection at `addr`.
    pub(crate) fn error(&self, addr: &str) -> Error {
        match self {
            Cause::Io(kind, message) => Error::Transport {
                peer: Peer::HBase,
                addr: addr.to_owned(),
                source: std::sync::Arc::new(io::Error::new(*kind, message.clone())),
            },
            Cause::Protocol(message) => Error::Protocol {
                peer: Peer::HBase,
                message: message.clone(),
            },
            Cause::NotThrift(head) => Error::NotThrift {
                addr: addr.to_owned(),
                http: head.starts_with(b"HTTP/"),
                head: head.clone(),
            },
            Cause::NotHttp(head) if is_tls_record(head) => Error::Protocol {
                peer: Peer::HBase,
                message: format!(
                    "the gateway at {addr} answered an HTTP request in TLS ({}): it serves \
                     HTTPS; use https:// instead of http://",
                    crate::Binary(head)
                ),
            },
            Cause::NotHttp(head) => Error::Protocol {
                peer: Peer::HBase,
                message: format!(
                    "the gateway at {addr} answered an HTTP request with bytes that are not \
                     HTTP ({}): it may be a raw Thrift gateway; use host:port without http://",
                    crate::Binary(head)
                ),
            },
            Cause::Http {
                status,
                reason,
                detail,
            } => Error::HttpStatus {
                addr: addr.to_owned(),
                status: *status,
                reason: reason.clone(),
                detail: detail.clone(),
            },
            Cause::Tls(failure) => Error::Tls {
                addr: addr.to_owned(),
                failure: failure.clone(),
            },
            #[cfg(feature = "kerberos")]
            Cause::Kerberos(source) => Error::Kerberos {
                addr: addr.to_owned(),
                source: source.clone(),
            },
        }
    }

    /// Whether the gateway surely applied nothing of the call and would answer a replay the
    /// same: it is not a Thrift gateway, or it refused the request before running it.
    pub(crate) fn is_refusal(&self) -> bool {
        match self {
            Cause::NotThrift(_) | Cause::NotHttp(_) => true,
            // HBase's servlet answers a refused impersonation with a 500 whose page names the
            // AuthorizationException; no handler ran.
            Cause::Http { status, detail, .. } => {
                (400..500).contains(status) || detail.contains("AuthorizationException")
            }
            Cause::Io(..) | Cause::Protocol(_) | Cause::Tls(_) => false,
            // A token that could not be made was never sent; a frame that did not open is a
            // broken stream.
            #[cfg(feature = "kerberos")]
            Cause::Kerberos(_) => false,
        }
    }
}

fn io_kind(kind: TransportErrorKind) -> io::ErrorKind {
    match kind {
        TransportErrorKind::NotOpen => io::ErrorKind::NotConnected,
        TransportErrorKind::TimedOut => io::ErrorKind::TimedOut,
        TransportErrorKind::EndOfFile => io::ErrorKind::UnexpectedEof,
        TransportErrorKind::NegativeSize | TransportErrorKind::SizeLimit => {
            io::ErrorKind::InvalidData
        }
        _ => io::ErrorKind::Other,
    }
}

/// An error the gateway answered with. `table` is the table the call was about, used when the
/// message does not name one.
pub(crate) fn server_error(error: thrift::Error, method: &str, table: &str) -> Error {
    match error {
        thrift::Error::User(user) => match user.downcast::<TIOError>() {
            Ok(io) => io_error(
                io.message.unwrap_or_default(),
                io.can_retry.unwrap_or(false),
                table,
            ),
            Err(user) => match user.downcast::<TIllegalArgument>() {
                Ok(ia) => Error::IllegalArgument {
                    message: ia.message.unwrap_or_default(),
                },
                Err(other) => Error::Protocol {
                    peer: Peer::HBase,
                    message: format!("{method}: undeclared exception: {other}"),
                },
            },
        },
        thrift::Error::Application(app) => Error::Rejected {
            method: method.to_owned(),
            message: format!("{:?}: {}", app.kind, app.message),
        },
        other => Error::Protocol {
            peer: Peer::HBase,
            message: format!("{method}: {other}"),
        },
    }
}

/// Classifies a `TIOError` by the Java exception its message names.
pub(crate) fn io_error(message: String, can_retry: bool, table: &str) -> Error {
    if message.contains("NoSuchColumnFamilyException") {
        let family = capture(family_pattern(), &message).unwrap_or_default();
        let table = capture(quoted_table_pattern(), &message).unwrap_or_else(|| table.to_owned());
        Error::FamilyNotFound {
            table,
            family,
            message,
        }
    } else if message.contains("TableNotFoundException") {
        let table = capture(quoted_table_pattern(), &message)
            .or_else(|| capture(after_class_pattern(), &message))
            .unwrap_or_else(|| table.to_owned());
        Error::TableNotFound { table, message }
    } else if names_only_the_table(&message, can_retry, table) {
        Error::TableNotFound {
            table: table.to_owned(),
            message,
        }
    } else {
        let exception = exception_class(&message).map(str::to_owned);
        Error::ServerIo {
            message,
            can_retry,
            exception,
        }
    }
}

/// The first non-blank line of a gateway's message: the Java exception's class and message,
/// without the stack trace that follows it.
pub(crate) fn one_line(message: &str) -> &str {
    message
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or("")
}

/// The Java exception class a gateway's message starts with, as `Throwable.toString` prints
/// it (`org.apache.hadoop.hbase.RegionTooBusyException: ...`, or a bare class name ending in
/// `Exception` or `Error`). `None` for the gateway's bare messages (`t is disabled.`, a table
/// name, `Failed 1 action: ...`).
pub(crate) fn exception_class(message: &str) -> Option<&str> {
    let line = one_line(message);
    let end = line.find(':').unwrap_or(line.len());
    let name = &line[..end];
    let segments: Vec<&str> = name.split('.').collect();
    let identifier = |s: &str| {
        let mut chars = s.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
    };
    let (class, packages) = segments.split_last()?;
    let is_class = identifier(class)
        && class.starts_with(|c: char| c.is_ascii_uppercase())
        && packages
            .iter()
            .all(|p| identifier(p) && p.starts_with(|c: char| c.is_ascii_lowercase()));
    let named = !packages.is_empty() || class.ends_with("Exception") || class.ends_with("Error");
    (is_class && named).then_some(name)
}

/// Java exceptions that say "try again shortly": HBase's own client retries them (its
/// `ClientExceptionsUtil.isSpecialException` list, and the server-starting and master-busy
/// ones its retrying callers wait out), since they clear once a region has moved or opened,
/// a server has started or a queue has drained. `ConcurrentTableModificationException` is a
/// `DoNotRetryIOException` in HBase, but it only says another schema change of the table is
/// under way: the same call succeeds once that one is done.
const RETRYABLE_EXCEPTIONS: &[&str] = &[
    "CallDroppedException",
    "CallQueueTooBigException",
    "CallTimeoutException",
    "ConcurrentTableModificationException",
    "FailedServerException",
    "MasterNotRunningException",
    "MultiActionResultTooLarge",
    "NoServerForRegionException",
    "NotServingRegionException",
    "PleaseHoldException",
    "RegionMovedException",
    "RegionOpeningException",
    "RegionServerAbortedException",
    "RegionServerStoppedException",
    "RegionTooBusyException",
    "RetryImmediatelyException",
    "RpcThrottlingException",
    "ServerNotRunningYetException",
    "ServerTooBusyException",
    "ThrottlingException",
];

/// Whether `head` starts like a TLS record (an alert or a handshake, TLS 1.0-1.3), as a TLS
/// server answers a client that spoke plain bytes to it.
pub(crate) fn is_tls_record(head: &[u8]) -> bool {
    matches!(head, [0x15 | 0x16, 0x03, 0x00..=0x04, ..])
}

/// The text of a SASL negotiation refusal at the front of `head` (Thrift's SASL transport:
/// status BAD 3 or ERROR 4, a 4-byte big-endian length, UTF-8 text), as a gateway that
/// requires Kerberos answers a client that spoke plain Thrift to it.
pub(crate) fn sasl_refusal(head: &[u8]) -> Option<String> {
    let [3 | 4, a, b, c, d, text @ ..] = head else {
        return None;
    };
    let len = u32::from_be_bytes([*a, *b, *c, *d]) as usize;
    // The messages are short; Thrift replies rarely start this way, and never with text.
    if len == 0 || len > 1024 {
        return None;
    }
    let text = &text[..text.len().min(len)];
    let printable = !text.is_empty() && text.iter().all(|&b| (0x20..0x7f).contains(&b));
    printable.then(|| String::from_utf8_lossy(text).into_owned())
}

/// Whether `class` (qualified or not) is one HBase's client retries; see
/// [`RETRYABLE_EXCEPTIONS`]. Classification goes by the whole message
/// ([`is_transient_message`]), which holds the class; this names the list's own rule.
#[cfg(test)]
pub(crate) fn is_retryable_exception(class: &str) -> bool {
    let simple = class.rsplit('.').next().unwrap_or(class);
    RETRYABLE_EXCEPTIONS.contains(&simple)
}

/// What HBase 2.4-2.6 write in the messages of a region or server in transition. The gateway
/// forwards only `getMessage()`, often with `canRetry` false: an exception its own HBase
/// client raised (locating a region in `hbase:meta`, giving up after its retries) carries no
/// class name, and one a region server raised is nested in a `RetriesExhaustedException`'s
/// list. Each clears once the region is assigned again or the server replaced.
const TRANSIENT_TEXTS: &[&str] = &[
    // NoServerForRegionException, from locating a region in hbase:meta during a move or split.
    "No server address listed in ",
    // The locator after a split, before the daughters are online (or after its tries).
    "Unable to find region for ",
    // hbase:meta itself unreachable (a read's replica location).
    "Can't get the location for replica",
    "Failed to find location, tableName=",
    // NotServingRegionException, RegionMovedException, RegionOpeningException.
    " is not online on ",
    "Region moved to: hostname=",
    " is opening on ",
    // RegionTooBusyException.
    "Over memstore limit=",
    "Failed to obtain lock; regionName=",
    "StoreTooBusy,",
    // CallQueueTooBigException (it has no class prefix even from a region server) and
    // CallDroppedException.
    "Call queue is full on ",
    "Call dropped, server ",
    // ServerNotRunningYetException (region server or master), PleaseHoldException.
    "is not running yet",
    "Master is initializing",
    // A crashed server's port, met inside the gateway's retries (IPCUtil's wrapping).
    "failed on connection exception",
    "failed on local exception",
    "failed servers list",
];

/// `Server rs1,16020,17... aborting|stopping` (RegionServerAbortedException and
/// RegionServerStoppedException), `... is dead.` (a server hbase:meta still names), and the
/// gateway's client giving up on one call after its operation timeout (`callTimeout=60000,
/// callDuration=60012: ... row 'r' on table 't' at region=...`).
fn transient_pattern() -> &'static Regex {
    static P: OnceLock<Regex> = OnceLock::new();
    P.get_or_init(|| {
        Regex::new(
            r"\bServer \S+ (?:aborting|stopping)\b|\bis dead\.|\bcallTimeout=\d+, callDuration=\d+",
        )
        .expect("valid")
    })
}

/// Whether the gateway's message, wherever in it, names a state that clears by itself: one of
/// [`TRANSIENT_TEXTS`], or an exception HBase's client retries ([`RETRYABLE_EXCEPTIONS`]),
/// also inside a `RetriesExhaustedException` over it.
pub(crate) fn is_transient_message(message: &str) -> bool {
    TRANSIENT_TEXTS.iter().any(|text| message.contains(text))
        || transient_pattern().is_match(message)
        || RETRYABLE_EXCEPTIONS
            .iter()
            .any(|name| contains_word(message, name))
}

/// The texts of [`TRANSIENT_TEXTS`] and [`RETRYABLE_EXCEPTIONS`] that say a region or server
/// is overloaded rather than away: it answers, later.
const BUSY_TEXTS: &[&str] = &[
    "Over memstore limit=",
    "Failed to obtain lock; regionName=",
    "StoreTooBusy,",
    "Call queue is full on ",
    "Call dropped, server ",
    "RegionTooBusyException",
    "CallQueueTooBigException",
    "CallDroppedException",
    "ServerTooBusyException",
    "ThrottlingException",
    "RpcThrottlingException",
];

/// What HBase writes for a region that is away (moving, splitting, on a crashed or starting
/// server) rather than busy.
const UNAVAILABLE_TEXTS: &[&str] = &[
    "No server address listed in ",
    "Unable to find region for ",
    "Can't get the location for replica",
    "Failed to find location, tableName=",
    " is not online on ",
    "Region moved to: hostname=",
    " is opening on ",
    "is not running yet",
    "failed on connection exception",
    "failed on local exception",
    "failed servers list",
    "NoServerForRegionException",
    "NotServingRegionException",
    "RegionMovedException",
    "RegionOpeningException",
    "RegionServerAbortedException",
    "RegionServerStoppedException",
    "ServerNotRunningYetException",
    "FailedServerException",
];

/// The one line [`Error::ServerIo`] shows for the gateway's `message`. A region away or busy
/// is named as such, and the gateway's client giving up after its retries
/// (`Failed after attempts=N, exceptions:` and one line per attempt, whose first line alone
/// says nothing) shows the count and the last attempt's exception.
pub(crate) fn server_io_line(message: &str) -> String {
    let away = || {
        UNAVAILABLE_TEXTS.iter().any(|text| message.contains(text))
            || transient_pattern().is_match(message)
    };
    let what = if !is_transient_message(message) {
        ""
    } else if BUSY_TEXTS.iter().any(|text| message.contains(text)) {
        "HBase busy: "
    } else if away() {
        "region unavailable: "
    } else {
        ""
    };
    match retries_exhausted(message) {
        Some((attempts, last)) => format!(
            "{what}the gateway's HBase client gave up after {attempts} attempts; the last: {last}"
        ),
        None => format!("{what}{}", one_line(message)),
    }
}

/// `(N, the last attempt's exception)` of HBase's `RetriesExhaustedException` message.
fn retries_exhausted(message: &str) -> Option<(&str, &str)> {
    static HEAD: OnceLock<Regex> = OnceLock::new();
    static ATTEMPT: OnceLock<Regex> = OnceLock::new();
    let head = HEAD.get_or_init(|| {
        Regex::new(r"^\s*Failed after attempts=(\d+), exceptions:").expect("valid")
    });
    // `<time>, RpcRetryingCaller{globalStartTime=..., pause=..., maxAttempts=...}, <exception>`
    let attempt = ATTEMPT
        .get_or_init(|| Regex::new(r"^\S+, RpcRetryingCaller\{[^}]*\}, (.+)$").expect("valid"));
    let attempts = head.captures(message)?.get(1)?.as_str();
    let last = message
        .lines()
        .skip(1)
        .filter_map(|line| attempt.captures(line.trim()))
        .filter_map(|c| c.get(1))
        .last()?
        .as_str();
    Some((attempts, dedupe_class(last)))
}

/// `X: X: text` (a remote exception's class, then its own `toString`) as `X: text`.
fn dedupe_class(line: &str) -> &str {
    match exception_class(line) {
        Some(class) if line[class.len()..].starts_with(&format!(": {class}: ")) => {
            &line[class.len() + 2..]
        }
        _ => line,
    }
}

/// `name` in `text` as a whole identifier (not the tail of a longer one).
fn contains_word(text: &str, name: &str) -> bool {
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
            && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

/// The gateway's own client raised `TableNotFoundException(tableName)` while locating the
/// table's region (data calls, descriptors, table state), and the gateway forwards only
/// `getMessage()`: the bare name, without the class that remote exceptions carry. The batch
/// path (putMultiple, deleteMultiple, mutateRow, checkAndMutate) wraps that same failure in a
/// RetriesExhaustedWithDetailsException marked retryable, though retrying cannot make the
/// table exist.
fn names_only_the_table(message: &str, can_retry: bool, table: &str) -> bool {
    (!can_retry && is_bare_table_name(message, table))
        || capture(batch_cause_pattern(), message)
            .is_some_and(|cause| is_bare_table_name(&cause, table))
}

/// `message` is `table` as HBase prints a `TableName`: `default:` is left out.
fn is_bare_table_name(message: &str, table: &str) -> bool {
    let unqualified = |name: &str| name.strip_prefix("default:").unwrap_or(name).to_owned();
    !table.is_empty() && unqualified(message) == unqualified(table)
}

fn capture(pattern: &Regex, text: &str) -> Option<String> {
    pattern
        .captures(text)
        .and_then(|c| c.get(1))
        .map(|m| m.as_str().to_owned())
}

fn family_pattern() -> &'static Regex {
    static P: OnceLock<Regex> = OnceLock::new();
    P.get_or_init(|| Regex::new(r"[Cc]olumn [Ff]amil(?:y|ies) \[?'?([^\s',\]]+)").expect("valid"))
}

/// `Table 'x' was not found` and `... in table 'x', {NAME => ...}`.
fn quoted_table_pattern() -> &'static Regex {
    static P: OnceLock<Regex> = OnceLock::new();
    P.get_or_init(|| Regex::new(r"[Tt]able '([^']+)'").expect("valid"))
}

/// `Failed 2 actions: <cause>: 2 times, servers with issues: null`.
fn batch_cause_pattern() -> &'static Regex {
    static P: OnceLock<Regex> = OnceLock::new();
    P.get_or_init(|| {
        Regex::new(r"^Failed \d+ actions?: (.+?): \d+ times?, servers with issues").expect("valid")
    })
}

/// `org.apache.hadoop.hbase.TableNotFoundException: ns:name`.
fn after_class_pattern() -> &'static Regex {
    static P: OnceLock<Regex> = OnceLock::new();
    P.get_or_init(|| Regex::new(r"TableNotFoundException: ([^\s']+)").expect("valid"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RetryClass;
    use thrift::{ApplicationError, ProtocolError, ProtocolErrorKind, TransportError};

    fn tio(message: &str, can_retry: bool) -> thrift::Error {
        thrift::Error::User(Box::new(TIOError::new(message.to_owned(), can_retry)))
    }

    #[test]
    fn table_not_found_takes_the_name_from_the_message() {
        let err = server_error(
            tio(
                "org.apache.hadoop.hbase.TableNotFoundException: Table 'ns:t1' was not found, got: hbase:namespace.",
                false,
            ),
            "get",
            "other",
        );
        match err {
            Error::TableNotFound { table, .. } => assert_eq!(table, "ns:t1"),
            other => panic!("expected TableNotFound, got {other:?}"),
        }
        match io_error(
            "org.apache.hadoop.hbase.TableNotFoundException: t2\n\tat x".into(),
            false,
            "q",
        ) {
            Error::TableNotFound { table, .. } => assert_eq!(table, "t2"),
            other => panic!("expected TableNotFound, got {other:?}"),
        }
    }

    #[test]
    fn table_not_found_falls_back_to_the_called_table() {
        match io_error("TableNotFoundException".into(), false, "called") {
            Error::TableNotFound { table, .. } => assert_eq!(table, "called"),
            other => panic!("expected TableNotFound, got {other:?}"),
        }
    }

    #[test]
    fn a_bare_table_name_from_the_gateway_is_table_not_found() {
        for (message, called) in [("t", "t"), ("t", "default:t"), ("ns:t", "ns:t")] {
            match io_error(message.into(), false, called) {
                Error::TableNotFound { table, .. } => assert_eq!(table, called),
                other => panic!("{message} for {called}: expected TableNotFound, got {other:?}"),
            }
        }
        // Another table's name, or a retryable error, is not this table missing.
        assert!(matches!(
            io_error("u".into(), false, "t"),
            Error::ServerIo { .. }
        ));
        assert!(matches!(
            io_error("t".into(), true, "t"),
            Error::ServerIo { .. }
        ));
        assert!(matches!(
            io_error("t is disabled.".into(), false, "t"),
            Error::ServerIo { .. }
        ));
    }

    #[test]
    fn a_batch_that_found_no_table_is_table_not_found() {
        let message = "Failed 3 actions: t: 3 times, servers with issues: null";
        match io_error(message.into(), true, "t") {
            Error::TableNotFound { table, .. } => assert_eq!(table, "t"),
            other => panic!("expected TableNotFound, got {other:?}"),
        }
        let disabled = "Failed 1 action: t is disabled.: 1 time, servers with issues: h,1,2";
        assert!(matches!(
            io_error(disabled.into(), true, "t"),
            Error::ServerIo {
                can_retry: true,
                ..
            }
        ));
    }

    #[test]
    fn missing_family_names_family_and_table() {
        let message = "org.apache.hadoop.hbase.regionserver.NoSuchColumnFamilyException: Column family nope does not exist in region t,,1.abc in table 't', {NAME => 'f'}";
        match io_error(message.into(), false, "fallback") {
            Error::FamilyNotFound { table, family, .. } => {
                assert_eq!(table, "t");
                assert_eq!(family, "nope");
            }
            other => panic!("expected FamilyNotFound, got {other:?}"),
        }
    }

    #[test]
    fn other_io_errors_keep_message_and_retry_flag() {
        let err = io_error("RegionTooBusyException: busy".into(), true, "t");
        assert_eq!(err.retry_class(), RetryClass::Retry);
        match err {
            Error::ServerIo {
                message, can_retry, ..
            } => {
                assert!(message.contains("busy"));
                assert!(can_retry);
            }
            other => panic!("expected ServerIo, got {other:?}"),
        }
        let fatal = io_error("TableNotEnabledException: t".into(), false, "t");
        assert_eq!(fatal.retry_class(), RetryClass::Fatal);
    }

    /// What the gateway forwards for a region server's exception: the remote class, its
    /// message, and the server's stack trace.
    const BUSY: &str = "org.apache.hadoop.hbase.RegionTooBusyException: Over memstore limit=512.0 M, regionName=5c5f0e2b3d, server=rs1.example.com,16020,1700000000000\n\tat org.apache.hadoop.hbase.regionserver.HRegion.checkResources(HRegion.java:5016)\n\tat org.apache.hadoop.hbase.regionserver.RSRpcServices.mutate(RSRpcServices.java:2855)\n\tat org.apache.hadoop.hbase.ipc.RpcServer.call(RpcServer.java:415)\n";

    #[test]
    fn exceptions_hbase_retries_are_retryable_whatever_can_retry_says() {
        let err = server_error(tio(BUSY, false), "mutateRow", "t");
        assert_eq!(err.retry_class(), RetryClass::Retry);
        assert_eq!(
            err.to_string(),
            "HBase I/O error (retryable): HBase busy: org.apache.hadoop.hbase.RegionTooBusyException: Over memstore limit=512.0 M, regionName=5c5f0e2b3d, server=rs1.example.com,16020,1700000000000"
        );
        assert_eq!(err.detail(), Some(BUSY), "the stack trace stays available");
        match &err {
            Error::ServerIo {
                message,
                can_retry,
                exception,
            } => {
                assert_eq!(message, BUSY);
                assert!(!can_retry, "the flag is kept as sent");
                assert_eq!(
                    exception.as_deref(),
                    Some("org.apache.hadoop.hbase.RegionTooBusyException")
                );
            }
            other => panic!("expected ServerIo, got {other:?}"),
        }
        for (class, what) in [
            (
                "org.apache.hadoop.hbase.NotServingRegionException",
                "region unavailable: ",
            ),
            (
                "org.apache.hadoop.hbase.exceptions.RegionMovedException",
                "region unavailable: ",
            ),
            (
                "org.apache.hadoop.hbase.exceptions.RegionOpeningException",
                "region unavailable: ",
            ),
            (
                "org.apache.hadoop.hbase.CallQueueTooBigException",
                "HBase busy: ",
            ),
            ("org.apache.hadoop.hbase.RetryImmediatelyException", ""),
            (
                "org.apache.hadoop.hbase.ipc.ServerNotRunningYetException",
                "region unavailable: ",
            ),
            ("org.apache.hadoop.hbase.PleaseHoldException", ""),
            (
                "org.apache.hadoop.hbase.ConcurrentTableModificationException",
                "",
            ),
            (
                "org.apache.hadoop.hbase.quotas.RpcThrottlingException",
                "HBase busy: ",
            ),
        ] {
            let message =
                format!("{class}: Please retry\n\tat a.B.c(B.java:1)\n\tat a.B.d(B.java:2)");
            let err = io_error(message, false, "t");
            assert_eq!(err.retry_class(), RetryClass::Retry, "{class}");
            assert_eq!(
                err.to_string(),
                format!("HBase I/O error (retryable): {what}{class}: Please retry")
            );
        }
        // Those HBase does not retry stay fatal, and say nothing of retrying.
        let disabled = io_error(
            "org.apache.hadoop.hbase.TableNotEnabledException: t\n\tat a.B.c(B.java:1)".into(),
            false,
            "t",
        );
        assert_eq!(disabled.retry_class(), RetryClass::Fatal);
        assert_eq!(
            disabled.to_string(),
            "HBase I/O error: org.apache.hadoop.hbase.TableNotEnabledException: t"
        );
    }

    /// A region or server in transition, as HBase 2.4, 2.5 and 2.6 word it and as the gateway
    /// forwards it: often without a class, with `canRetry` false, or nested in the list of a
    /// client that gave up. Every one is `Retry`, and says so.
    const TRANSIENT: &[&str] = &[
        // NoServerForRegionException, raised inside the gateway: no class name.
        "No server address listed in hbase:meta for region percolator_meta,,1700000000000.3f2a9c0d1e. containing row table/orders",
        "Unable to find region for r7 in t1 after 3 tries.",
        "Unable to find region for r7 in t1",
        "Can't get the location for replica 0",
        "Failed to find location, tableName=t1, row=r7, reload=true",
        // From a region server: class, message, stack.
        "org.apache.hadoop.hbase.NotServingRegionException: t1,,1700000000000.c5f998a0b1. is not online on rs1.example.com,16020,1700000000000\n\tat org.apache.hadoop.hbase.regionserver.HRegionServer.getRegionByEncodedName(HRegionServer.java:3439)",
        "Region moved to: hostname=rs2.example.com port=16020 startCode=1700000000001. As of locationSeqNum=1234.",
        "org.apache.hadoop.hbase.exceptions.RegionOpeningException: Region t1,,1700000000000.c5f998a0b1. is opening on rs1.example.com,16020,1700000000000",
        "Over memstore limit=512.0 M, regionName=bd53c140afadb8316d2fce84ef3f701e, server=rs1.example.com,16020,1700000000000",
        "Failed to obtain lock; regionName=t1,,1700000000000.c5f998a0b1., server=rs1.example.com,16020,1700000000000",
        "StoreTooBusy,t1,,1700000000000.c5f998a0b1.:f Above parallelPutToStoreThreadLimit(10)",
        "Call queue is full on rs1.example.com,16020,1700000000000, is hbase.ipc.server.max.callqueue.size too small?",
        "Call queue is full on rs1.example.com,16020,1700000000000, too many items queued ?",
        "Call dropped, server rs1.example.com,16020,1700000000000 is overloaded, please retry.",
        "org.apache.hadoop.hbase.ipc.ServerNotRunningYetException: Server rs1.example.com,16020,1700000000000 is not running yet",
        "org.apache.hadoop.hbase.PleaseHoldException: Master is initializing",
        "org.apache.hadoop.hbase.regionserver.RegionServerAbortedException: Server rs1.example.com,16020,1700000000000 aborting",
        "org.apache.hadoop.hbase.regionserver.RegionServerStoppedException: Server rs1.example.com,16020,1700000000000 stopping",
        "hbase:meta says the region t1,,1700000000000.c5f998a0b1. is managed by the server rs1.example.com,16020,1700000000000, but it is dead.",
        // The gateway's client giving up: one call's operation timeout, its retries, a batch.
        "callTimeout=60000, callDuration=60012: Call to address=rs1.example.com:16020 failed on local exception: java.io.IOException: Connection reset by peer row 'r7' on table 't1' at region=t1,,1700000000000.c5f998a0b1., hostname=rs1.example.com,16020,1700000000000, seqNum=2",
        "Failed after attempts=3, exceptions:\n2026-11-30T10:00:01.234Z, RpcRetryingCaller{globalStartTime=2026-11-30T10:00:00.100Z, pause=100, maxAttempts=3}, org.apache.hadoop.hbase.NotServingRegionException: org.apache.hadoop.hbase.NotServingRegionException: t1,,1700000000000.c5f998a0b1. is not online on rs1.example.com,16020,1700000000000\n",
        "Failed after attempts=3, exceptions:\n2026-11-30T10:00:01.234Z, RpcRetryingCaller{globalStartTime=2026-11-30T10:00:00.100Z, pause=100, maxAttempts=3}, java.net.ConnectException: Call to address=rs1.example.com:16020 failed on connection exception: org.apache.hbase.thirdparty.io.netty.channel.AbstractChannel$AnnotatedConnectException: Connection refused\n",
        "Failed after attempts=3, exceptions:\n2026-11-30T10:00:01.234Z, RpcRetryingCaller{globalStartTime=2026-11-30T10:00:00.100Z, pause=100, maxAttempts=3}, java.io.IOException: Call to rs1.example.com/10.0.0.5:16020 failed on local exception: org.apache.hadoop.hbase.ipc.FailedServerException: This server is in the failed servers list: rs1.example.com/10.0.0.5:16020\n",
        "Failed 3 actions: NotServingRegionException: 3 times, servers with issues: rs1.example.com,16020,1700000000000, ",
        "Failed 1 action: RegionTooBusyException: 1 time, servers with issues: rs1.example.com,16020,1700000000000, ",
    ];

    #[test]
    fn a_region_or_server_in_transition_is_retryable_by_its_message_alone() {
        for message in TRANSIENT {
            let err = server_error(tio(message, false), "checkAndMutate", "t1");
            assert_eq!(err.retry_class(), RetryClass::Retry, "{message}");
            assert!(
                err.to_string().starts_with("HBase I/O error (retryable): "),
                "{err}"
            );
        }
    }

    /// What a user reads: a region away, a region busy, and the gateway's client giving up,
    /// with its count and last attempt rather than the bare `Failed after attempts=3,
    /// exceptions:` that starts the message.
    #[test]
    fn a_transient_state_says_what_it_is_on_its_one_line() {
        for (message, shown) in [
            (
                "No server address listed in hbase:meta for region percolator_meta,,1700000000000.c5f998a0b1. containing row table/t1",
                "HBase I/O error (retryable): region unavailable: No server address listed in hbase:meta for region percolator_meta,,1700000000000.c5f998a0b1. containing row table/t1",
            ),
            (
                TRANSIENT[TRANSIENT.len() - 5],
                "HBase I/O error (retryable): region unavailable: the gateway's HBase client gave up after 3 attempts; the last: org.apache.hadoop.hbase.NotServingRegionException: t1,,1700000000000.c5f998a0b1. is not online on rs1.example.com,16020,1700000000000",
            ),
            (
                "Failed after attempts=2, exceptions:\n2026-11-30T10:00:01.234Z, RpcRetryingCaller{globalStartTime=2026-11-30T10:00:00.100Z, pause=100, maxAttempts=2}, org.apache.hadoop.hbase.NotServingRegionException: t1,,1.a. is not online on rs1,16020,1\n2026-11-30T10:00:01.434Z, RpcRetryingCaller{globalStartTime=2026-11-30T10:00:00.100Z, pause=100, maxAttempts=2}, org.apache.hadoop.hbase.exceptions.RegionOpeningException: Region t1,,1.a. is opening on rs2,16020,1\n",
                "HBase I/O error (retryable): region unavailable: the gateway's HBase client gave up after 2 attempts; the last: org.apache.hadoop.hbase.exceptions.RegionOpeningException: Region t1,,1.a. is opening on rs2,16020,1",
            ),
            (
                BUSY,
                "HBase I/O error (retryable): HBase busy: org.apache.hadoop.hbase.RegionTooBusyException: Over memstore limit=512.0 M, regionName=5c5f0e2b3d, server=rs1.example.com,16020,1700000000000",
            ),
            (
                "Failed after attempts=3, exceptions:\n2026-11-30T10:00:01.234Z, RpcRetryingCaller{globalStartTime=2026-11-30T10:00:00.100Z, pause=100, maxAttempts=3}, org.apache.hadoop.hbase.TableNotEnabledException: t1\n",
                "HBase I/O error: the gateway's HBase client gave up after 3 attempts; the last: org.apache.hadoop.hbase.TableNotEnabledException: t1",
            ),
        ] {
            let err = server_error(tio(message, false), "checkAndMutate", "t1");
            assert_eq!(err.to_string(), shown);
        }
    }

    #[test]
    fn a_failure_that_does_not_clear_by_itself_stays_fatal_whatever_it_mentions() {
        for message in [
            "org.apache.hadoop.hbase.TableNotEnabledException: t1",
            "Region offline; disable table call? t1,,1700000000000.c5f998a0b1.",
            "org.apache.hadoop.hbase.DoNotRetryIOException: Cell with size 20971520 exceeds limit of 10485760 bytes",
            "Failed after attempts=3, exceptions:\n2026-11-30T10:00:01.234Z, RpcRetryingCaller{globalStartTime=2026-11-30T10:00:00.100Z, pause=100, maxAttempts=3}, org.apache.hadoop.hbase.TableNotEnabledException: t1\n",
            "org.apache.hadoop.hbase.exceptions.FailedSanityCheckException: Requested row out of range",
            "the MyNotServingRegionExceptionWrapper class is not a real exception",
        ] {
            let err = server_error(tio(message, false), "checkAndMutate", "t1");
            assert_eq!(err.retry_class(), RetryClass::Fatal, "{message}");
            assert!(!err.to_string().contains("retryable"), "{err}");
        }
    }

    #[test]
    fn the_exception_class_is_the_one_a_message_starts_with() {
        for (message, class) in [
            (BUSY, Some("org.apache.hadoop.hbase.RegionTooBusyException")),
            ("RegionTooBusyException: busy", Some("RegionTooBusyException")),
            ("java.io.IOException", Some("java.io.IOException")),
            ("\n  org.apache.X: y", Some("org.apache.X")),
            ("t is disabled.", None),
            ("ns:t", None),
            ("t", None),
            ("Failed 1 action: org.apache.hadoop.hbase.NotServingRegionException: r: 1 time, servers with issues: h", None),
            ("tableName=t, state=ENABLED", None),
            ("", None),
            ("Org.Apache.X: y", None),
            ("org..X: y", None),
        ] {
            assert_eq!(exception_class(message), class, "{message:?}");
        }
        assert!(is_retryable_exception("NotServingRegionException"));
        assert!(!is_retryable_exception(
            "org.apache.hadoop.hbase.DoNotRetryIOException"
        ));
        assert_eq!(one_line("\n\n  first \r\n second"), "first");
        assert_eq!(one_line(""), "");
    }

    #[test]
    fn illegal_argument_and_application_errors_are_distinct() {
        let ia = thrift::Error::User(Box::new(TIllegalArgument::new(
            "Invalid scanner Id".to_owned(),
        )));
        assert!(matches!(
            server_error(ia, "getScannerRows", ""),
            Error::IllegalArgument { message } if message == "Invalid scanner Id"
        ));
        let app = thrift::Error::Application(ApplicationError::new(
            ApplicationErrorKind::InternalError,
            "bad filter",
        ));
        assert!(!is_connection_failure(&app));
        match server_error(app, "get", "t") {
            Error::Rejected { method, message } => {
                assert_eq!(method, "get");
                assert!(message.contains("bad filter"));
            }
            other => panic!("expected Rejected, got {other:?}"),
        }
    }

    #[test]
    fn out_of_step_replies_and_socket_failures_are_connection_failures() {
        let seq = thrift::Error::Application(ApplicationError::new(
            ApplicationErrorKind::BadSequenceId,
            "seq",
        ));
        assert!(is_connection_failure(&seq));
        let eof =
            thrift::Error::Transport(TransportError::new(TransportErrorKind::EndOfFile, "eof"));
        assert!(is_connection_failure(&eof));
        match Cause::thrift(&eof).error("gw:1") {
            Error::Transport { addr, source, peer } => {
                assert_eq!(addr, "gw:1");
                assert_eq!(peer, Peer::HBase);
                assert_eq!(source.kind(), io::ErrorKind::UnexpectedEof);
            }
            other => panic!("expected Transport, got {other:?}"),
        }
        let original = io::Error::new(io::ErrorKind::WouldBlock, "timed out");
        match Cause::io(&original).error("gw:1") {
            Error::Transport { source, .. } => assert_eq!(source.kind(), io::ErrorKind::WouldBlock),
            other => panic!("expected Transport, got {other:?}"),
        }
        let bad = thrift::Error::Protocol(ProtocolError::new(ProtocolErrorKind::BadVersion, "v"));
        assert!(is_connection_failure(&bad));
        assert!(matches!(
            Cause::thrift(&bad).error("gw:1"),
            Error::Protocol {
                peer: Peer::HBase,
                ..
            }
        ));
    }
}
