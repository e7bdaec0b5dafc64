//! The `hbase::lost_reply` failpoint (build with `--features failpoints`): a non-idempotent
//! call whose reply is lost after the gateway applied it is reported as `OutcomeUnknown`. On the
//! emulator, or the real gateway named by `HBASE_THRIFT=host:port` (the failpoint is in the
//! client, so any gateway serves).
#![cfg(feature = "failpoints")]

mod common;

use common::proxy::Proxy;
use common::Gateway;
use percolator::hbase::{CheckAndMutate, CompareOp, Get, Increment, Put};
use percolator::{Error, HBaseClient, HBaseConfig, RetryClass};

#[test]
fn lost_reply_failpoint_fires_only_for_non_idempotent_calls() {
    let scenario = fail::FailScenario::setup();
    let gw = Gateway::from_env();
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
/// is lost, none of the others can be read either, and none is sent again. The first was
/// applied (its reply had started); whether the gateway applied the others is unknown, since
/// it may stop serving a connection whose client went away: the emulator applies every request
/// that arrived, a real HBase gateway stops at the first reply it cannot write. So "never sent
/// again" is checked on the wire, through a proxy: the failed batch put exactly as many request
/// bytes on it as the same batch sent again afterwards.
#[test]
fn a_lost_reply_in_a_pipelined_batch_leaves_every_call_undetermined_and_none_resent() {
    let scenario = fail::FailScenario::setup();
    let gw = Gateway::from_env();
    let t = gw.table_f(1);
    let proxy = Proxy::start(gw.addr());
    // All three on one connection (the default spreads a batch over connections).
    let config = HBaseConfig::new(proxy.addr()).pipeline_per_connection(3);
    let c = HBaseClient::connect(config).expect("connect");
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
    let lost_batch = proxy.request_bytes();
    assert!(lost_batch > 0, "the batch went out");

    let again = c.check_and_mutate_all(&calls);
    assert_eq!(
        proxy.request_bytes() - lost_batch,
        lost_batch,
        "the lost batch was sent exactly once"
    );
    assert!(
        matches!(again[0], Ok(false)),
        "the first was applied before its reply was lost: {again:?}"
    );
    assert!(again.iter().all(Result::is_ok), "{again:?}");
    for (i, again) in again.iter().enumerate() {
        let row = format!("p{i}");
        let stored = c.get(t.name(), &Get::new(row.as_str())).unwrap();
        assert_eq!(
            stored.value(b"f", b"n"),
            Some(&b"1"[..]),
            "{row}: {again:?}"
        );
    }
    drop(t);
    scenario.teardown();
}
