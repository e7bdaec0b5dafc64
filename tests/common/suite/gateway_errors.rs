//! The exact error forms of the real Thrift2 gateway, measured on HBase 2.6.1 (each one was a
//! difference of the emulator before).
//!
//! `ThriftHBaseServiceHandler.getTIOError` sends `TIOError{message: e.getMessage(), canRetry:
//! !(e instanceof DoNotRetryIOException)}`. An exception the master or a region server raised
//! arrives as a `RemoteException`, whose message starts with the class name; one raised by the
//! gateway's own HBase client (region lookup, disabled-table check, argument checks) carries its
//! bare message. Runtime exceptions become libthrift's `TApplicationException(INTERNAL_ERROR,
//! "Internal error processing <method>")`, with no detail.

use percolator::hbase::{
    CheckAndMutate, CompareOp, Delete, FamilyDescriptor, Get, Increment, Put, RowMutations, Scan,
    TimeRange,
};
use percolator::{Error, HBaseClient, RetryClass};

use crate::common::gateway::unique_name;
use crate::common::Gateway;

const PKG: &str = "org.apache.hadoop.hbase";

fn first_page(c: &HBaseClient, table: &str, scan: &Scan) -> percolator::Result<()> {
    let mut scanner = c.scan(table, scan)?;
    scanner.next().transpose().map(|_| ())
}

#[track_caller]
fn assert_io(err: Error, message: &str, can_retry: bool) {
    match err {
        Error::ServerIo {
            message: m,
            can_retry: r,
            ..
        } => {
            assert_eq!(m, message);
            assert_eq!(r, can_retry, "canRetry of {m}");
        }
        other => panic!("expected TIOError {message:?}, got {other:?}"),
    }
}

#[track_caller]
fn assert_remote(err: Error, class: &str, message_start: &str) {
    let text = match &err {
        Error::ServerIo {
            message, can_retry, ..
        } => {
            assert!(!can_retry, "{class} is a DoNotRetryIOException");
            message.clone()
        }
        Error::TableNotFound { message, .. } => message.clone(),
        other => panic!("expected {class}, got {other:?}"),
    };
    let prefix = format!("{PKG}.{class}: {message_start}");
    assert!(
        text.starts_with(&prefix),
        "{text:?} should start {prefix:?}"
    );
}

#[track_caller]
fn assert_internal(err: Error, method: &str) {
    match err {
        Error::Rejected { method: m, message } => {
            assert_eq!(m, method);
            assert_eq!(
                message,
                format!("InternalError: Internal error processing {method}")
            );
        }
        other => panic!("expected INTERNAL_ERROR from {method}, got {other:?}"),
    }
}

/// Data calls and the admin calls the gateway answers from its own client fail with the bare
/// table name, which the client still classifies; the master's procedures name the class.
pub fn missing_table_forms(gw: &Gateway) {
    let name = unique_name("missing");
    let c = gw.client();
    let a = c.admin();
    let bare = [
        c.get(&name, &Get::new("r")).unwrap_err(),
        c.put(&name, &Put::new("r").add("f", "q", "v")).unwrap_err(),
        c.get_many(&name, &[Get::new("r")]).unwrap_err(),
        c.increment(&name, &Increment::new("r").add("f", "n", 1))
            .unwrap_err(),
        c.scan_results(&name, &Scan::new(), 5).unwrap_err(),
        first_page(c, &name, &Scan::new()).unwrap_err(),
        a.table_descriptor(&name).unwrap_err(),
        a.is_table_enabled(&name).unwrap_err(),
        a.is_table_disabled(&name).unwrap_err(),
        a.enable_table(&name).unwrap_err(),
        a.region_location(&name, b"r", false).unwrap_err(),
    ];
    for err in bare {
        match &err {
            Error::TableNotFound { table, message } => {
                assert_eq!(table, &name);
                assert_eq!(message, &name, "the gateway sends the bare name");
            }
            other => panic!("expected TableNotFound, got {other:?}"),
        }
        assert_eq!(err.retry_class(), RetryClass::Fatal);
    }
    for err in [
        a.disable_table(&name).unwrap_err(),
        a.delete_table(&name).unwrap_err(),
        a.truncate_table(&name, false).unwrap_err(),
        a.add_family(&name, &FamilyDescriptor::new("g"))
            .unwrap_err(),
        a.modify_family(&name, &FamilyDescriptor::new("f"))
            .unwrap_err(),
    ] {
        assert!(matches!(err, Error::TableNotFound { .. }), "{err:?}");
        assert_remote(err, "TableNotFoundException", &name);
    }
    // Availability and region listings answer, they do not fail.
    assert!(!a.is_table_available(&name).unwrap());
    assert!(a.region_locations(&name).unwrap().is_empty());
}

/// Each state check words its error in its own way.
pub fn disabled_and_enabled_table_forms(gw: &Gateway) {
    let t = gw.table_f(1);
    let name = t.name();
    let c = gw.client();
    let a = c.admin();
    a.truncate_table(name, false)
        .map(|_| panic!("truncating an enabled table must fail"))
        .unwrap_or_else(|e| assert_remote(e, "TableNotDisabledException", name));
    assert_remote(
        a.delete_table(name).unwrap_err(),
        "TableNotDisabledException",
        &format!("Not DISABLED; tableName={name}, state=ENABLED"),
    );
    assert_io(
        a.enable_table(name).unwrap_err(),
        &format!("tableName={name}, state=ENABLED"),
        false,
    );

    a.disable_table(name).unwrap();
    let disabled = format!("{name} is disabled.");
    assert_io(c.get(name, &Get::new("r")).unwrap_err(), &disabled, false);
    assert_io(
        c.put(name, &Put::new("r").add("f", "q", "v")).unwrap_err(),
        &disabled,
        false,
    );
    assert_io(
        first_page(c, name, &Scan::new()).unwrap_err(),
        &disabled,
        false,
    );
    assert_remote(
        a.disable_table(name).unwrap_err(),
        "TableNotEnabledException",
        name,
    );
    // Its regions are closed.
    assert!(!a.is_table_available(name).unwrap());
    a.enable_table(name).unwrap();
    assert!(a.is_table_available(name).unwrap());
}

/// Runtime failures carry no detail, only the method.
pub fn runtime_failures_name_only_the_method(gw: &Gateway) {
    let t = gw.table_f(1);
    let c = gw.client();
    assert_internal(c.get(t.name(), &Get::new("")).unwrap_err(), "get");
    assert_internal(
        c.put(t.name(), &Put::new("").add("f", "q", "v"))
            .unwrap_err(),
        "put",
    );
    assert_internal(c.put(t.name(), &Put::new("r")).unwrap_err(), "put");
    assert_internal(
        c.get(t.name(), &Get::new("r").filter("Nope(("))
            .unwrap_err(),
        "get",
    );
    assert_internal(
        c.get(t.name(), &Get::new("r").time_range(TimeRange::new(5, 1)))
            .unwrap_err(),
        "get",
    );
    // A bad scan is refused when opened, before any region is touched.
    assert_internal(
        c.open_scanner(t.name(), &Scan::new().filter("Nope(("))
            .unwrap_err(),
        "openScanner",
    );
}

/// `Get.readVersions` throws a plain, retryable IOException inside the gateway.
pub fn max_versions_zero_is_the_gateways_io_error(gw: &Gateway) {
    let t = gw.table_f(1);
    let err = gw
        .client()
        .get(t.name(), &Get::new("r").max_versions(0))
        .unwrap_err();
    assert_io(err, "versions must be positive", true);
}

/// Region scanners open lazily: a missing family is reported by every page request, not by
/// `openScanner`.
pub fn scanner_errors_wait_for_the_first_page(gw: &Gateway) {
    let t = gw.table_f(1);
    let c = gw.client();
    let id = c
        .open_scanner(t.name(), &Scan::new().family("nope"))
        .expect("openScanner does not look at the families");
    for _ in 0..2 {
        match c.scanner_rows(id, 1).unwrap_err() {
            Error::FamilyNotFound { family, .. } => assert_eq!(family, "nope"),
            other => panic!("expected FamilyNotFound, got {other:?}"),
        }
    }
    c.close_scanner(id).unwrap();
}

/// putMultiple, deleteMultiple, mutateRow and checkAndMutate go through the HBase client's
/// batch path, which wraps failures in a retryable RetriesExhaustedWithDetailsException raised
/// in the gateway: `Failed N action(s): <cause>: N time(s), servers with issues: <server>`.
pub fn batch_calls_report_retries_exhausted(gw: &Gateway) {
    let name = unique_name("missing");
    let c = gw.client();
    let put = |row: &str| Put::new(row).add("f", "q", "v");
    let cam = CheckAndMutate::new("r", "f", "q", CompareOp::Equal, "").put(put("r"));
    let batch = [
        (c.put_many(&name, &[put("a"), put("b"), put("c")]), 3),
        (
            c.delete_many(&name, &[Delete::new("a"), Delete::new("b")]),
            2,
        ),
        (
            c.mutate_row(&name, &RowMutations::new("r").put(put("r"))),
            1,
        ),
        (c.check_and_mutate(&name, &cam).map(|_| ()), 1),
    ];
    for (result, n) in batch {
        let plural = if n == 1 { "" } else { "s" };
        let expected = format!(
            "Failed {n} action{plural}: {name}: {n} time{plural}, servers with issues: null"
        );
        match result.unwrap_err() {
            // Classified by its cause: retrying cannot make the table exist.
            Error::TableNotFound { table, message } => {
                assert_eq!(table, name);
                assert_eq!(message, expected);
            }
            other => panic!("expected TableNotFound ({expected}), got {other:?}"),
        }
    }
    // checkAndPut and checkAndDelete do not take that path: the bare name.
    match c
        .check_and_put(&name, b"r", b"f", b"q", None, &put("r"))
        .unwrap_err()
    {
        Error::TableNotFound { message, .. } => assert_eq!(message, name),
        other => panic!("expected TableNotFound, got {other:?}"),
    }

    // A region's error keeps its class inside the wrapper, and names the server.
    let t = gw.table_f(1);
    let bad = CheckAndMutate::new("r", "f", "q", CompareOp::Equal, "")
        .put(Put::new("r").add("nope", "q", "v"));
    for err in [
        c.check_and_mutate(t.name(), &bad).unwrap_err(),
        c.put_many(t.name(), &[Put::new("r").add("nope", "q", "v"), put("s")])
            .unwrap_err(),
    ] {
        match err {
            Error::FamilyNotFound {
                family, message, ..
            } => {
                assert_eq!(family, "nope");
                let prefix =
                    format!("Failed 1 action: {PKG}.regionserver.NoSuchColumnFamilyException: ");
                assert!(message.starts_with(&prefix), "{message}");
                assert!(!message.ends_with("servers with issues: null"), "{message}");
            }
            other => panic!("expected FamilyNotFound, got {other:?}"),
        }
    }
    // The batch's other action was applied.
    assert!(!c.get(t.name(), &Get::new("s")).unwrap().cells.is_empty());
}
