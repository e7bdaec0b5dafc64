//! Faults the protocol must survive, always run (no feature needed): crashes injected at run
//! time at every seam (here), lost replies and the commit timestamp's place (`replies`),
//! damaged records and bad input (`damage`), liveness and heartbeats (`liveness`), and the
//! client's retries, async facade and RPC counters (`client`). The helpers below are shared:
//! most scripts commit p = s = "1" over a table seeded with p = s = "0", p being the primary.

// A test crate's submodules resolve beside its root file; these live in tests/txn_faults/.
#[path = "txn_faults/client.rs"]
mod client;
#[path = "txn_faults/damage.rs"]
mod damage;
#[path = "txn_faults/gateways.rs"]
mod gateways;
#[path = "txn_faults/liveness.rs"]
mod liveness;
#[path = "txn_faults/replies.rs"]
mod replies;
mod txn_support;

use std::sync::Arc;

use percolator::format::WriteKind;
use percolator::txn::{Seam, Transaction};
use percolator::Client;
use txn_support::crash::crash_scenario;
use txn_support::{Env, FAMILY};

fn value(v: &str) -> Option<Vec<u8>> {
    Some(v.as_bytes().to_vec())
}

fn get(txn: &Transaction, table: &str, row: &str) -> Option<Vec<u8>> {
    txn.get(table, row, FAMILY, "q").unwrap()
}

/// A table with rows p and s committed at "0" (their lock cells exist, so every prewrite CAS
/// is applied at the first try).
fn seeded(env: &Env) -> String {
    let t = env.table("faults");
    let client = env.client();
    client
        .run(|txn| {
            txn.set(&t, "p", FAMILY, "q", "0")?;
            txn.set(&t, "s", FAMILY, "q", "0")
        })
        .unwrap();
    client.shutdown();
    t
}

/// Commits p = s = "1" through `client`; p is the primary.
fn write_p_and_s(client: &Client, t: &str) -> percolator::Result<u64> {
    let mut txn = client.begin()?;
    txn.set(t, "p", FAMILY, "q", "1")?;
    txn.set(t, "s", FAMILY, "q", "1")?;
    txn.commit()
}

/// Reads p and s in one snapshot with a fresh client (resolving what it meets).
fn read_p_and_s(env: &Env, t: &str) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
    let reader = env.client();
    let txn = reader.begin().unwrap();
    let both = (get(&txn, t, "p"), get(&txn, t, "s"));
    reader.shutdown();
    both
}

fn has_put_record(env: &Env, t: &str, row: &str, commit_ts: u64) -> bool {
    env.writes(&env.key(t, row))
        .iter()
        .any(|(v, r)| *v == commit_ts as i64 && r.kind == WriteKind::Put)
}

// Crashes injected at run time (the failpoint suite runs the same scenario).

fn injected_crash(seam: Seam) {
    let env = Env::start();
    crash_scenario(&env, seam, |options| {
        env.client_with(
            options
                .to_builder()
                .crash_injector(Arc::new(move |at| at == seam))
                .build(),
        )
    });
}

#[test]
fn injected_crash_after_primary_prewrite_rolls_back() {
    injected_crash(Seam::AfterPrimaryPrewrite);
}

#[test]
fn injected_crash_after_secondary_prewrite_rolls_back() {
    injected_crash(Seam::AfterSecondaryPrewrite);
}

#[test]
fn injected_crash_before_primary_commit_rolls_back() {
    injected_crash(Seam::BeforePrimaryCommit);
}

#[test]
fn injected_crash_after_primary_commit_rolls_forward() {
    injected_crash(Seam::AfterPrimaryCommit);
}

#[test]
fn injected_crash_between_secondary_commits_rolls_forward() {
    injected_crash(Seam::BetweenSecondaryCommits);
}
