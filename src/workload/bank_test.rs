//! The bank test (a unit test: it drives the private workload module): accounts over two tables, 8 clients doing random transfers and dying at
//! random protocol seams (failpoints with `--features failpoints`, the runtime crash injector
//! otherwise) and coming back, 2 read-only auditors summing every balance at their snapshot.
//! The sum must be the same at every snapshot, balances must match the ledger, and no lock may
//! be left. About a minute by default; `BANK_SECONDS=N` runs it for N seconds.

#[cfg(not(feature = "failpoints"))]
use std::sync::Arc;
use std::time::Duration;

use crate::txn::{LivenessConfig, Seam};
use crate::workload::bank::{self, BankConfig};
use crate::workload::stack::Stack;

const CRASH_RATE: f64 = 0.005;

fn seconds() -> u64 {
    std::env::var("BANK_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(55)
}

#[test]
fn bank_transfers_keep_every_snapshot_balanced_through_client_crashes() {
    let stack = Stack::start(None, None).expect("embedded emulator and oracle");
    let liveness = LivenessConfig {
        table: "bank_liveness".into(),
        ttl_secs: 1,
    };
    let options = stack
        .txn_options(liveness)
        .expect("liveness table")
        .to_builder()
        .lock_ttl(Duration::from_secs(2))
        .max_lock_wait(Duration::from_secs(5));

    #[cfg(not(feature = "failpoints"))]
    let options =
        options.with_crash_injector(Some(Arc::new(|_: Seam| rand::random::<f64>() < CRASH_RATE)));
    let options = options.build();

    let config = BankConfig {
        tables: vec!["bank_checking".into(), "bank_savings".into()],
        accounts_per_table: 40,
        initial_balance: 1000,
        clients: 8,
        auditors: 2,
        duration: Duration::from_secs(seconds()),
        options,
    };
    bank::setup(&stack, &config).expect("open accounts");
    // Crashes start only now: the accounts are opened by a client that must not die.
    #[cfg(feature = "failpoints")]
    let _scenario = {
        let scenario = fail::FailScenario::setup();
        for seam in Seam::ALL {
            fail::cfg(seam.name(), &format!("{}%return", CRASH_RATE * 100.0)).expect("failpoint");
        }
        scenario
    };
    let report = bank::run(&stack, &config, &|elapsed, p| {
        if elapsed.as_secs() % 10 == 0 {
            eprintln!("bank t={}s {p:?}", elapsed.as_secs());
        }
    })
    .expect("bank run");
    eprintln!("bank report: {report:#?}");
    assert!(
        report.violations.is_empty(),
        "violations: {:#?}",
        report.violations
    );
    assert!(report.committed > 100, "too little progress: {report:?}");
    assert!(report.audits > 10, "auditors must have run: {report:?}");
    assert!(report.crashes > 0, "clients must have crashed: {report:?}");
    assert_eq!(report.final_total, report.expected_total);
}
