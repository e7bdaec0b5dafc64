//! The exceptions the emulated gateway raises, modelled on the Java ones a real HBase Thrift2
//! server turns into wire errors.
//!
//! A real gateway sends an `IOException` as `TIOError{message, canRetry}` (canRetry is false for
//! `DoNotRetryIOException` subclasses), a bad scanner id as `TIllegalArgument`, and any runtime
//! exception (bad filter string, empty row, null value) as a Thrift `TApplicationException`
//! INTERNAL_ERROR. Messages start with the Java class name so clients can classify them.

use std::fmt;

use thrift::{ApplicationError, ApplicationErrorKind};

use crate::thrift::hbase::{TIOError, TIllegalArgument};

const PKG: &str = "org.apache.hadoop.hbase";

/// One failed request, as the gateway would report it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerError {
    /// An `IOException` (subclass named by `class`): sent as `TIOError`.
    Io {
        class: String,
        message: String,
        do_not_retry: bool,
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
        }
    }

    /// `org.apache.hadoop.hbase.<class>`, a `DoNotRetryIOException` subclass.
    fn hbase(class: &str, message: impl Into<String>) -> Self {
        Self::io(format!("{PKG}.{class}"), message, true)
    }

    pub fn table_not_found(table: &impl fmt::Display) -> Self {
        Self::hbase("TableNotFoundException", table.to_string())
    }

    pub fn table_exists(table: &impl fmt::Display) -> Self {
        Self::hbase("TableExistsException", table.to_string())
    }

    pub fn table_not_enabled(table: &impl fmt::Display) -> Self {
        Self::hbase("TableNotEnabledException", format!("{table} is disabled."))
    }

    pub fn table_not_disabled(table: &impl fmt::Display) -> Self {
        Self::hbase("TableNotDisabledException", table.to_string())
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

    /// A plain `java.io.IOException`: the real gateway marks it retryable.
    pub fn plain_io(message: impl Into<String>) -> Self {
        Self::io("java.io.IOException", message, false)
    }

    /// `RowMutations.add` rejecting a mutation for another row (not a DoNotRetry subclass).
    pub fn wrong_row(message: String) -> Self {
        Self::io(format!("{PKG}.client.WrongRowIOException"), message, false)
    }

    /// A batch (putMultiple, deleteMultiple) in which some actions failed; the others were
    /// applied. Not a DoNotRetry subclass on a real gateway either.
    pub fn retries_exhausted(message: String) -> Self {
        Self::io(
            format!("{PKG}.client.RetriesExhaustedWithDetailsException"),
            message,
            false,
        )
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

    /// The error as the generated processor expects it from a handler.
    pub fn into_thrift(self) -> thrift::Error {
        match self.into_declared() {
            Declared::Io(e) => thrift::Error::User(Box::new(e)),
            Declared::IllegalArgument(e) => thrift::Error::User(Box::new(e)),
            Declared::Application(e) => thrift::Error::Application(e),
        }
    }

    /// The error as one of the wire forms a reply can carry.
    pub fn into_declared(self) -> Declared {
        match self {
            ServerError::Io {
                class,
                message,
                do_not_retry,
            } => Declared::Io(TIOError {
                message: Some(format!("{class}: {message}")),
                can_retry: Some(!do_not_retry),
            }),
            ServerError::IllegalArgument(message) => Declared::IllegalArgument(TIllegalArgument {
                message: Some(message),
            }),
            ServerError::Internal(message) => Declared::Application(ApplicationError::new(
                ApplicationErrorKind::InternalError,
                message,
            )),
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
        let Declared::Io(e) = ServerError::table_not_found(&"ns:t").into_declared() else {
            panic!("expected TIOError");
        };
        assert_eq!(
            e.message.as_deref(),
            Some("org.apache.hadoop.hbase.TableNotFoundException: ns:t")
        );
        assert_eq!(e.can_retry, Some(false));
    }

    #[test]
    fn plain_io_errors_are_retryable_like_on_the_real_gateway() {
        let Declared::Io(e) = ServerError::plain_io("x").into_declared() else {
            panic!("expected TIOError");
        };
        assert_eq!(e.can_retry, Some(true));
    }

    #[test]
    fn runtime_failures_are_internal_application_errors() {
        match ServerError::internal("Row length is 0").into_thrift() {
            thrift::Error::Application(a) => {
                assert_eq!(a.kind, ApplicationErrorKind::InternalError)
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}
