//! The `hbase::lost_reply` failpoint (build with `--features failpoints`): a non-idempotent
//! call whose reply is lost after the gateway applied it is reported as `OutcomeUnknown`.
#![cfg(feature = "failpoints")]

mod common;

use common::Gateway;
use percolator::emulator::EmulatorConfig;
use percolator::hbase::{CheckAndMutate, CompareOp, Get, Increment, Put};
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

/// checkAndMutates pipelined on one connection (`check_and_mutate_all`): once the first reply
/// is lost, none of the others can be read either, and none is sent again.
#[test]
fn a_lost_reply_in_a_pipelined_batch_leaves_every_call_undetermined_and_none_resent() {
    let scenario = fail::FailScenario::setup();
    let gw = Gateway::emulator(EmulatorConfig::default());
    let t = gw.table_f(1);
    let c = gw.client();
    let cams: Vec<CheckAndMutate> = (0..3)
        .map(|i| {
            let row = format!("p{i}");
            CheckAndMutate::new(row.clone(), "f", "n", CompareOp::Equal, "")
                .put(Put::new(row).add("f", "n", "1"))
        })
        .collect();
    let calls: Vec<(&str, &CheckAndMutate)> = cams.iter().map(|cam| (t.name(), cam)).collect();
    fail::cfg("hbase::lost_reply", "1*return").unwrap();
    let results = c.check_and_mutate_all(&calls);
    fail::remove("hbase::lost_reply");
    for result in &results {
        assert!(
            matches!(
                result,
                Err(Error::OutcomeUnknown {
                    method: "checkAndMutate",
                    ..
                })
            ),
            "{result:?}"
        );
    }
    // Applied once each: sending any again would have met its own cell and failed.
    let again = c.check_and_mutate_all(&calls);
    assert!(again.iter().all(|r| matches!(r, Ok(false))), "{again:?}");
    drop(t);
    scenario.teardown();
}
