//! `percolator soak`: everything at once against one HBase for a while, then every invariant
//! the demos check. Running together:
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

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde::Serialize;

use crate::workload::bank::{self, BankConfig, BankReport};
use crate::workload::handed::{self, serving, Recording};
use crate::workload::observe_demo::{self, ObserveDemoConfig, ObserveDemoReport};
use crate::workload::stack::Stack;
use percolator::gc::{GcOptions, GcWorker};
use percolator::hbase::Scan;
use percolator::txn::{LivenessConfig, TxnOptions};
use percolator::{Error, Result};

/// `percolator soak` options.
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

/// `percolator soak-client`: the child the soak kills (hidden).
#[derive(Clone, Debug, clap::Args)]
pub struct SoakClientConfig {
    #[arg(long)]
    pub hbase: String,
    #[arg(long)]
    pub oracle: String,
    /// The bank tables, made and filled by the soak.
    #[arg(long, value_delimiter = ',')]
    pub tables: Vec<String>,
    #[arg(long)]
    pub accounts_per_table: usize,
    #[arg(long)]
    pub liveness_table: String,
}

#[derive(Debug, Default, Serialize)]
pub struct SoakReport {
    pub seconds: f64,
    pub bank: Option<BankReport>,
    pub observers: Option<ObserveDemoReport>,
    pub oracle_kills: usize,
    pub oracles_displaced: usize,
    pub timestamps: usize,
    pub timestamp_requests_failed: u64,
    pub longest_without_a_timestamp_ms: u128,
    pub client_kills: usize,
    pub killed_client_total: i64,
    pub killed_client_expected: i64,
    pub gc_rounds: u64,
    pub gc_failed_rounds: u64,
    pub gc_versions_collected: u64,
    pub locks_left: usize,
    /// Write records and data versions per cell of the GC'd tables at the end.
    pub versions_per_cell_mean: f64,
    pub versions_per_cell_max: u64,
    pub memory: Vec<Memory>,
    /// The soak process's resident memory every 30 s (seconds, kB): it holds the clients of
    /// the bank, the observers and GC, and also the run's own records (the bank's ledger of
    /// every transfer, every timestamp handed out), which grow with the run by design.
    pub soak_memory_trace: Vec<(u64, u64)>,
    pub violations: Vec<String>,
}

/// A process's resident memory at the start and the end.
#[derive(Debug, Default, Serialize)]
pub struct Memory {
    pub process: String,
    pub start_kb: u64,
    pub end_kb: u64,
}

/// Resident memory of `pid` in kB, from /proc (0 where there is none).
fn rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

/// A child process of the soak, killed when dropped.
struct Process {
    child: Child,
    /// Kept open: a child writing to a closed pipe would fail.
    _stdout: Option<BufReader<ChildStdout>>,
}

impl Process {
    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn exited(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A sibling binary of this one (`percolator-oracle`, or `percolator` itself).
fn sibling(name: &str) -> Result<std::path::PathBuf> {
    let me = std::env::current_exe().map_err(|e| Error::io("finding this binary", e))?;
    Ok(me.with_file_name(name))
}

/// A standby-mode oracle on `store`, listening on `listen`; returns it and its address.
fn start_oracle(listen: &str, store: &str, lease_ms: u64) -> Result<(Process, String)> {
    let mut child = Command::new(sibling("percolator-oracle")?)
        .args(["--listen", listen, "--store", store, "--standby"])
        .arg(format!("--lease-ms={lease_ms}"))
        .arg("--stats-interval-s=3600")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| Error::io("starting percolator-oracle", e))?;
    let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
    let mut line = String::new();
    stdout
        .read_line(&mut line)
        .map_err(|e| Error::io("reading the oracle's address", e))?;
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .ok_or_else(|| Error::IllegalArgument {
            message: format!("percolator-oracle printed {line:?} instead of its address"),
        })?
        .to_string();
    let process = Process {
        child,
        _stdout: Some(stdout),
    };
    Ok((process, addr))
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

    let start_client = || -> Result<Process> {
        let child = Command::new(sibling("percolator")?)
            .args([
                "soak-client",
                "--hbase",
                &config.hbase,
                "--oracle",
                &oracle_list,
            ])
            .arg(format!("--tables={}", killed_config.tables.join(",")))
            .arg(format!(
                "--accounts-per-table={}",
                killed_config.accounts_per_table
            ))
            .arg(format!("--liveness-table={}", liveness.table))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| Error::io("starting the soak client", e))?;
        Ok(Process {
            child,
            _stdout: None,
        })
    };
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

/// Prints the report (text or JSON); true when every invariant held.
pub fn print(r: &SoakReport, json: bool) -> bool {
    if json {
        println!(
            "{}",
            serde_json::to_string(r).expect("the soak report serializes")
        );
        return r.violations.is_empty();
    }
    println!("soak: {:.0} s", r.seconds);
    if let Some(b) = &r.bank {
        println!(
            "  bank: {} transfers committed, {} retried, {} client crashes, {} undetermined, {} audits",
            b.committed, b.conflicts, b.crashes, b.undetermined, b.audits
        );
    }
    if let Some(o) = &r.observers {
        println!(
            "  observers: {} documents written, {} runs processed, {} workers died, {} words checked",
            o.documents_written, o.processed, o.workers_died, o.words_checked
        );
    }
    println!(
        "  oracle: {} kills, {} timestamps, {} requests failed, longest without a timestamp {} ms",
        r.oracle_kills, r.timestamps, r.timestamp_requests_failed, r.longest_without_a_timestamp_ms
    );
    println!(
        "  killed client: {} kills, total {} (expected {})",
        r.client_kills, r.killed_client_total, r.killed_client_expected
    );
    println!(
        "  gc: {} rounds ({} failed), {} versions collected; versions per cell at the end: mean {:.2}, max {}",
        r.gc_rounds, r.gc_failed_rounds, r.gc_versions_collected, r.versions_per_cell_mean, r.versions_per_cell_max
    );
    for m in &r.memory {
        println!(
            "  memory {:<9} start {:>8} kB  end {:>8} kB",
            m.process, m.start_kb, m.end_kb
        );
    }
    let trace: Vec<String> = r
        .soak_memory_trace
        .iter()
        .map(|(s, kb)| format!("{s}s {}MB", kb / 1024))
        .collect();
    println!("  soak memory every 30 s: {}", trace.join(", "));
    if r.violations.is_empty() {
        println!("all invariants hold");
    }
    for v in &r.violations {
        println!("VIOLATION: {v}");
    }
    r.violations.is_empty()
}

/// A random time within `secs` seconds, at least one.
fn random_within(secs: u64) -> Duration {
    Duration::from_millis(rand::random::<u64>() % (secs.max(1) * 1000)).max(Duration::from_secs(1))
}

/// GC rounds over `tables` every `every` seconds until `stop`; tallies rounds, failed rounds
/// and versions collected.
fn gc_loop(
    stack: &Stack,
    options: &TxnOptions,
    tables: &[String],
    every: u64,
    stop: &AtomicBool,
    tally: &Mutex<(u64, u64, u64)>,
) -> Result<()> {
    let client = stack.client(options.clone())?;
    let gc = GcOptions::default()
        .with_life_time(percolator::gc::MIN_LIFE_TIME)?
        .resolving_locks_in(tables.to_vec());
    let worker = GcWorker::new(client.asynchronous(), stack.hbase.clone(), gc);
    let runtime = tokio::runtime::Runtime::new().map_err(|e| Error::io("a GC runtime", e))?;
    while !stop.load(Ordering::SeqCst) {
        match runtime.block_on(worker.run_once(tables, &|_| {})) {
            Ok(r) => {
                let mut t = tally.lock();
                t.0 += 1;
                t.2 += r.removed();
            }
            Err(e) => {
                tracing::warn!(error = %e, "a GC round failed");
                tally.lock().1 += 1;
            }
        }
        let until = Instant::now() + Duration::from_secs(every);
        while Instant::now() < until && !stop.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    client.shutdown();
    Ok(())
}

/// Write records and data versions per cell, over the percolator write family and the user
/// data of `tables` (mean, max).
fn versions_per_cell(
    stack: &Stack,
    schema: &percolator::txn::Schema,
    tables: &[String],
) -> Result<(f64, u64)> {
    let (mut cells, mut versions, mut max) = (0u64, 0u64, 0u64);
    for table in tables {
        for family in [
            schema.write_family.clone(),
            bank::FAMILY.as_bytes().to_vec(),
        ] {
            let scan = Scan::new().family(family).max_versions(i32::MAX);
            for row in stack.hbase.scan(table, &scan)? {
                let row = row?;
                let mut per_column = std::collections::HashMap::new();
                for cell in &row.cells {
                    *per_column.entry(cell.qualifier.clone()).or_insert(0u64) += 1;
                }
                for n in per_column.into_values() {
                    cells += 1;
                    versions += n;
                    max = max.max(n);
                }
            }
        }
    }
    let mean = if cells == 0 {
        0.0
    } else {
        versions as f64 / cells as f64
    };
    Ok((mean, max))
}

/// The child the soak kills: transfers on the given tables until it is killed.
pub fn run_client(config: &SoakClientConfig) -> Result<()> {
    let stack = Stack::start(Some(&config.hbase), Some(&config.oracle))?;
    let liveness = LivenessConfig {
        table: config.liveness_table.clone(),
        ttl_secs: 1,
    };
    let bank_config = BankConfig {
        tables: config.tables.clone(),
        accounts_per_table: config.accounts_per_table,
        initial_balance: 1000,
        clients: 4,
        auditors: 0,
        duration: Duration::from_secs(86_400),
        options: stack.txn_options(liveness)?,
    };
    bank::run(&stack, &bank_config, &|_, _| {}).map(|_| ())
}
