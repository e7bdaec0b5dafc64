//! `percolator-workloads soak`: everything at once against one HBase for a while, then every
//! invariant the demos check. Running together:
//! - the bank, through a standby group of oracles;
//! - the observer pipeline of `observe-demo`, its workers killed at random;
//! - GC every few seconds at the shortest life time, over both banks' tables;
//! - the serving oracle killed with SIGKILL on a timer, and started again as a standby;
//! - a second bank in a child process (`soak-client`), killed with SIGKILL now and then and
//!   started again: what it leaves half done must never show.
//!
//! At the end: the bank's ledger and snapshots, the observers' recomputed data, the killed
//! client's total at one snapshot (its locks resolved), no lock left anywhere, every timestamp
//! unique and in real-time order, and memory of every process at start and end.

mod checks;
mod procs;
mod report;

pub use procs::{run_client, SoakClientConfig};
pub use report::{print, Memory, SoakReport};

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use self::checks::{gc_loop, versions_per_cell};
use self::procs::{start_oracle, Process};
use self::report::rss_kb;
use crate::bank::{self, BankConfig};
use crate::handed::{self, Recording};
use crate::observe_demo::{self, ObserveDemoConfig};
use crate::stack::Stack;
use percolator::txn::LivenessConfig;
use percolator::{Error, Result};
use percolator_cli::tools::serving;

/// `percolator-workloads soak` options.
#[derive(Clone, Debug, clap::Args)]
pub struct SoakConfig {
    /// HBase Thrift2 gateway (a real HBase: `scripts/soak` starts one).
    #[arg(long)]
    pub hbase: String,
    /// How long everything runs, in minutes.
    #[arg(long, default_value_t = 2.0)]
    pub minutes: f64,
    /// Oracle processes in the standby group.
    #[arg(long, default_value_t = 3)]
    pub oracles: usize,
    /// The oracles' lease, in ms.
    #[arg(long, default_value_t = 3000)]
    pub lease_ms: u64,
    /// Seconds between SIGKILLs of the serving oracle.
    #[arg(long, default_value_t = 20)]
    pub kill_oracle_every: u64,
    /// Seconds between SIGKILLs of the child client (each at a random point within).
    #[arg(long, default_value_t = 15)]
    pub kill_client_every: u64,
    /// Seconds between GC rounds.
    #[arg(long, default_value_t = 5)]
    pub gc_every: u64,
    /// Print the report as JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn run(config: &SoakConfig) -> Result<SoakReport> {
    let duration = Duration::from_secs_f64(config.minutes * 60.0);
    let suffix = format!("{}_{}", std::process::id(), rand::random::<u16>());
    let store = format!("hbase:{}/soak_tso_{suffix}", config.hbase);
    let mut oracles = Vec::new();
    let mut addrs = Vec::new();
    for _ in 0..config.oracles.max(1) {
        let (p, addr) = start_oracle("127.0.0.1:0", &store, config.lease_ms)?;
        oracles.push(p);
        addrs.push(addr);
    }
    let oracle_list = addrs.join(",");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !addrs.iter().any(|a| serving(a)) {
        if Instant::now() > deadline {
            return Err(Error::OracleUnavailable {
                addrs: addrs.clone(),
                reason: "no oracle of the group began serving within a minute".into(),
            });
        }
        std::thread::sleep(Duration::from_millis(50));
    }

    let mut stack = Stack::start(Some(&config.hbase), Some(&oracle_list))?;
    let recording = Recording::wrap(Arc::clone(&stack.tso));
    stack.tso = recording.clone();
    let liveness = LivenessConfig {
        table: format!("soak_liveness_{suffix}"),
        ttl_secs: 1,
        ..LivenessConfig::default()
    };
    let options = stack.txn_options(liveness.clone())?;
    // GC's safe point is global to the meta table, so a crashed transfer of the bank could
    // fall below it before it is settled at the end, and its status would be forgotten: the
    // bank's clients do not crash here. The child process the soak kills is what crashes.
    let bank_config = BankConfig {
        tables: vec![format!("soak_a_{suffix}"), format!("soak_b_{suffix}")],
        accounts_per_table: 50,
        initial_balance: 1000,
        clients: 6,
        auditors: 2,
        duration,
        options: options.clone(),
        lock_granularity: percolator::txn::LockGranularity::Cell,
    };
    bank::setup(&stack, &bank_config)?;
    let killed_config = BankConfig {
        tables: vec![
            format!("soak_kill_a_{suffix}"),
            format!("soak_kill_b_{suffix}"),
        ],
        clients: 4,
        auditors: 0,
        options: options.clone(),
        ..bank_config.clone()
    };
    bank::setup(&stack, &killed_config)?;
    let gc_tables: Vec<String> = bank_config
        .tables
        .iter()
        .chain(&killed_config.tables)
        .cloned()
        .collect();

    let start_client =
        || procs::start_client(&config.hbase, &oracle_list, &killed_config, &liveness.table);
    let mut client = start_client()?;

    let mut report = SoakReport::default();
    // The soak itself, each oracle slot and the client slot: a killed process's successor
    // takes its slot.
    let memory_now = |oracles: &[Process], client: &Process| -> Vec<(String, u64)> {
        let mut m = vec![("soak".to_string(), rss_kb(std::process::id()))];
        for (i, o) in oracles.iter().enumerate() {
            m.push((format!("oracle {i}"), rss_kb(o.child.id())));
        }
        m.push(("client".to_string(), rss_kb(client.child.id())));
        m
    };
    std::thread::sleep(Duration::from_secs(1));
    let memory_at_start = memory_now(&oracles, &client);
    let stop = AtomicBool::new(false);
    let gc_tally = Mutex::new((0u64, 0u64, 0u64));
    let started = Instant::now();
    let (bank_report, observe_report) = std::thread::scope(|s| -> Result<_> {
        let bank_run = s.spawn(|| bank::run(&stack, &bank_config, &|_, _| {}));
        let observe = s.spawn(|| {
            observe_demo::run(&ObserveDemoConfig {
                seconds: duration.as_secs().max(1),
                workers: 3,
                writers: 2,
                documents: 40,
                crash_rate: 0.01,
                hbase: Some(config.hbase.clone()),
                oracle: Some(oracle_list.clone()),
                json: true,
            })
        });
        s.spawn(|| {
            if let Err(e) = gc_loop(
                &stack,
                &options,
                &gc_tables,
                config.gc_every,
                &stop,
                &gc_tally,
            ) {
                tracing::error!(error = %e, "the soak's GC stopped");
            }
        });
        let mut next_oracle_kill = started + Duration::from_secs(config.kill_oracle_every);
        let mut next_client_kill = started + random_within(config.kill_client_every);
        let mut next_sample = started;
        while started.elapsed() < duration {
            std::thread::sleep(Duration::from_millis(100));
            if Instant::now() >= next_sample {
                next_sample += Duration::from_secs(30);
                report
                    .soak_memory_trace
                    .push((started.elapsed().as_secs(), rss_kb(std::process::id())));
            }
            if Instant::now() >= next_oracle_kill {
                next_oracle_kill += Duration::from_secs(config.kill_oracle_every);
                if let Some(at) = addrs.iter().position(|a| serving(a)) {
                    oracles[at].kill();
                    report.oracle_kills += 1;
                    oracles[at] = start_oracle(&addrs[at], &store, config.lease_ms)?.0;
                }
            }
            if Instant::now() >= next_client_kill {
                next_client_kill += random_within(config.kill_client_every);
                client.kill();
                report.client_kills += 1;
                client = start_client()?;
            }
        }
        let memory_at_end = memory_now(&oracles, &client);
        report.memory = memory_at_start
            .into_iter()
            .zip(memory_at_end)
            .map(|((process, start_kb), (_, end_kb))| Memory {
                process,
                start_kb,
                end_kb,
            })
            .collect();
        client.kill();
        stop.store(true, Ordering::SeqCst);
        let bank_report = bank_run.join().expect("the bank thread");
        let observe_report = observe.join().expect("the observers' thread");
        Ok((bank_report, observe_report))
    })?;
    report.seconds = started.elapsed().as_secs_f64();
    report.oracles_displaced = oracles
        .iter_mut()
        .map(Process::exited)
        .filter(|&e| e)
        .count();

    let mut violations = Vec::new();
    match bank_report {
        Ok(r) => {
            violations.extend(r.violations.iter().map(|v| format!("bank: {v}")));
            report.bank = Some(r);
        }
        Err(e) => violations.push(format!("bank failed: {e}")),
    }
    match observe_report {
        Ok(r) => {
            violations.extend(r.mismatches.iter().map(|m| format!("observers: {m}")));
            if r.pending_notifications > 0 {
                violations.push(format!(
                    "observers: {} notifications left",
                    r.pending_notifications
                ));
            }
            report.observers = Some(r);
        }
        Err(e) => violations.push(format!("observers failed: {e}")),
    }

    // The killed client's bank: its total at one snapshot, every lock it left resolved.
    let reader = stack.client(options.clone())?;
    report.killed_client_expected = killed_config.expected_total();
    report.killed_client_total = bank::total(&reader, &killed_config)?;
    if report.killed_client_total != report.killed_client_expected {
        violations.push(format!(
            "the killed client's tables total {} instead of {}",
            report.killed_client_total, report.killed_client_expected
        ));
    }
    let schema = options.schema();
    for table in &gc_tables {
        let locks = percolator::locks::list_locks(&stack.hbase, schema, table)?;
        percolator::locks::resolve_locks(&reader, &locks);
        report.locks_left += percolator::locks::list_locks(&stack.hbase, schema, table)?.len();
    }
    if report.locks_left > 0 {
        violations.push(format!("{} locks left after resolution", report.locks_left));
    }
    reader.shutdown();

    let log = recording.take();
    report.timestamps = log.len();
    report.timestamp_requests_failed = recording.failures();
    match handed::check(log) {
        Ok(gap) => report.longest_without_a_timestamp_ms = gap.as_millis(),
        Err(broken) => violations.push(format!("timestamps: {broken}")),
    }
    if report.oracles_displaced > 0 {
        violations.push(format!(
            "{} live oracles were displaced",
            report.oracles_displaced
        ));
    }
    let (rounds, failed, collected) = *gc_tally.lock();
    report.gc_rounds = rounds;
    report.gc_failed_rounds = failed;
    report.gc_versions_collected = collected;
    if rounds == 0 {
        violations.push("GC never completed a round".into());
    }
    let (mean, max) = versions_per_cell(&stack, schema, &gc_tables)?;
    report.versions_per_cell_mean = mean;
    report.versions_per_cell_max = max;
    report.violations = violations;
    Ok(report)
}

/// A random time within `secs` seconds, at least one.
fn random_within(secs: u64) -> Duration {
    Duration::from_millis(rand::random::<u64>() % (secs.max(1) * 1000)).max(Duration::from_secs(1))
}
