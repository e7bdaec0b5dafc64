//! The exceptions the emulated gateway raises, modelled on the Java ones a real HBase Thrift2
//! server turns into wire errors.
//!
//! A real gateway sends an `IOException` as `TIOError{message: e.getMessage(), canRetry}`
//! (canRetry is false for `DoNotRetryIOException` subclasses; `ThriftHBaseServiceHandler.
//! getTIOError`), a bad scanner id as `TIllegalArgument`, and any runtime exception (bad filter
//! string, empty row, inverted time range) as a Thrift `TApplicationException` INTERNAL_ERROR
//! whose message is only `Internal error processing <method>` (libthrift's `ProcessFunction`).
//!
//! What `getMessage()` returns depends on where the exception was raised. One raised by the
//! master or a region server crosses HBase's RPC as a `RemoteException`, whose message is the
//! class name, the server's message and its stack trace: `org.apache.hadoop.hbase.
//! TableNotFoundException: t\n\tat ...`. One raised inside the gateway's own HBase client (a
//! region lookup that finds no table, a disabled-table check) carries its bare message: `t`,
//! `t is disabled.`. The emulator reproduces both forms, less the stack trace.

use std::fmt;

use thrift::{ApplicationError, ApplicationErrorKind};

use percolator_thrift::hbase::{TIOError, TIllegalArgument};

const PKG: &str = "org.apache.hadoop.hbase";

/// One failed request, as the gateway would report it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerError {
    /// An `IOException` (subclass named by `class`): sent as `TIOError`.
    Io {
        class: String,
        message: String,
        do_not_retry: bool,
        /// Raised by a master or region server (the wire message names the class), not by the
        /// gateway's own client (the wire message is the bare message).
        remote: bool,
    },
    /// Sent as `TIllegalArgument` (only scanner calls declare it).
    IllegalArgument(String),
    /// A runtime exception inside the gateway: `TApplicationException` INTERNAL_ERROR.
    Internal(String),
}

pub type ServerResult<T> = Result<T, ServerError>;

impl ServerError {
    fn io(class: impl Into<String>, message: impl Into<String>, do_not_retry: bool) -> Self {
        ServerError::Io {
            class: class.into(),
            message: message.into(),
            do_not_retry,
            remote: true,
        }
    }

    /// The same exception raised inside the gateway's own HBase client, so its wire message is
    /// the bare message (see the module doc).
    pub fn in_gateway(self) -> Self {
        match self {
            ServerError::Io {
                class,
                message,
                do_not_retry,
                ..
            } => ServerError::Io {
                class,
                message,
                do_not_retry,
                remote: false,
            },
            other => other,
        }
    }

    /// `org.apache.hadoop.hbase.<class>`, a `DoNotRetryIOException` subclass.
    fn hbase(class: &str, message: impl Into<String>) -> Self {
        Self::io(format!("{PKG}.{class}"), message, true)
    }

    /// As the master reports it (admin calls that run a procedure). Data calls and the admin
    /// calls the gateway's client answers itself see [`ServerError::in_gateway`]'s form.
    pub fn table_not_found(table: &impl fmt::Display) -> Self {
        Self::hbase("TableNotFoundException", table.to_string())
    }

    pub fn table_exists(table: &impl fmt::Display) -> Self {
        Self::hbase("TableExistsException", table.to_string())
    }

    /// A data call on a disabled table: the gateway's client refuses it before any RPC.
    pub fn table_disabled(table: &impl fmt::Display) -> Self {
        Self::hbase("TableNotEnabledException", format!("{table} is disabled.")).in_gateway()
    }

    /// `disable` on a disabled table, from the master's procedure pre-flight check.
    pub fn table_not_enabled(table: &impl fmt::Display) -> Self {
        Self::hbase("TableNotEnabledException", table.to_string())
    }

    /// `truncate` on an enabled table, from the master.
    pub fn table_not_disabled(table: &impl fmt::Display) -> Self {
        Self::hbase("TableNotDisabledException", table.to_string())
    }

    /// `delete` on an enabled table: the master's `checkTableModifiable` words it this way.
    pub fn table_not_disabled_for_delete(table: &impl fmt::Display) -> Self {
        Self::hbase(
            "TableNotDisabledException",
            format!("Not DISABLED; tableName={table}, state=ENABLED"),
        )
    }

    /// `enable` on an enabled table: the gateway's client checks the table state itself.
    pub fn table_already_enabled(table: &impl fmt::Display) -> Self {
        Self::hbase(
            "TableNotDisabledException",
            format!("tableName={table}, state=ENABLED"),
        )
        .in_gateway()
    }

    pub fn no_such_family(message: String) -> Self {
        Self::hbase("regionserver.NoSuchColumnFamilyException", message)
    }

    pub fn invalid_family_operation(message: String) -> Self {
        Self::hbase("InvalidFamilyOperationException", message)
    }

    pub fn namespace_not_found(ns: &str) -> Self {
        Self::hbase("NamespaceNotFoundException", ns)
    }

    pub fn namespace_exists(ns: &str) -> Self {
        Self::hbase("NamespaceExistException", ns)
    }

    pub fn constraint(message: String) -> Self {
        Self::hbase("constraint.ConstraintException", message)
    }

    pub fn do_not_retry(message: impl Into<String>) -> Self {
        Self::hbase("DoNotRetryIOException", message)
    }

    /// A plain `java.io.IOException` thrown by the gateway's own client (argument checks such
    /// as `Get.readVersions`): retryable, and bare on the wire.
    pub fn plain_io(message: impl Into<String>) -> Self {
        Self::io("java.io.IOException", message, false).in_gateway()
    }

    /// `RowMutations.add` rejecting a mutation for another row (not a DoNotRetry subclass).
    pub fn wrong_row(message: String) -> Self {
        Self::io(format!("{PKG}.client.WrongRowIOException"), message, false)
    }

    /// `failed` actions of a batch failed with `cause` (the first one) and the others were
    /// applied. HBase 2.x sends putMultiple, deleteMultiple, mutateRow and checkAndMutate
    /// through its client's batch path, which reports this way, from inside the gateway (bare
    /// message, retryable). `server` is `host,port,startcode`, or `null` when no region was
    /// found (a missing table).
    pub fn retries_exhausted(failed: usize, cause: &ServerError, server: Option<&str>) -> Self {
        let plural = if failed == 1 { "" } else { "s" };
        Self::io(
            format!("{PKG}.client.RetriesExhaustedWithDetailsException"),
            format!(
                "Failed {failed} action{plural}: {}: {failed} time{plural}, servers with issues: {}",
                cause.wire_message(),
                server.unwrap_or("null")
            ),
            false,
        )
        .in_gateway()
    }

    /// Whether the table named in the call does not exist.
    pub fn is_table_not_found(&self) -> bool {
        matches!(self, ServerError::Io { class, .. } if class.ends_with(".TableNotFoundException"))
    }

    /// The text a client receives for this error.
    pub fn wire_message(&self) -> String {
        match self {
            ServerError::Io {
                class,
                message,
                remote: true,
                ..
            } => format!("{class}: {message}"),
            ServerError::Io { message, .. } | ServerError::IllegalArgument(message) => {
                message.clone()
            }
            ServerError::Internal(detail) => detail.clone(),
        }
    }

    /// Something a real server does but this emulator deliberately does not.
    pub fn unsupported(what: impl fmt::Display) -> Self {
        Self::do_not_retry(format!(
            "{what} is not supported by the in-memory HBase emulator"
        ))
    }

    pub fn internal(message: impl Into<String>) -> Self {
        ServerError::Internal(message.into())
    }

    /// The error as the generated processor expects it from a handler of `method`.
    pub fn into_thrift(self, method: &str) -> thrift::Error {
        match self.into_declared(method) {
            Declared::Io(e) => thrift::Error::User(Box::new(e)),
            Declared::IllegalArgument(e) => thrift::Error::User(Box::new(e)),
            Declared::Application(e) => thrift::Error::Application(e),
        }
    }

    /// The error as one of the wire forms a reply to `method` can carry.
    pub fn into_declared(self, method: &str) -> Declared {
        match &self {
            ServerError::Io { do_not_retry, .. } => Declared::Io(TIOError {
                message: Some(self.wire_message()),
                can_retry: Some(!do_not_retry),
            }),
            ServerError::IllegalArgument(message) => Declared::IllegalArgument(TIllegalArgument {
                message: Some(message.clone()),
            }),
            ServerError::Internal(detail) => {
                // The real gateway logs the cause and tells the client nothing more.
                tracing::debug!(method, %detail, "internal error");
                Declared::Application(ApplicationError::new(
                    ApplicationErrorKind::InternalError,
                    format!("Internal error processing {method}"),
                ))
            }
        }
    }
}

impl fmt::Display for ServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerError::Io { class, message, .. } => write!(f, "{class}: {message}"),
            ServerError::IllegalArgument(m) => write!(f, "illegal argument: {m}"),
            ServerError::Internal(m) => write!(f, "internal error: {m}"),
        }
    }
}

/// What a reply carries for a failed call.
pub enum Declared {
    Io(TIOError),
    IllegalArgument(TIllegalArgument),
    Application(ApplicationError),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_errors_name_the_java_class_and_are_not_retryable() {
        let Declared::Io(e) = ServerError::table_not_found(&"ns:t").into_declared("m") else {
            panic!("expected TIOError");
        };
        assert_eq!(
            e.message.as_deref(),
            Some("org.apache.hadoop.hbase.TableNotFoundException: ns:t")
        );
        assert_eq!(e.can_retry, Some(false));
    }

    #[test]
    fn errors_raised_in_the_gateway_carry_the_bare_message() {
        let error = ServerError::table_not_found(&"ns:t").in_gateway();
        let Declared::Io(e) = error.into_declared("get") else {
            panic!("expected TIOError");
        };
        assert_eq!(e.message.as_deref(), Some("ns:t"));
        assert_eq!(e.can_retry, Some(false));
    }

    #[test]
    fn plain_io_errors_are_retryable_like_on_the_real_gateway() {
        let Declared::Io(e) = ServerError::plain_io("x").into_declared("get") else {
            panic!("expected TIOError");
        };
        assert_eq!(e.can_retry, Some(true));
    }

    #[test]
    fn runtime_failures_are_internal_application_errors() {
        match ServerError::internal("Row length is 0").into_thrift("put") {
            thrift::Error::Application(a) => {
                assert_eq!(a.kind, ApplicationErrorKind::InternalError);
                assert_eq!(a.message, "Internal error processing put");
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}
