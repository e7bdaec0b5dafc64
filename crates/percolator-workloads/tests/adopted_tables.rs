//! The bank workload on tables that plain clients filled and `migrate apply` adopted: every
//! invariant holds, and the total is what the plain writes left. On the emulator, or a real
//! HBase with `HBASE_THRIFT`.

#[path = "../../../tests/txn_support/mod.rs"]
mod txn_support;

use std::time::Duration;

use percolator::hbase::{FamilyDescriptor, Put, TableDescriptor};
use percolator::migrate::{self, ApplyOptions, ProgressMode};
use percolator_cli::tools::retried;
use percolator_workloads::bank::{self, BankConfig};
use percolator_workloads::stack::Stack;
use txn_support::Env;

#[test]
fn the_bank_workload_runs_on_an_adopted_table() {
    let env = Env::start();
    let tables: Vec<String> = (0..2).map(|_| txn_support::unique("mig_bank")).collect();
    for t in &tables {
        env.hbase
            .admin()
            .create_table(&TableDescriptor::new(t.clone()).family(FamilyDescriptor::new("f")))
            .unwrap();
        env.created(t);
    }
    let config = BankConfig {
        tables: tables.clone(),
        accounts_per_table: 20,
        initial_balance: 100,
        clients: 4,
        auditors: 1,
        duration: Duration::from_secs(3),
        options: env.options(),
        lock_granularity: percolator::txn::LockGranularity::Cell,
    };
    // Accounts opened by a plain client, then adopted (quickly, in the granularity the suite
    // runs in).
    let quiet = ApplyOptions {
        progress: ProgressMode::Off,
        settle: Duration::ZERO,
        checkpoint_rows: 7,
        lock_granularity: txn_support::granularity_from_env(),
        ..ApplyOptions::default()
    };
    for key in config.accounts() {
        retried(|| {
            env.hbase.put(
                &key.table,
                &Put::new(key.row.clone()).add(key.family.clone(), key.qualifier.clone(), "100"),
            )
        })
        .unwrap_or_else(|e| panic!("a plain call: {e}"));
    }
    for t in &tables {
        migrate::apply(&env.hbase, &env.schema, t, &quiet).unwrap();
    }
    let oracle =
        percolator::OracleServer::start_local(percolator::oracle::MemoryStore::new()).unwrap();
    let stack = Stack::start(Some(&env.addr), Some(&oracle.local_addr().to_string())).unwrap();
    let report = bank::run(&stack, &config, &|_, _| {}).unwrap();
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    assert_eq!(report.final_total, config.expected_total());
    assert!(report.committed > 0);
}
