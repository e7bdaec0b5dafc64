//! The bank workload: random transfers between accounts spread over several tables by clients
//! that crash at protocol seams and come back, while read-only auditors check at their snapshot
//! that the total never changes. At the end every crashed or undetermined transfer is settled
//! through its primary, and the balances must match the ledger exactly. Used by
//! `percolator-workloads demo` and by the bank test.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rand::Rng;
use serde::Serialize;

use crate::stack::Stack;
use percolator::txn::{self, CellKey, Client, LockGranularity, TxnOptions};
use percolator::{Error, Result, RetryClass};
use percolator_cli::tools::retried;

pub const FAMILY: &str = "f";
const QUALIFIER: &str = "balance";

#[derive(Clone, Debug)]
pub struct BankConfig {
    /// At least two, so transfers cross tables.
    pub tables: Vec<String>,
    pub accounts_per_table: usize,
    pub initial_balance: i64,
    pub clients: usize,
    pub auditors: usize,
    pub duration: Duration,
    /// Clients run with these options; set `crash_injector` for crashes without failpoints.
    pub options: TxnOptions,
    /// The tables' lock granularity. Locking rows, the accounts are laid out
    /// [`ACCOUNTS_PER_ROW`] to a row (one column each), so that one lock holds several of
    /// them and transfers between neighbours conflict: the trade the mode makes.
    pub lock_granularity: LockGranularity,
}

/// Accounts per row when the tables lock rows.
pub const ACCOUNTS_PER_ROW: usize = 4;

/// Live counters, for progress output.
#[derive(Default, Debug)]
pub struct Progress {
    pub committed: AtomicU64,
    pub conflicts: AtomicU64,
    pub crashes: AtomicU64,
    pub undetermined: AtomicU64,
    pub audits: AtomicU64,
    pub audit_failures: AtomicU64,
    /// The longest one transfer took, from its begin to its commit's answer, in microseconds:
    /// what a region in transition (a move, a split, a crashed server) made a caller wait.
    pub longest_transfer_us: AtomicU64,
}

#[derive(Clone, Debug, Serialize)]
pub struct BankReport {
    pub seconds: f64,
    pub committed: u64,
    pub conflicts: u64,
    pub crashes: u64,
    pub undetermined: u64,
    /// Crashed or undetermined transfers found committed when settled at the end.
    pub settled_committed: u64,
    pub audits: u64,
    /// The longest one transfer took, in seconds, whatever its outcome.
    pub longest_transfer_secs: f64,
    pub expected_total: i64,
    pub final_total: i64,
    /// Every broken invariant, in words. Empty means the run was correct.
    pub violations: Vec<String>,
}

#[derive(Clone, Debug)]
struct Transfer {
    from: CellKey,
    to: CellKey,
    amount: i64,
    /// What the transfer actually moves: `amount`, or 0 when the source could not afford it.
    moved: i64,
}

/// A transfer whose outcome the client could not learn (it died, or the commit point's reply
/// was lost): settled through its primary at the end.
struct Unsettled {
    transfer: Transfer,
    start_ts: u64,
}

/// What the committed transfers moved, as each account's net change (a run of any length
/// keeps one number per account), and the transfers still to settle.
#[derive(Default)]
struct Ledger {
    net: HashMap<CellKey, i64>,
    unsettled: Vec<Unsettled>,
}

impl Ledger {
    fn committed(&mut self, tr: &Transfer) {
        *self.net.entry(tr.from.clone()).or_default() -= tr.moved;
        *self.net.entry(tr.to.clone()).or_default() += tr.moved;
    }
}

impl BankConfig {
    pub fn accounts(&self) -> Vec<CellKey> {
        self.tables
            .iter()
            .flat_map(|t| {
                (0..self.accounts_per_table).map(move |i| {
                    let (row, column) = match self.lock_granularity {
                        LockGranularity::Cell => (format!("acct{i:05}"), QUALIFIER.to_string()),
                        LockGranularity::Row => (
                            format!("acct{:05}", i / ACCOUNTS_PER_ROW),
                            format!("{QUALIFIER}{}", i % ACCOUNTS_PER_ROW),
                        ),
                    };
                    CellKey::new(t.clone(), row, FAMILY, column).expect("valid account key")
                })
            })
            .collect()
    }

    pub fn expected_total(&self) -> i64 {
        self.initial_balance * (self.tables.len() * self.accounts_per_table) as i64
    }
}

/// Creates the tables and opens every account with the initial balance, transactionally.
pub fn setup(stack: &Stack, config: &BankConfig) -> Result<()> {
    for table in &config.tables {
        let (schema, granularity) = (config.options.schema(), config.lock_granularity);
        // Creating is idempotent: a retry finds the table and checks its families.
        retried(|| {
            txn::setup::create_table_with(&stack.hbase, schema, table, &[FAMILY], granularity)
        })?;
    }
    let client = steady_client(stack, config)?;
    for chunk in config.accounts().chunks(64) {
        client.run(|t| {
            for key in chunk {
                t.set(
                    &key.table,
                    &key.row,
                    &key.family,
                    &key.qualifier,
                    config.initial_balance.to_string(),
                )?;
            }
            Ok(())
        })?;
    }
    client.shutdown();
    Ok(())
}

/// Runs the workload for `config.duration`, calling `tick` about once a second.
pub fn run(
    stack: &Stack,
    config: &BankConfig,
    tick: &(dyn Fn(Duration, &Progress) + Sync),
) -> Result<BankReport> {
    let accounts = Arc::new(config.accounts());
    let progress = Progress::default();
    let ledger = Mutex::new(Ledger::default());
    let stop = AtomicBool::new(false);
    let fatal: Mutex<Option<Error>> = Mutex::new(None);
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..config.clients {
            s.spawn(|| {
                if let Err(e) = transfer_loop(stack, config, &accounts, &progress, &ledger, &stop) {
                    fatal.lock().get_or_insert(e);
                    stop.store(true, Ordering::SeqCst);
                }
            });
        }
        for _ in 0..config.auditors {
            s.spawn(|| {
                if let Err(e) = audit_loop(stack, config, &accounts, &progress, &stop) {
                    fatal.lock().get_or_insert(e);
                    stop.store(true, Ordering::SeqCst);
                }
            });
        }
        while started.elapsed() < config.duration && !stop.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(100).min(config.duration));
            if started.elapsed().as_millis() % 1000 < 100 {
                tick(started.elapsed(), &progress);
            }
        }
        stop.store(true, Ordering::SeqCst);
    });
    if let Some(e) = fatal.into_inner() {
        return Err(e);
    }
    let seconds = started.elapsed().as_secs_f64();
    settle(
        stack,
        config,
        &accounts,
        ledger.into_inner(),
        &progress,
        seconds,
    )
}

/// A transferring client: it may die at a seam (the configured crash injector).
fn fresh_client(stack: &Stack, config: &BankConfig) -> Result<Client> {
    stack.client(config.options.clone())
}

/// A client that never dies at a seam: setup, auditors and settlement.
fn steady_client(stack: &Stack, config: &BankConfig) -> Result<Client> {
    let options = config.options.clone();
    let options = options.to_builder().with_crash_injector(None).build();
    stack.client(options)
}

fn transfer_loop(
    stack: &Stack,
    config: &BankConfig,
    accounts: &[CellKey],
    progress: &Progress,
    ledger: &Mutex<Ledger>,
    stop: &AtomicBool,
) -> Result<()> {
    let mut client = retried(|| fresh_client(stack, config))?;
    let mut rng = rand::thread_rng();
    let mut failures = 0u32;
    while !stop.load(Ordering::Relaxed) {
        if client.is_dead() {
            // It died at a seam (possibly in a background secondary commit): a new process
            // takes its place.
            progress.crashes.fetch_add(1, Ordering::Relaxed);
            // As a service replaced after a crash: its start waits a region in transition out
            // (`TxnOptions::start_timeout`), and its supervisor starts it again after that.
            client = retried(|| fresh_client(stack, config))?;
        }
        let from = rng.gen_range(0..accounts.len());
        let mut to = rng.gen_range(0..accounts.len() - 1);
        if to >= from {
            to += 1;
        }
        let mut transfer = Transfer {
            from: accounts[from].clone(),
            to: accounts[to].clone(),
            amount: rng.gen_range(1..=100),
            moved: 0,
        };
        let mut start_ts = 0;
        let began = Instant::now();
        let outcome = client.begin().and_then(|mut t| {
            transfer.moved = apply_transfer(&mut t, &transfer)?;
            // Fixed by the reads above: no extra round trip.
            start_ts = t.start_ts()?;
            t.commit()
        });
        let took = u64::try_from(began.elapsed().as_micros()).unwrap_or(u64::MAX);
        progress
            .longest_transfer_us
            .fetch_max(took, Ordering::Relaxed);
        match outcome {
            Ok(_) => {
                failures = 0;
                progress.committed.fetch_add(1, Ordering::Relaxed);
                ledger.lock().committed(&transfer);
            }
            Err(Error::ClientCrashed { start_ts, .. }) => {
                ledger
                    .lock()
                    .unsettled
                    .push(Unsettled { transfer, start_ts });
            }
            Err(e) if e.retry_class() == RetryClass::Undetermined => {
                progress.undetermined.fetch_add(1, Ordering::Relaxed);
                ledger
                    .lock()
                    .unsettled
                    .push(Unsettled { transfer, start_ts });
            }
            Err(e) if e.retry_class() == RetryClass::Retry => {
                progress.conflicts.fetch_add(1, Ordering::Relaxed);
                failures += 1;
                std::thread::sleep(config.options.retry().backoff(failures.min(6)));
            }
            // The previous transfer's background secondary commit died at its seam after the
            // check at the top: nothing of this transfer was sent, and the client is replaced
            // there.
            Err(Error::Shutdown) if client.is_dead() => {}
            Err(e) => return Err(e),
        }
    }
    client.shutdown();
    Ok(())
}

/// Reads both balances and moves `amount` if the source can afford it; returns what it moves.
/// The source account is written first, so it is the primary.
fn apply_transfer(t: &mut txn::Transaction, tr: &Transfer) -> Result<i64> {
    let balances = t.get_many(&[tr.from.clone(), tr.to.clone()])?;
    let from = parse_balance(&tr.from, balances[0].as_deref())?;
    let to = parse_balance(&tr.to, balances[1].as_deref())?;
    let amount = if from >= tr.amount { tr.amount } else { 0 };
    t.set(
        &tr.from.table,
        &tr.from.row,
        &tr.from.family,
        &tr.from.qualifier,
        (from - amount).to_string(),
    )?;
    t.set(
        &tr.to.table,
        &tr.to.row,
        &tr.to.family,
        &tr.to.qualifier,
        (to + amount).to_string(),
    )?;
    Ok(amount)
}

fn parse_balance(key: &CellKey, v: Option<&[u8]>) -> Result<i64> {
    let corrupt = |reason: &str| Error::Corrupted {
        what: "balance",
        table: key.table.clone(),
        row: key.row.clone(),
        column: key.column(),
        reason: reason.to_string(),
    };
    let v = v.ok_or_else(|| corrupt("account has no balance"))?;
    std::str::from_utf8(v)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| corrupt("balance is not a number"))
}

/// The total of every balance at one snapshot, waiting out locks of clients that may still
/// be alive (for a minute at most).
pub fn total(client: &Client, config: &BankConfig) -> Result<i64> {
    let accounts = config.accounts();
    retried(|| read_total(client, &accounts)).map(|(total, _)| total)
}

fn read_total(client: &Client, accounts: &[CellKey]) -> Result<(i64, Vec<i64>)> {
    let t = client.begin()?;
    let values = t.get_many(accounts)?;
    let balances = accounts
        .iter()
        .zip(&values)
        .map(|(k, v)| parse_balance(k, v.as_deref()))
        .collect::<Result<Vec<_>>>()?;
    Ok((balances.iter().sum(), balances))
}

fn audit_loop(
    stack: &Stack,
    config: &BankConfig,
    accounts: &[CellKey],
    progress: &Progress,
    stop: &AtomicBool,
) -> Result<()> {
    let client = retried(|| steady_client(stack, config))?;
    let expected = config.expected_total();
    while !stop.load(Ordering::Relaxed) {
        match read_total(&client, accounts) {
            Ok((total, _)) => {
                progress.audits.fetch_add(1, Ordering::Relaxed);
                if total != expected {
                    progress.audit_failures.fetch_add(1, Ordering::Relaxed);
                    tracing::error!(total, expected, "audit saw a wrong total");
                }
            }
            // Waiting on a crashed client's locks can exceed the wait budget: try again.
            Err(e) if e.retry_class() == RetryClass::Retry => {}
            Err(e) => return Err(e),
        }
    }
    client.shutdown();
    Ok(())
}

/// Settles unknown outcomes through their primaries, then checks the balances against the
/// ledger, the total, and that no lock is left.
fn settle(
    stack: &Stack,
    config: &BankConfig,
    accounts: &[CellKey],
    mut ledger: Ledger,
    progress: &Progress,
    seconds: f64,
) -> Result<BankReport> {
    let client = retried(|| steady_client(stack, config))?;
    let mut settled_committed = 0;
    for u in std::mem::take(&mut ledger.unsettled) {
        if retried(|| client.transaction_status(&u.transfer.from, u.start_ts))?.is_some() {
            settled_committed += 1;
            ledger.committed(&u.transfer);
        }
    }
    // The final read resolves every remaining lock (each account is read).
    let (final_total, balances) = retried(|| read_total(&client, accounts))?;
    let mut violations = Vec::new();
    let failures = progress.audit_failures.load(Ordering::Relaxed);
    if failures > 0 {
        violations.push(format!(
            "{failures} audits saw a total other than {}",
            config.expected_total()
        ));
    }
    if final_total != config.expected_total() {
        violations.push(format!(
            "final total {final_total} != {}",
            config.expected_total()
        ));
    }
    violations.extend(ledger_mismatches(config, accounts, &balances, &ledger));
    for table in &config.tables {
        let left = retried(|| count_locks(stack, config, table))?;
        if left > 0 {
            violations.push(format!("{left} locks left in {table}"));
        }
    }
    client.shutdown();
    let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
    Ok(BankReport {
        seconds,
        committed: get(&progress.committed),
        conflicts: get(&progress.conflicts),
        crashes: get(&progress.crashes),
        undetermined: get(&progress.undetermined),
        settled_committed,
        audits: get(&progress.audits),
        longest_transfer_secs: get(&progress.longest_transfer_us) as f64 / 1e6,
        expected_total: config.expected_total(),
        final_total,
        violations,
    })
}

/// Each account must hold exactly its initial balance plus the committed transfers' inflows
/// minus their outflows.
fn ledger_mismatches(
    config: &BankConfig,
    accounts: &[CellKey],
    balances: &[i64],
    ledger: &Ledger,
) -> Vec<String> {
    let expected: HashMap<&CellKey, i64> = accounts
        .iter()
        .map(|k| {
            (
                k,
                config.initial_balance + ledger.net.get(k).copied().unwrap_or(0),
            )
        })
        .collect();
    let mut out: Vec<String> = accounts
        .iter()
        .zip(balances)
        .filter(|(k, b)| expected[k] != **b)
        .map(|(k, b)| format!("{k}: balance {b}, ledger says {}", expected[k]))
        .collect();
    if out.len() > 10 {
        let more = out.len() - 10;
        out.truncate(10);
        out.push(format!(
            "... and {more} more accounts differ from the ledger"
        ));
    }
    out
}

fn count_locks(stack: &Stack, config: &BankConfig, table: &str) -> Result<usize> {
    use percolator::format::{decode_lock_state, LockState};
    use percolator::hbase::Scan;
    let scan = Scan::new().family(config.options.schema().lock_family.clone());
    let mut locks = 0;
    for row in stack.hbase.scan(table, &scan)? {
        for cell in row?.cells {
            if matches!(
                decode_lock_state(Some(&cell.value)),
                Ok(LockState::Locked(_)) | Err(_)
            ) {
                locks += 1;
            }
        }
    }
    Ok(locks)
}
