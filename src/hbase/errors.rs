//! Mapping of Thrift failures into the crate's [`Error`], keeping what callers classify on.
//!
//! The gateway reports missing tables and families only inside `TIOError.message` (the Java
//! exception's message), so those two are recognised by the Java class names they carry.

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
}

impl Cause {
    pub(crate) fn io(error: &io::Error) -> Cause {
        Cause::Io(error.kind(), error.to_string())
    }

    pub(crate) fn thrift(error: &thrift::Error) -> Cause {
        match error {
            thrift::Error::Transport(t) => Cause::Io(io_kind(t.kind), t.message.clone()),
            // Its `Display` leaves the message out.
            thrift::Error::Application(app) => Cause::Protocol(format!("{app}: {}", app.message)),
            other => Cause::Protocol(other.to_string()),
        }
    }

    /// The caller's error for a call on the connection at `addr`.
    pub(crate) fn error(&self, addr: &str) -> Error {
        match self {
            Cause::Io(kind, message) => Error::Transport {
                peer: Peer::HBase,
                addr: addr.to_owned(),
                source: io::Error::new(*kind, message.clone()),
            },
            Cause::Protocol(message) => Error::Protocol {
                peer: Peer::HBase,
                message: message.clone(),
            },
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
        Error::ServerIo { message, can_retry }
    }
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
            Error::ServerIo { message, can_retry } => {
                assert!(message.contains("busy"));
                assert!(can_retry);
            }
            other => panic!("expected ServerIo, got {other:?}"),
        }
        let fatal = io_error("TableNotEnabledException: t".into(), false, "t");
        assert_eq!(fatal.retry_class(), RetryClass::Fatal);
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
