//! `percolator-workloads bench --workloads txn_large`: one transaction of many cells, against raw
//! putMultiple batches writing as many cells, each timed and its client's memory measured.
//!
//! The gateway runs in another process (the caller's `--hbase`, or an emulator the command
//! spawns), so the resident memory measured here is the client's: the bench's own process
//! with its in-process oracle, whose footprint is part of the baseline. Each measurement
//! resets the kernel's high-water mark first (`/proc/self/clear_refs`), so a peak is that
//! measurement's alone; the allocator keeps memory a workload freed for the next one, so the
//! baselines of later measurements in one process include it (the transaction is measured
//! first in each round, and `--rounds 1` gives each process one measurement of it).

use std::collections::BTreeMap;
use std::time::Instant;

use futures::StreamExt;
use serde::Serialize;

use crate::stack::Stack;
use percolator::hbase::{FamilyDescriptor, Put, TableDescriptor};
use percolator::txn::{self, LivenessConfig};
use percolator::{Error, Result};

/// One transaction of `--large-cells` cells, secondaries committed before it returns.
pub const TXN_LARGE: &str = "txn_large";
/// The same cells in putMultiple batches of [`RAW_BATCH_ROWS`] rows: the baseline.
pub const RAW_LARGE: &str = "raw_large";
pub const LARGE_WORKLOADS: [&str; 2] = [TXN_LARGE, RAW_LARGE];

/// Bytes of every value written.
pub const VALUE_BYTES: usize = 100;
/// Columns of every row.
pub const COLUMNS: usize = 10;
/// Rows of one raw putMultiple (1,000 cells, about 100 KB, well under a gateway's frame).
const RAW_BATCH_ROWS: usize = 100;
/// Raw batches in flight at once.
const RAW_IN_FLIGHT: usize = 8;

/// Cells of the transaction that opens the connections before anything is measured.
const WARM_UP_CELLS: usize = 1_000;

const F: &str = "f";

#[derive(Clone, Debug)]
pub struct LargeConfig {
    pub cells: usize,
    /// Each round measures every workload once, in turn.
    pub rounds: usize,
    pub workloads: Vec<String>,
    /// Where the gateway runs, as the report names it.
    pub gateway: String,
}

/// One measurement.
#[derive(Clone, Debug, Serialize)]
pub struct LargeRun {
    pub seconds: f64,
    pub us_per_cell: f64,
    /// Resident memory of this process just before the workload began.
    pub baseline_rss_bytes: u64,
    /// The most resident memory of this process while the workload ran.
    pub peak_rss_bytes: u64,
    /// `txn_large`: resident memory once every write is buffered, before the commit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buffered_rss_bytes: Option<u64>,
}

/// A workload's runs and their means.
#[derive(Clone, Debug, Serialize)]
pub struct LargeResult {
    pub cells: usize,
    /// The values written, in bytes.
    pub payload_bytes: u64,
    pub seconds: f64,
    pub us_per_cell: f64,
    pub baseline_rss_bytes: u64,
    pub peak_rss_bytes: u64,
    /// `peak_rss_bytes - baseline_rss_bytes`: what the workload itself took.
    pub peak_over_baseline_bytes: u64,
    /// `peak_over_baseline_bytes / payload_bytes`.
    pub peak_over_baseline_per_payload: f64,
    pub runs: Vec<LargeRun>,
}

#[derive(Clone, Debug, Serialize)]
pub struct LargeReport {
    pub gateway: String,
    /// Whether each peak is its measurement's own (the high-water mark could be reset);
    /// otherwise it is the process's peak so far.
    pub peak_reset: bool,
    pub workloads: BTreeMap<String, LargeResult>,
    /// `txn_large` time per cell over `raw_large`'s, when both ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub txn_over_raw: Option<f64>,
}

pub fn is_large(workload: &str) -> bool {
    LARGE_WORKLOADS.contains(&workload)
}

/// The workloads to run: `txn_large` brings its baseline `raw_large` along.
fn chosen(config: &LargeConfig) -> Result<Vec<&'static str>> {
    if let Some(other) = config.workloads.iter().find(|w| !is_large(w)) {
        return Err(Error::IllegalArgument {
            message: format!(
                "{other} cannot run with {}: they measure one transaction at a time in a \
                 process of their own",
                LARGE_WORKLOADS.join(", ")
            ),
        });
    }
    let wants = |name: &str| config.workloads.iter().any(|w| w == name);
    // The transaction first: the allocator keeps what a workload freed for the next one, so
    // the one measured first in a process has the baseline nothing inflated.
    let mut out = Vec::new();
    if wants(TXN_LARGE) {
        out.push(TXN_LARGE);
    }
    if wants(RAW_LARGE) || wants(TXN_LARGE) {
        out.push(RAW_LARGE);
    }
    Ok(out)
}

/// The key of cell `i` of round `round`: [`COLUMNS`] cells a row.
fn cell(round: usize, i: usize) -> (String, String) {
    (
        format!("large{round:03}-{:08}", i / COLUMNS),
        format!("c{}", i % COLUMNS),
    )
}

/// The value of cell `i`: [`VALUE_BYTES`] bytes that differ from cell to cell.
pub fn value(i: usize) -> Vec<u8> {
    let mut v = format!("{i:016}").into_bytes();
    v.resize(VALUE_BYTES, b'.');
    v
}

pub fn run(
    stack: &Stack,
    config: &LargeConfig,
    mut each: impl FnMut(&str, &LargeRun),
) -> Result<LargeReport> {
    let workloads = chosen(config)?;
    let suffix = format!("{}_{}", std::process::id(), rand::random::<u32>());
    let (raw_table, txn_table) = (format!("large_raw_{suffix}"), format!("large_txn_{suffix}"));
    let liveness = LivenessConfig {
        table: "percolator_liveness".into(),
        ..LivenessConfig::default()
    };
    // The bench times the whole commit: the secondaries too, not only the commit point.
    let options = stack
        .txn_options(liveness)?
        .to_builder()
        .sync_secondaries(true)
        .build();
    stack
        .hbase
        .admin()
        .create_table(&TableDescriptor::new(raw_table.clone()).family(FamilyDescriptor::new(F)))?;
    txn::setup::create_table(&stack.hbase, options.schema(), &txn_table, &[F])?;
    let client = stack.client(options)?.asynchronous();
    let runtime = percolator::internals::client_runtime(&client).clone();
    // Connections, the tables' descriptors and the oracle, outside the measurement.
    percolator::internals::wait(&runtime, async {
        let mut txn = client.begin().await?;
        for i in 0..WARM_UP_CELLS {
            txn.set(&txn_table, format!("warm-up-{i:04}"), F, "c0", value(i))?;
        }
        txn.commit().await?;
        raw_batches(&stack.hbase.asynchronous(), &raw_table, usize::MAX, COLUMNS).await
    })?;
    let peak_reset = reset_peak();
    let mut runs: BTreeMap<&str, Vec<LargeRun>> = BTreeMap::new();
    for round in 0..config.rounds.max(1) {
        for &name in &workloads {
            reset_peak();
            let baseline = rss_bytes("VmRSS:");
            let started = Instant::now();
            let hbase = stack.hbase.asynchronous();
            let mut buffered = None;
            percolator::internals::wait(&runtime, async {
                match name {
                    RAW_LARGE => raw_batches(&hbase, &raw_table, round, config.cells).await,
                    _ => {
                        let mut txn = client.begin().await?;
                        for i in 0..config.cells {
                            let (row, column) = cell(round, i);
                            txn.set(&txn_table, row, F, column, value(i))?;
                        }
                        buffered = Some(rss_bytes("VmRSS:"));
                        txn.commit().await.map(drop)
                    }
                }
            })?;
            let seconds = started.elapsed().as_secs_f64();
            let run = LargeRun {
                seconds,
                us_per_cell: seconds * 1e6 / config.cells.max(1) as f64,
                baseline_rss_bytes: baseline,
                peak_rss_bytes: rss_bytes("VmHWM:").max(baseline),
                buffered_rss_bytes: buffered,
            };
            each(name, &run);
            runs.entry(name).or_default().push(run);
        }
    }
    percolator::internals::wait(&runtime, client.shutdown());
    let workloads: BTreeMap<String, LargeResult> = runs
        .into_iter()
        .map(|(name, runs)| (name.to_string(), summary(config.cells, runs)))
        .collect();
    let txn_over_raw = workloads
        .get(TXN_LARGE)
        .zip(workloads.get(RAW_LARGE))
        .map(|(t, r)| t.us_per_cell / r.us_per_cell);
    Ok(LargeReport {
        gateway: config.gateway.clone(),
        peak_reset,
        workloads,
        txn_over_raw,
    })
}

/// Cells `0..cells` of `round` in putMultiple batches, [`RAW_IN_FLIGHT`] at a time, each
/// batch's values made just before it is sent.
async fn raw_batches(
    hbase: &percolator::AsyncHBaseClient,
    table: &str,
    round: usize,
    cells: usize,
) -> Result<()> {
    let per_batch = RAW_BATCH_ROWS * COLUMNS;
    let batches = cells.div_ceil(per_batch);
    let mut sent = futures::stream::iter(0..batches)
        .map(|b| async move {
            let first = b * per_batch;
            let puts: Vec<Put> = (first..(first + per_batch).min(cells))
                .step_by(COLUMNS)
                .map(|row_start| {
                    let row_end = (row_start + COLUMNS).min(cells);
                    (row_start..row_end).fold(Put::new(cell(round, row_start).0), |put, i| {
                        put.add(F, cell(round, i).1, value(i))
                    })
                })
                .collect();
            hbase.put_many(table, &puts).await
        })
        .buffer_unordered(RAW_IN_FLIGHT);
    while let Some(done) = sent.next().await {
        done?;
    }
    Ok(())
}

fn summary(cells: usize, runs: Vec<LargeRun>) -> LargeResult {
    let n = runs.len().max(1) as f64;
    let mean = |f: fn(&LargeRun) -> f64| runs.iter().map(f).sum::<f64>() / n;
    let baseline = mean(|r| r.baseline_rss_bytes as f64) as u64;
    let peak = mean(|r| r.peak_rss_bytes as f64) as u64;
    let payload = (cells * VALUE_BYTES) as u64;
    let over = mean(|r| r.peak_rss_bytes.saturating_sub(r.baseline_rss_bytes) as f64) as u64;
    LargeResult {
        cells,
        payload_bytes: payload,
        seconds: mean(|r| r.seconds),
        us_per_cell: mean(|r| r.us_per_cell),
        baseline_rss_bytes: baseline,
        peak_rss_bytes: peak,
        peak_over_baseline_bytes: over,
        peak_over_baseline_per_payload: over as f64 / payload.max(1) as f64,
        runs,
    }
}

/// Resets this process's resident high-water mark to its present size (Linux 4.0 and newer);
/// false where it cannot.
fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// A `/proc/self/status` memory line (`VmRSS:`, `VmHWM:`) in bytes; 0 where unreadable.
fn rss_bytes(field: &str) -> u64 {
    let kb: u64 = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(field))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0);
    kb * 1024
}

/// `percolator-workloads large-client`: the child the large-transaction crash tests kill (hidden).
/// Commits one transaction writing `--tag`'s value to cells `0..--cells` of `--table`, the
/// cells and values of `txn_large`, with its secondaries committed before it returns.
#[derive(Clone, Debug, clap::Args)]
pub struct LargeClientConfig {
    /// HBase Thrift2 gateway.
    #[arg(long)]
    pub hbase: String,
    /// Timestamp oracle.
    #[arg(long)]
    pub oracle: String,
    /// A transactional table with family `f`.
    #[arg(long)]
    pub table: String,
    /// Cells to write.
    #[arg(long)]
    pub cells: usize,
    /// What the values start with (see [`tagged_value`]).
    #[arg(long)]
    pub tag: String,
    /// `SEAM[:N]`: at the Nth time (default 1) the commit reaches seam SEAM (`Seam::name`),
    /// print `paused at SEAM` and stop there until killed.
    #[arg(long)]
    pub pause_at: Option<String>,
    /// `SEAM`: the first time the commit reaches SEAM, print `reached SEAM` and go on.
    #[arg(long)]
    pub announce_at: Option<String>,
}

/// The value a [`LargeClientConfig`] child writes to cell `i`.
pub fn tagged_value(tag: &str, i: usize) -> Vec<u8> {
    let mut v = format!("{tag}-{i:016}").into_bytes();
    v.resize(VALUE_BYTES, b'.');
    v
}

/// The row and column of cell `i` of a [`LargeClientConfig`] child's table.
pub fn client_cell(i: usize) -> (String, String) {
    cell(0, i)
}

/// The child's crash injector: it never makes the client die, it stops the commit where the
/// parent asked (or tells it a seam was passed), so that the parent's SIGKILL lands there.
fn pausing_injector(config: &LargeClientConfig) -> percolator::txn::CrashInjector {
    use std::io::Write;
    use std::sync::atomic::{AtomicUsize, Ordering};
    // Seam names hold `::`: a count is what follows the last colon, when it is a number.
    let (pause, nth) = match config.pause_at.as_deref() {
        None => (None, 1),
        Some(p) => match p.rsplit_once(':').map(|(seam, n)| (seam, n.parse())) {
            Some((seam, Ok(n))) => (Some(seam.to_string()), n),
            _ => (Some(p.to_string()), 1),
        },
    };
    let announce = config.announce_at.clone();
    let (reached, announced) = (AtomicUsize::new(0), AtomicUsize::new(0));
    std::sync::Arc::new(move |seam: percolator::txn::Seam| {
        let name = seam.name();
        if announce.as_deref() == Some(name) && announced.fetch_add(1, Ordering::SeqCst) == 0 {
            println!("reached {name}");
            let _ = std::io::stdout().flush();
        }
        if pause.as_deref() == Some(name) && reached.fetch_add(1, Ordering::SeqCst) + 1 == nth {
            println!("paused at {name}");
            let _ = std::io::stdout().flush();
            loop {
                std::thread::sleep(std::time::Duration::from_secs(3600));
            }
        }
        false
    })
}

/// The child the crash tests kill: see [`LargeClientConfig`].
pub fn run_client(config: &LargeClientConfig) -> Result<()> {
    let stack = Stack::start(Some(&config.hbase), Some(&config.oracle))?;
    let liveness = LivenessConfig {
        table: "percolator_liveness".into(),
        ttl_secs: 1,
        ..LivenessConfig::default()
    };
    let options = stack
        .txn_options(liveness)?
        .to_builder()
        .sync_secondaries(true)
        .crash_injector(pausing_injector(config))
        .build();
    let client = stack.client(options)?.asynchronous();
    let runtime = percolator::internals::client_runtime(&client).clone();
    percolator::internals::wait(&runtime, async {
        let mut txn = client.begin().await?;
        for i in 0..config.cells {
            let (row, column) = client_cell(i);
            txn.set(&config.table, row, F, column, tagged_value(&config.tag, i))?;
        }
        txn.commit().await?;
        client.shutdown().await;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn txn_large_brings_its_raw_baseline_and_runs_alone() {
        let config = |w: &[&str]| LargeConfig {
            cells: 10,
            rounds: 1,
            workloads: w.iter().map(|s| s.to_string()).collect(),
            gateway: String::new(),
        };
        assert_eq!(
            chosen(&config(&[TXN_LARGE])).unwrap(),
            [TXN_LARGE, RAW_LARGE]
        );
        assert_eq!(chosen(&config(&[RAW_LARGE])).unwrap(), [RAW_LARGE]);
        assert!(chosen(&config(&[TXN_LARGE, "txn_get"])).is_err());
    }

    #[test]
    fn cells_fill_rows_of_ten_columns_with_distinct_values() {
        assert_eq!(cell(2, 0), ("large002-00000000".into(), "c0".into()));
        assert_eq!(cell(2, 19), ("large002-00000001".into(), "c9".into()));
        assert_eq!(value(7).len(), VALUE_BYTES);
        assert_ne!(value(7), value(8));
    }
}
