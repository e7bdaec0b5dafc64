//! Crash at every protocol seam through the `fail` crate's failpoints (feature `failpoints`):
//! `cargo test --features failpoints --test txn_failpoints`. Failpoints are process-global, so
//! the seams run one after another in one test. The same scenarios with a runtime
//! `CrashInjector` are in txn_faults.rs and run without the feature.
#![cfg(feature = "failpoints")]

mod txn_support;

use percolator::txn::{setup, LivenessConfig, Seam};
use txn_support::crash::crash_scenario;
use txn_support::{unique, Env};

/// Every seam runs even when an earlier one fails, so one report names all failing seams.
#[test]
fn a_client_dying_at_any_seam_leaves_all_or_nothing() {
    let failed: Vec<&str> = Seam::ALL
        .into_iter()
        .filter(|&seam| {
            let run = std::panic::catch_unwind(|| {
                let scenario = fail::FailScenario::setup();
                let env = Env::start();
                crash_scenario(&env, seam, |options| {
                    fail::cfg(seam.name(), "return").unwrap();
                    env.client_with(options)
                });
                scenario.teardown();
            });
            run.is_err()
        })
        .map(Seam::name)
        .collect();
    assert!(failed.is_empty(), "failing seams: {failed:?}");
}

/// "1*return" fires once: the first secondary to finish its prewrite kills the client, the
/// other secondary's prewrite has already been sent in parallel.
#[test]
fn a_failpoint_that_fires_once_kills_only_the_first_transaction() {
    let scenario = fail::FailScenario::setup();
    let env = Env::start();
    crash_scenario(&env, Seam::AfterSecondaryPrewrite, |options| {
        fail::cfg(Seam::AfterSecondaryPrewrite.name(), "1*return").unwrap();
        env.client_with(options)
    });
    let t = env.table("after");
    let client = env.client();
    client
        .run(|txn| txn.set(&t, "k", "f", "q", "v"))
        .expect("the failpoint fired once; later transactions commit");
    client.shutdown();
    scenario.teardown();
}

/// A service's set-up at start (its tables, the liveness table) meets a region in transition,
/// as one replaced after a crash does: the `hbase::region_away::*` failpoints make the gateway
/// report one for the meta row's write and for the master's `tableExists`. Each set-up step
/// waits it out and the table is then usable.
#[test]
fn set_up_waits_out_a_region_in_transition() {
    let scenario = fail::FailScenario::setup();
    let env = Env::start();

    fail::cfg("hbase::region_away::put", "3*return").unwrap();
    let table = unique("setup_moving");
    setup::create_table(&env.hbase, &env.schema, &table, &["f"]).expect("waited out");
    env.created(&table);

    fail::cfg("hbase::region_away::tableExists", "3*return").unwrap();
    let liveness = LivenessConfig {
        table: unique("setup_liveness"),
        ..env.liveness.clone()
    };
    setup::create_liveness_table(&env.hbase, &liveness).expect("waited out");
    env.created(&liveness.table);
    fail::cfg("hbase::region_away::put", "off").unwrap();
    fail::cfg("hbase::region_away::tableExists", "off").unwrap();

    let client = env.client_with(env.options().to_builder().liveness(liveness).build());
    client
        .run(|t| t.set(&table, "r", "f", "q", "v"))
        .expect("the table set up through the transition takes transactions");
    let txn = client.begin().unwrap();
    assert_eq!(txn.get(&table, "r", "f", "q").unwrap(), Some(b"v".to_vec()));
    client.shutdown();
    scenario.teardown();
}
