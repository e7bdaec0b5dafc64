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

/// `percolator locks` (and doctor's lock check) while regions move: the
/// `hbase::region_away::*` failpoints make the gateway report the lock family's scan and the
/// owner's liveness read in transition a few times. The listing and the owner lookup wait it
/// out, and find the lock a dead client left, with its owner looked up.
#[test]
fn listing_locks_waits_out_a_region_in_transition() {
    let scenario = fail::FailScenario::setup();
    let env = Env::start();
    let table = env.table("locks_moving");
    let crashing = env.client_with(
        env.options()
            .to_builder()
            .crash_injector(std::sync::Arc::new(|s| s == Seam::BeforePrimaryCommit))
            .build(),
    );
    let mut txn = crashing.begin().unwrap();
    txn.set(&table, "r", "f", "q", b"v".to_vec()).unwrap();
    assert!(
        txn.commit().is_err(),
        "the client dies before its commit point"
    );

    let away = [
        "hbase::region_away::openScanner",
        "hbase::region_away::getScannerResults",
        "hbase::region_away::get",
    ];
    for failpoint in away {
        fail::cfg(failpoint, "2*return").unwrap();
    }
    let mut locks = percolator::locks::list_locks(&env.hbase, &env.schema, &table)
        .expect("the scan waited out the transition");
    assert_eq!(locks.len(), 1, "{locks:?}");
    assert_eq!(locks[0].owner, crashing.owner_id());
    percolator::locks::check_owners(&env.hbase, &env.liveness, &mut locks)
        .expect("the owner's read waited out the transition");
    assert!(locks[0].alive.is_some());
    for failpoint in away {
        fail::cfg(failpoint, "off").unwrap();
    }
    scenario.teardown();
}
