//! The bank test (a unit test: it drives the private workload module): accounts over two tables, 8 clients doing random transfers and dying at
//! random protocol seams (failpoints with `--features failpoints`, the runtime crash injector
//! otherwise) and coming back, 2 read-only auditors summing every balance at their snapshot.
//! The sum must be the same at every snapshot, balances must match the ledger, and no lock may
//! be left. About a minute by default; `BANK_SECONDS=N` runs it for N seconds.

#[cfg(not(feature = "failpoints"))]
use std::sync::Arc;
use std::time::Duration;

use crate::bank::{self, BankConfig};
use crate::stack::Stack;
use percolator::txn::{LivenessConfig, LockGranularity, Seam};

const CRASH_RATE: f64 = 0.005;

/// Seconds from the environment variable `var`, else `default`.
fn seconds(var: &str, default: u64) -> u64 {
    std::env::var(var)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// An embedded stack and client options with short TTLs, liveness rows in `liveness_table`.
fn bank_stack(liveness_table: &str) -> (Stack, percolator::txn::TxnOptionsBuilder) {
    let stack = Stack::start(None, None).expect("embedded emulator and oracle");
    let liveness = LivenessConfig {
        table: liveness_table.into(),
        ttl_secs: 1,
        ..LivenessConfig::default()
    };
    let options = stack
        .txn_options(liveness)
        .expect("liveness table")
        .to_builder()
        .lock_ttl(Duration::from_secs(2))
        .max_lock_wait(Duration::from_secs(5));
    (stack, options)
}

#[test]
fn bank_transfers_keep_every_snapshot_balanced_through_client_crashes() {
    bank_through_crashes(LockGranularity::Cell, seconds("BANK_SECONDS", 55));
}

/// The same with tables that lock rows, four accounts to a row: transfers between neighbours
/// conflict, and a crash leaves locks that hold several accounts at once. About 20 s;
/// `BANK_ROW_SECONDS=N` for longer.
#[test]
fn bank_transfers_keep_every_snapshot_balanced_through_client_crashes_with_row_locks() {
    bank_through_crashes(LockGranularity::Row, seconds("BANK_ROW_SECONDS", 20));
}

fn bank_through_crashes(lock_granularity: LockGranularity, seconds: u64) {
    let (stack, options) = bank_stack("bank_liveness");

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
        duration: Duration::from_secs(seconds),
        options,
        lock_granularity,
    };
    // Failpoints are process-wide: the scenario is taken before the accounts are opened, so
    // that no other test's crashes reach the client that opens them.
    #[cfg(feature = "failpoints")]
    let _scenario = fail::FailScenario::setup();
    bank::setup(&stack, &config).expect("open accounts");
    // Crashes start only now: the accounts are opened by a client that must not die.
    #[cfg(feature = "failpoints")]
    for seam in Seam::ALL {
        fail::cfg(seam.name(), &format!("{}%return", CRASH_RATE * 100.0)).expect("failpoint");
    }
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

/// The bank with GC collecting both tables every half second at the shortest life time
/// (docs/gc.md): auditors must still see every snapshot balanced (a version collected from
/// under a reader would break a sum), and afterwards each cell holds one version at or below
/// the safe point. About 20 s; `GC_BANK_SECONDS=N` for a longer soak.
#[test]
fn bank_stays_balanced_and_versions_bounded_with_gc_running() {
    use percolator::format::decode_write;
    use percolator::gc::{GcOptions, GcWorker, MIN_LIFE_TIME};
    use percolator::hbase::Scan;

    // No crashes here (failpoints are process-wide: this waits for the crash test to end).
    // A crashed transfer is settled at the end through its primary's records, which GC may
    // have collected by then: `transaction_status` answers SnapshotTooOld (docs/gc.md).
    let _failpoints_off = crate::failpoints_off();
    let (stack, options) = bank_stack("bank_gc_liveness");
    let options = options.build();
    let tables = vec!["gc_checking".to_string(), "gc_savings".to_string()];
    let config = BankConfig {
        tables: tables.clone(),
        accounts_per_table: 20,
        initial_balance: 1000,
        clients: 4,
        auditors: 2,
        duration: Duration::from_secs(seconds("GC_BANK_SECONDS", 20)),
        options: options.clone(),
        lock_granularity: LockGranularity::Cell,
    };
    bank::setup(&stack, &config).expect("open accounts");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let worker = || {
        let gc_opts = GcOptions::default()
            .with_life_time(MIN_LIFE_TIME)
            .unwrap()
            .resolving_locks_in(tables.clone());
        let client = stack.client(options.clone()).unwrap().asynchronous();
        GcWorker::new(client, stack.hbase.clone(), gc_opts)
    };
    let handle =
        runtime.block_on(async { worker().spawn(tables.clone(), Duration::from_millis(500)) });
    let report = bank::run(&stack, &config, &|_, _| {}).expect("bank run");
    let last = runtime.block_on(handle.shutdown());
    eprintln!("bank with GC: {report:#?}\nlast GC round: {last:#?}");
    assert!(report.violations.is_empty(), "{:#?}", report.violations);
    assert!(report.committed > 100, "too little progress: {report:?}");
    assert_eq!(report.final_total, report.expected_total);
    let last = last.expect("GC rounds finished during the run");
    assert!(last.removed() > 0, "GC removed nothing: {last:?}");

    // One more round, then every cell keeps one version at or below the safe point.
    let worker = worker();
    let round = runtime
        .block_on(worker.run_once(&tables, &|_| {}))
        .expect("final round");
    runtime.block_on(worker.shutdown());
    let schema = percolator::txn::Schema::default();
    let mut max_versions = 0;
    for table in &tables {
        let scan = Scan::new()
            .family(schema.write_family.clone())
            .max_versions(i32::MAX);
        for row in stack.hbase.scan(table, &scan).unwrap() {
            let row = row.unwrap();
            let below: Vec<_> = row
                .cells
                .iter()
                .filter(|c| c.timestamp as u64 <= round.safe_point)
                .collect();
            assert!(below.len() <= 1, "{table} {:?}: {below:?}", row.row);
            for c in &below {
                let rec = decode_write(&c.value).unwrap();
                assert_eq!(rec.kind, percolator::format::WriteKind::Put);
            }
            max_versions = max_versions.max(row.cells.len());
        }
    }
    let per_cell_commits = report.committed as usize * 2 / (2 * config.accounts_per_table);
    eprintln!(
        "max write records per cell after GC: {max_versions}, commits per cell: {per_cell_commits}"
    );
    assert!(
        max_versions < per_cell_commits.max(2),
        "GC bounded nothing: {max_versions} records for {per_cell_commits} commits per cell"
    );
}
