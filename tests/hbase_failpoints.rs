//! The `hbase::lost_reply` failpoint (build with `--features failpoints`): a non-idempotent
//! call whose reply is lost after the gateway applied it is reported as `OutcomeUnknown`.
#![cfg(feature = "failpoints")]

mod common;

use common::Gateway;
use percolator::emulator::EmulatorConfig;
use percolator::hbase::{Get, Increment, Put};
use percolator::{Error, RetryClass};

#[test]
fn lost_reply_failpoint_fires_only_for_non_idempotent_calls() {
    let scenario = fail::FailScenario::setup();
    let gw = Gateway::emulator(EmulatorConfig::default());
    let t = gw.table_f(1);
    let c = gw.client();
    fail::cfg("hbase::lost_reply", "return").unwrap();

    c.put(t.name(), &Put::new("r").add("f", "q", "v"))
        .expect("idempotent calls are not armed");
    assert!(c.get(t.name(), &Get::new("r")).is_ok());

    let err = c
        .increment(t.name(), &Increment::new("r").add("f", "n", 1))
        .unwrap_err();
    assert_eq!(err.retry_class(), RetryClass::Undetermined);
    assert!(
        matches!(
            err,
            Error::OutcomeUnknown {
                method: "increment",
                ..
            }
        ),
        "{err:?}"
    );

    let put = Put::new("cas").add("f", "q", "1");
    let err = c
        .check_and_put(t.name(), b"cas", b"f", b"q", None, &put)
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::OutcomeUnknown {
                method: "checkAndPut",
                ..
            }
        ),
        "{err:?}"
    );

    fail::remove("hbase::lost_reply");
    let got = c.get(t.name(), &Get::new("r")).unwrap();
    assert_eq!(
        got.value(b"f", b"n"),
        Some(&1i64.to_be_bytes()[..]),
        "applied once, not replayed"
    );
    assert_eq!(
        c.get(t.name(), &Get::new("cas")).unwrap().value(b"f", b"q"),
        Some(&b"1"[..])
    );
    drop(t);
    scenario.teardown();
}
