//! `percolator-workloads observe-demo`: an incremental pipeline of two chained observers over
//! documents (text -> per-document word counts -> global word counts), fed by writers while
//! observer workers die at random seams or are killed outright and replaced. At the end it waits
//! for the notifications to drain, recomputes every derived cell from the documents and compares.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::seq::SliceRandom;
use rand::Rng;
use serde::Serialize;

use crate::stack::Stack;
use percolator::observer::{
    pending_notifications, LastApplied, ObservedColumn, Observer, ObserverSet, ObserverWorker,
    WorkerConfig, WorkerStats,
};
use percolator::txn::{self, LivenessConfig};
use percolator::{AsyncClient, AsyncTransaction};
use percolator::{Error, Result};
use percolator_cli::tools::retried;

/// `percolator-workloads observe-demo` options (also its command-line arguments).
#[derive(Clone, Debug, clap::Args)]
pub struct ObserveDemoConfig {
    /// How long documents are written, in seconds.
    #[arg(long, default_value_t = 20)]
    pub seconds: u64,
    /// Observer workers (each with its own client; killed and restarted at random).
    #[arg(long, default_value_t = 3)]
    pub workers: usize,
    /// Clients writing documents.
    #[arg(long, default_value_t = 4)]
    pub writers: usize,
    /// Distinct documents the writers rewrite.
    #[arg(long, default_value_t = 40)]
    pub documents: usize,
    /// Chance that a worker dies at each seam it passes.
    #[arg(long, default_value_t = 0.01)]
    pub crash_rate: f64,
    /// HBase Thrift2 gateway host:port (default: embedded emulator).
    #[arg(long)]
    pub hbase: Option<String>,
    /// Timestamp oracle host:port (default: embedded oracle).
    #[arg(long)]
    pub oracle: Option<String>,
    /// Print the report as JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// What the demo did and found.
#[derive(Debug, Default, Serialize)]
pub struct ObserveDemoReport {
    pub documents_written: u64,
    pub workers_started: u64,
    pub workers_died: u64,
    pub processed: u64,
    pub already_acked: u64,
    pub errors: u64,
    pub documents_checked: usize,
    pub words_checked: usize,
    pub pending_notifications: usize,
    pub mismatches: Vec<String>,
}

const F: &str = "f";
const TEXT: &str = "text";
const COUNTS: &str = "counts";
const APPLIED: &str = "applied";
const COUNT: &str = "count";
const VOCABULARY: [&str; 24] = [
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
    "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango",
    "uniform", "victor", "whiskey", "xray",
];

type Counts = BTreeMap<String, i64>;

fn count_words(text: &str) -> Counts {
    let mut counts = Counts::new();
    for w in text.split_whitespace() {
        *counts.entry(w.to_string()).or_default() += 1;
    }
    counts
}

fn encode(counts: &Counts) -> Vec<u8> {
    counts
        .iter()
        .map(|(w, n)| format!("{w}={n}"))
        .collect::<Vec<_>>()
        .join(" ")
        .into_bytes()
}

fn decode(bytes: Option<&[u8]>) -> Counts {
    let text = bytes.map(String::from_utf8_lossy).unwrap_or_default();
    text.split_whitespace()
        .filter_map(|kv| {
            let (w, n) = kv.split_once('=')?;
            Some((w.to_string(), n.parse().ok()?))
        })
        .collect()
}

/// First observer: a document's text -> its word counts (`f:counts` of the same row).
struct WordCounter;

#[percolator::observer::async_trait]
impl Observer for WordCounter {
    async fn process(
        &self,
        txn: &mut AsyncTransaction,
        row: &[u8],
        col: &ObservedColumn,
    ) -> Result<()> {
        let text = txn.get(&col.table, row, F, TEXT).await?;
        let counts = count_words(&String::from_utf8_lossy(&text.unwrap_or_default()));
        txn.set(&col.table, row, F, COUNTS, encode(&counts))
    }
}

/// Second observer: a document's word counts -> the global counts (table `words`), applying
/// the difference from what it applied last time (kept in `f:applied` by `LastApplied`).
struct GlobalCounter {
    words: String,
    applied: LastApplied,
}

#[percolator::observer::async_trait]
impl Observer for GlobalCounter {
    async fn process(
        &self,
        txn: &mut AsyncTransaction,
        row: &[u8],
        col: &ObservedColumn,
    ) -> Result<()> {
        let change = self.applied.take(txn, row, col).await?;
        let mut delta = decode(change.new.as_deref());
        for (w, n) in decode(change.old.as_deref()) {
            *delta.entry(w).or_default() -= n;
        }
        for (w, d) in delta.into_iter().filter(|(_, d)| *d != 0) {
            let total = txn.get(&self.words, &w, F, COUNT).await?;
            let total: i64 = total
                .map(|v| String::from_utf8_lossy(&v).parse().unwrap_or(0))
                .unwrap_or(0);
            txn.set(&self.words, &w, F, COUNT, (total + d).to_string())?;
        }
        Ok(())
    }
}

struct Tables {
    docs: String,
    words: String,
}

fn observers(tables: &Tables) -> Result<ObserverSet> {
    ObserverSet::new()
        .observe(
            ObservedColumn::new(&tables.docs, F, TEXT),
            "word_counter",
            WordCounter,
        )?
        .observe(
            ObservedColumn::new(&tables.docs, F, COUNTS),
            "global_counter",
            GlobalCounter {
                words: tables.words.clone(),
                applied: LastApplied::new(F, APPLIED),
            },
        )
}

pub fn run(config: &ObserveDemoConfig) -> Result<ObserveDemoReport> {
    let stack = Stack::start(config.hbase.as_deref(), config.oracle.as_deref())?;
    let say = |line: String| {
        if !config.json {
            println!("{line}");
        }
    };
    say(format!(
        "percolator-workloads observe-demo: HBase gateway {}, oracle {}",
        stack.hbase_addr, stack.oracle_addr
    ));
    let suffix = format!("{}_{}", std::process::id(), rand::random::<u16>());
    let liveness = LivenessConfig {
        table: format!("obsdemo_liveness_{suffix}"),
        ttl_secs: 1,
        ..LivenessConfig::default()
    };
    let options = stack.txn_options(liveness)?;
    let tables = Tables {
        docs: format!("obsdemo_docs_{suffix}"),
        words: format!("obsdemo_words_{suffix}"),
    };
    for table in [&tables.docs, &tables.words] {
        // Idempotent: a retry finds the table and checks its families.
        retried(|| txn::setup::create_table(&stack.hbase, options.schema(), table, &[F]))?;
    }
    let runtime = percolator::internals::ambient_or_io()?;
    let new_client =
        || -> Result<AsyncClient> { Ok(stack.client(options.clone())?.asynchronous()) };
    let rate = config.crash_rate;
    let worker_config = WorkerConfig::default()
        .with_lease_ttl(Duration::from_secs(2))
        .with_crash(Arc::new(move |_| rand::random::<f64>() < rate));
    let mut report = ObserveDemoReport::default();
    let start_worker = |report: &mut ObserveDemoReport| -> Result<ObserverWorker> {
        report.workers_started += 1;
        let client = new_client()?;
        percolator::internals::wait(
            &runtime,
            ObserverWorker::start(client, observers(&tables)?, worker_config.clone()),
        )
    };
    let mut workers = Vec::new();
    for _ in 0..config.workers.max(1) {
        workers.push(start_worker(&mut report)?);
    }
    say(format!(
        "{} documents, {} writers, {} workers (each dies at a seam with p={}, and one is killed at random every second), {} s",
        config.documents, config.writers, config.workers, config.crash_rate, config.seconds
    ));
    let writer_client = new_client()?;
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicU64::new(0));
    let writers: Vec<_> = (0..config.writers)
        .map(|_| {
            let (client, stop, written) = (writer_client.clone(), stop.clone(), written.clone());
            let (docs, n) = (tables.docs.clone(), config.documents.max(1));
            runtime.spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let (doc, text, delete) = {
                        let mut rng = rand::thread_rng();
                        let words: Vec<&str> = (0..rng.gen_range(1..8))
                            .map(|_| *VOCABULARY.choose(&mut rng).unwrap_or(&"alpha"))
                            .collect();
                        (
                            format!("doc{}", rng.gen_range(0..n)).into_bytes(),
                            words.join(" "),
                            rng.gen_bool(0.05),
                        )
                    };
                    // A conflict loses this write; the writer goes on with another.
                    let outcome = async {
                        let mut txn = client.begin().await?;
                        if delete {
                            txn.delete(&docs, &doc, F, TEXT)?;
                        } else {
                            txn.set(&docs, &doc, F, TEXT, text)?;
                        }
                        txn.commit().await
                    }
                    .await;
                    if outcome.is_ok() {
                        written.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    let started = Instant::now();
    let mut last_kill = Instant::now();
    let mut last_line = 0;
    while started.elapsed() < Duration::from_secs(config.seconds) {
        std::thread::sleep(Duration::from_millis(100));
        if last_kill.elapsed() >= Duration::from_secs(1) && !workers.is_empty() {
            last_kill = Instant::now();
            let i = rand::thread_rng().gen_range(0..workers.len());
            workers[i].kill();
        }
        replace_dead(&mut workers, &mut report, &runtime, &start_worker)?;
        let second = started.elapsed().as_secs();
        if second == last_line {
            continue;
        }
        last_line = second;
        say(format!(
            "{:>4.0} s: {} documents written, {} workers started, {} died",
            started.elapsed().as_secs_f64(),
            written.load(Ordering::Relaxed),
            report.workers_started,
            report.workers_died
        ));
    }
    stop.store(true, Ordering::Relaxed);
    percolator::internals::wait(&runtime, futures::future::join_all(writers));
    report.documents_written = written.load(Ordering::Relaxed);
    say(
        "writers stopped; workers drain the notifications (no more kills; seam crashes go on)"
            .into(),
    );
    let drained = Instant::now();
    loop {
        replace_dead(&mut workers, &mut report, &runtime, &start_worker)?;
        let pending = retried(|| {
            percolator::internals::wait(&runtime, async {
                Ok::<_, Error>(
                    pending_notifications(&writer_client, &tables.docs).await?
                        + pending_notifications(&writer_client, &tables.words).await?,
                )
            })
        })?;
        report.pending_notifications = pending;
        if pending == 0 || drained.elapsed() > Duration::from_secs(120) {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    for w in workers.drain(..) {
        add(&mut report, &w.stats());
        percolator::internals::wait(&runtime, w.shutdown());
    }
    // Each try starts from the report as it stands: a try cut short adds nothing.
    let verified =
        retried(|| percolator::internals::wait(&runtime, verify(&writer_client, &tables)))?;
    report.mismatches.extend(verified.mismatches);
    report.documents_checked = verified.documents_checked;
    report.words_checked = verified.words_checked;
    percolator::internals::wait(&runtime, writer_client.shutdown());
    Ok(report)
}

/// Prints what `run` found: the report as JSON, or a summary and each mismatch.
pub fn print(report: &ObserveDemoReport, json: bool) {
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(report).unwrap_or_default()
        );
    } else {
        println!(
            "checked {} documents (word counts = recount of the text, applied = counts) and {} global word counts (= sum over documents); {} notifications left",
            report.documents_checked, report.words_checked, report.pending_notifications
        );
        println!(
            "{} documents written, {} observer commits, {} reruns found acknowledged, {} failed runs retried; {} workers started, {} died",
            report.documents_written, report.processed, report.already_acked, report.errors,
            report.workers_started, report.workers_died
        );
        for m in &report.mismatches {
            println!("MISMATCH: {m}");
        }
        if report.mismatches.is_empty() && report.pending_notifications == 0 {
            println!("OK: the derived data matches a recomputation from scratch");
        }
    }
}

/// Counts a worker's runs (when it is replaced or shut down) in the report.
fn add(report: &mut ObserveDemoReport, s: &WorkerStats) {
    report.processed += s.processed;
    report.already_acked += s.already_acked;
    report.errors += s.errors;
}

/// Replaces workers that died (at a seam or killed) by fresh ones with fresh clients.
fn replace_dead(
    workers: &mut [ObserverWorker],
    report: &mut ObserveDemoReport,
    runtime: &tokio::runtime::Handle,
    start: &dyn Fn(&mut ObserveDemoReport) -> Result<ObserverWorker>,
) -> Result<()> {
    for slot in workers.iter_mut() {
        if slot.is_dead() {
            report.workers_died += 1;
            let fresh = start(report)?;
            let dead = std::mem::replace(slot, fresh);
            add(report, &dead.stats());
            percolator::internals::wait(runtime, dead.shutdown());
        }
    }
    Ok(())
}

/// What [`verify`] found.
#[derive(Default)]
struct Verified {
    mismatches: Vec<String>,
    documents_checked: usize,
    words_checked: usize,
}

/// Recomputes the derived data from the documents at one snapshot and compares.
async fn verify(client: &AsyncClient, tables: &Tables) -> Result<Verified> {
    let mut report = Verified::default();
    let txn = client.begin().await?;
    let mut expected_global = Counts::new();
    for row in txn
        .scan_stream(&tables.docs, "", "")?
        .take(usize::MAX)
        .await?
    {
        let cell = |q: &str| {
            row.columns
                .iter()
                .find(|(f, c, _)| f == F.as_bytes() && c == q.as_bytes())
                .map(|(_, _, v)| v.as_slice())
        };
        let text = cell(TEXT).map(String::from_utf8_lossy).unwrap_or_default();
        let expected = count_words(&text);
        let name = String::from_utf8_lossy(&row.row).into_owned();
        if decode(cell(COUNTS)) != expected {
            report.mismatches.push(format!(
                "{name}: counts {:?} for text {text:?}",
                decode(cell(COUNTS))
            ));
        }
        if decode(cell(APPLIED)) != expected {
            report.mismatches.push(format!(
                "{name}: applied {:?} for text {text:?}",
                decode(cell(APPLIED))
            ));
        }
        for (w, n) in expected {
            *expected_global.entry(w).or_default() += n;
        }
        report.documents_checked += 1;
    }
    let mut stored = Counts::new();
    for row in txn
        .scan_stream(&tables.words, "", "")?
        .take(usize::MAX)
        .await?
    {
        let name = String::from_utf8_lossy(&row.row).into_owned();
        let count = row
            .columns
            .iter()
            .find(|(_, q, _)| q == COUNT.as_bytes())
            .and_then(|(_, _, v)| String::from_utf8_lossy(v).parse().ok())
            .unwrap_or(0);
        if count != 0 {
            stored.insert(name, count);
        }
    }
    report.words_checked = expected_global.len().max(stored.len());
    if stored != expected_global {
        report.mismatches.push(format!(
            "global counts {stored:?}, recomputed {expected_global:?}"
        ));
    }
    Ok(report)
}
