//! Crash at every protocol seam through the `fail` crate's failpoints (feature `failpoints`):
//! `cargo test --features failpoints --test txn_failpoints`. Failpoints are process-global, so
//! the seams run one after another in one test. The same scenarios with a runtime
//! `CrashInjector` are in txn_faults.rs and run without the feature.
#![cfg(feature = "failpoints")]

mod txn_support;

use percolator::txn::Seam;
use txn_support::crash::crash_scenario;
use txn_support::Env;

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
