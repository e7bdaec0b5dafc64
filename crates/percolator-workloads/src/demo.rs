//! `percolator-workloads demo`: the bank workload with injected client crashes, progress on stdout,
//! and the invariants checked at the end.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::bank::{self, BankConfig, BankReport, Progress};
use crate::stack::Stack;
use percolator::txn::{LivenessConfig, Seam};
use percolator::Result;

/// `percolator-workloads demo` options (also its command-line arguments).
#[derive(Clone, Debug, clap::Args)]
pub struct DemoConfig {
    /// How long the transfers run, in seconds.
    #[arg(long, default_value_t = 20)]
    pub seconds: u64,
    /// HBase Thrift2 gateway host:port (default: embedded emulator).
    #[arg(long)]
    pub hbase: Option<String>,
    /// Timestamp oracle host:port, or a comma-separated list of an oracle and its standbys
    /// (default: embedded oracle).
    #[arg(long)]
    pub oracle: Option<String>,
    /// Clients making transfers (each may crash and is replaced).
    #[arg(long, default_value_t = 8)]
    pub clients: usize,
    /// Clients that read every balance in one transaction and check the total.
    #[arg(long, default_value_t = 2)]
    pub auditors: usize,
    /// Accounts in each of the demo's tables.
    #[arg(long, default_value_t = 50)]
    pub accounts_per_table: usize,
    /// Chance that a client dies at each protocol seam it passes.
    #[arg(long, default_value_t = 0.005)]
    pub crash_rate: f64,
    /// The tables' lock granularity: `cell`, or `row` (four accounts to a row, one column
    /// each, under one lock).
    #[arg(long, value_name = "cell|row", default_value = "cell")]
    pub lock_granularity: percolator::txn::LockGranularity,
    /// Name the tables demo_checking_SUFFIX, demo_savings_SUFFIX and demo_liveness_SUFFIX
    /// (default: this process's id and a random number), so that a script can inspect them
    /// afterwards, for example after killing the demo. Existing tables are reused and their
    /// accounts opened again.
    #[arg(long)]
    pub suffix: Option<String>,
}

pub fn run(config: &DemoConfig) -> Result<BankReport> {
    let stack = Stack::start(config.hbase.as_deref(), config.oracle.as_deref())?;
    println!(
        "percolator-workloads demo: HBase gateway {} ({}), oracle {}",
        stack.hbase_addr,
        if stack.is_embedded() {
            "embedded emulator"
        } else {
            "external"
        },
        stack.oracle_addr
    );
    let suffix = config
        .suffix
        .clone()
        .unwrap_or_else(|| format!("{}_{}", std::process::id(), rand::random::<u16>()));
    let liveness = LivenessConfig {
        table: format!("demo_liveness_{suffix}"),
        ttl_secs: 1,
        ..LivenessConfig::default()
    };
    let options = stack.txn_options(liveness)?;
    let rate = config.crash_rate;
    let options = options
        .to_builder()
        .crash_injector(Arc::new(move |_seam: Seam| rand::random::<f64>() < rate))
        .build();
    let bank = BankConfig {
        tables: vec![
            format!("demo_checking_{suffix}"),
            format!("demo_savings_{suffix}"),
        ],
        accounts_per_table: config.accounts_per_table,
        initial_balance: 1000,
        clients: config.clients,
        auditors: config.auditors,
        duration: Duration::from_secs(config.seconds),
        options,
        lock_granularity: config.lock_granularity,
    };
    bank::setup(&stack, &bank)?;
    println!(
        "{} accounts in {} tables ({}), {} clients (each dies at a seam with p={}), {} auditors, {} s",
        bank.accounts_per_table * bank.tables.len(),
        bank.tables.len(),
        bank.tables.join(", "),
        bank.clients,
        config.crash_rate,
        bank.auditors,
        config.seconds
    );
    let report = bank::run(&stack, &bank, &print_progress)?;
    println!(
        "done in {:.1} s: {} transfers committed ({:.0}/s), {} conflicts retried, {} client crashes, \
         {} undetermined, {} crashed transfers found committed, {} audits; the longest transfer took {:.2} s",
        report.seconds,
        report.committed,
        report.committed as f64 / report.seconds,
        report.conflicts,
        report.crashes,
        report.undetermined,
        report.settled_committed,
        report.audits,
        report.longest_transfer_secs
    );
    println!(
        "total {} (expected {})",
        report.final_total, report.expected_total
    );
    if report.violations.is_empty() {
        println!("all invariants hold: every snapshot summed to the same total, balances match the ledger, no lock left");
    } else {
        for v in &report.violations {
            println!("VIOLATION: {v}");
        }
    }
    Ok(report)
}

fn print_progress(elapsed: Duration, p: &Progress) {
    let get = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
    println!(
        "  t={:>3}s committed={} conflicts={} crashes={} audits={} audit_failures={}",
        elapsed.as_secs(),
        get(&p.committed),
        get(&p.conflicts),
        get(&p.crashes),
        get(&p.audits),
        get(&p.audit_failures)
    );
}
