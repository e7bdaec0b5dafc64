//! `percolator-workloads gc-scale` (hidden): how GC's collection speeds up with workers. A table
//! of `--cells` cells pre-split into `--regions` regions gets two new committed versions of every
//! cell before each measured round, so every round has the same garbage to collect (two write
//! records and two data versions a cell); each round then collects it with the next worker
//! count, and reports cells/s and the speed-up over one worker. Where the gateway's latency
//! bounds a scan (`--hbase` to `serve-emulator --latency-us 1000`, or a real cluster), the
//! speed-up shows what `gc --workers N` buys.

use std::time::Duration;

use crate::stack::Stack;
use percolator::gc::{GcOptions, GcWorker};
use percolator::txn::{self, LivenessConfig};
use percolator::Result;

/// `percolator-workloads gc-scale` options.
#[derive(Clone, Debug, clap::Args)]
pub struct GcScaleConfig {
    /// Logical cells in the table (ten columns a row).
    #[arg(long, default_value_t = 100_000)]
    pub cells: usize,
    /// Regions the table is split into, at even steps of its rows.
    #[arg(long, default_value_t = 16)]
    pub regions: usize,
    /// The worker counts to measure, in turn (comma-separated).
    #[arg(long, default_value = "1,2,4,8", value_delimiter = ',')]
    pub workers: Vec<usize>,
    /// Rows per scan page.
    #[arg(long, default_value_t = 64)]
    pub page_rows: i32,
    /// HBase Thrift2 gateway host:port (default: embedded emulator); the bench's tables are
    /// dropped at the end.
    #[arg(long)]
    pub hbase: Option<String>,
}

/// One measured round.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ScaleRound {
    pub workers: usize,
    pub ranges: u64,
    pub cells: u64,
    pub versions_removed: u64,
    pub collect_secs: f64,
    pub cells_per_sec: f64,
    /// Cells/s over the first round's (one worker's, by default).
    pub speed_up: f64,
}

const COLUMNS: usize = 10;
/// Cells a writing transaction commits.
const CELLS_PER_TXN: usize = 2_000;
const LIFE_TIME: Duration = percolator::gc::MIN_LIFE_TIME;

pub fn run(config: &GcScaleConfig) -> Result<Vec<ScaleRound>> {
    if config.workers.is_empty() || config.cells == 0 {
        return Err(percolator::Error::IllegalArgument {
            message: "gc-scale needs at least one worker count and one cell".into(),
        });
    }
    let stack = Stack::start(config.hbase.as_deref(), None)?;
    let suffix = format!("{}_{}", std::process::id(), rand::random::<u16>());
    let table = format!("gcs_{suffix}");
    let schema = txn::Schema {
        meta_table: format!("gcs_meta_{suffix}"),
        ..txn::Schema::default()
    };
    let rows = config.cells.div_ceil(COLUMNS);
    let regions = config.regions.clamp(1, rows);
    let splits: Vec<Vec<u8>> = (1..regions)
        .map(|i| row(rows * i / regions).into_bytes())
        .collect();
    let desc = schema.table(&table, &["f"]);
    txn::setup::create_split(&stack.hbase, &schema, &desc, Default::default(), &splits)?;
    let liveness = format!("gcs_liveness_{suffix}");
    let liveness_config = LivenessConfig {
        table: liveness.clone(),
        ..LivenessConfig::default()
    };
    let options = stack.txn_options_in(&schema, liveness_config)?;
    let client = stack.client(options.clone())?;
    let runtime = tokio::runtime::Runtime::new().map_err(|e| percolator::Error::io("tokio", e))?;
    // The version each round keeps, so that every round removes the same two a cell.
    write_every_cell(&client, &table, config.cells, "base")?;
    let mut rounds: Vec<ScaleRound> = Vec::new();
    for (version, &workers) in config.workers.iter().enumerate() {
        for pass in 0..2 {
            write_every_cell(&client, &table, config.cells, &format!("v{version}.{pass}"))?;
        }
        std::thread::sleep(LIFE_TIME + Duration::from_millis(500));
        let gc_opts = GcOptions::default()
            .with_life_time(LIFE_TIME)?
            .with_page_rows(config.page_rows)
            .with_workers(workers)?
            .resolving_locks_in(vec![table.clone()]);
        let gc = GcWorker::new(
            stack.client(options.clone())?.asynchronous(),
            stack.hbase.clone(),
            gc_opts,
        );
        let report = runtime.block_on(gc.run_once(std::slice::from_ref(&table), &|_| {}));
        runtime.block_on(gc.shutdown());
        let report = report?;
        let collected = report.tables.first().cloned().unwrap_or_default();
        let cells_per_sec = collected.cells as f64 / report.collect_secs.max(1e-9);
        let first = rounds.first().map_or(cells_per_sec, |r| r.cells_per_sec);
        let round = ScaleRound {
            workers,
            ranges: collected.ranges,
            cells: collected.cells,
            versions_removed: collected.removed(),
            collect_secs: report.collect_secs,
            cells_per_sec,
            speed_up: cells_per_sec / first,
        };
        eprintln!(
            "{} workers: {} cells in {} ranges, {} versions removed in {:.2} s: {:.0} cells/s, {:.2}x",
            round.workers,
            round.cells,
            round.ranges,
            round.versions_removed,
            round.collect_secs,
            round.cells_per_sec,
            round.speed_up
        );
        rounds.push(round);
    }
    client.shutdown();
    stack.drop_tables(&[&table, &liveness, &schema.meta_table]);
    Ok(rounds)
}

fn row(i: usize) -> String {
    format!("r{i:08}")
}

/// A new committed version of each of the table's `cells` cells, `CELLS_PER_TXN` a
/// transaction.
fn write_every_cell(client: &txn::Client, table: &str, cells: usize, value: &str) -> Result<()> {
    for first in (0..cells).step_by(CELLS_PER_TXN) {
        client.run(|t| {
            for cell in first..(first + CELLS_PER_TXN).min(cells) {
                let qualifier = format!("c{}", cell % COLUMNS);
                t.set(table, row(cell / COLUMNS), "f", qualifier, value)?;
            }
            Ok(())
        })?;
    }
    Ok(())
}
