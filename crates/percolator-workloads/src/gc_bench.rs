//! `percolator-workloads gc-bench` (hidden): an hour of updates compressed in time, on two tables
//! written by the same transactions, one collected by GC in the background and one not. At
//! the end, versions and bytes per logical cell in each, and GC's throughput. The default
//! 30 s at a 5 s life time is six life times, as an hour is at the default 10 minutes.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::stack::Stack;
use percolator::gc::{GcOptions, GcWorker};
use percolator::hbase::Scan;
use percolator::txn::{self, LivenessConfig};
use percolator::Result;

/// `percolator-workloads gc-bench` options.
#[derive(Clone, Debug, clap::Args)]
pub struct GcBenchConfig {
    /// How long the updates run, in seconds.
    #[arg(long, default_value_t = 30)]
    pub seconds: u64,
    /// Logical cells updated (uniformly at random).
    #[arg(long, default_value_t = 200)]
    pub cells: usize,
    /// Clients updating cells.
    #[arg(long, default_value_t = 4)]
    pub writers: usize,
    /// Bytes per value.
    #[arg(long, default_value_t = 100)]
    pub value_size: usize,
    /// GC's life time (how long versions stay readable), in seconds.
    #[arg(long, default_value_t = 5)]
    pub life_time_secs: u64,
    /// Pause between GC rounds, in seconds.
    #[arg(long, default_value_t = 1)]
    pub interval_secs: u64,
    /// HBase Thrift2 gateway host:port (default: embedded emulator); the bench's tables are
    /// dropped at the end.
    #[arg(long)]
    pub hbase: Option<String>,
}

/// Versions and bytes stored per logical cell in one table.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Footprint {
    pub cells: u64,
    pub versions_per_cell: f64,
    pub max_versions: u64,
    pub bytes_per_cell: f64,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct GcBenchReport {
    pub updates: u64,
    pub seconds: f64,
    pub with_gc: Footprint,
    pub without_gc: Footprint,
    pub gc_rounds_cells_per_sec: f64,
    pub gc_safe_point_lag_secs: f64,
}

pub fn run(config: &GcBenchConfig) -> Result<GcBenchReport> {
    let stack = Stack::start(config.hbase.as_deref(), None)?;
    let suffix = format!("{}_{}", std::process::id(), rand::random::<u16>());
    let (with, without) = (
        format!("gcb_with_{suffix}"),
        format!("gcb_without_{suffix}"),
    );
    // A meta table of its own: its safe point concerns no one else's transactions.
    let schema = txn::Schema {
        meta_table: format!("gcb_meta_{suffix}"),
        ..txn::Schema::default()
    };
    for t in [&with, &without] {
        txn::setup::create_table(&stack.hbase, &schema, t, &["f"])?;
    }
    let liveness = format!("gcb_liveness_{suffix}");
    let liveness_config = LivenessConfig {
        table: liveness.clone(),
        ttl_secs: 3,
        ..LivenessConfig::default()
    };
    let options = stack.txn_options_in(&schema, liveness_config)?;
    let client = stack.client(options.clone())?;
    let runtime = tokio::runtime::Runtime::new().map_err(|e| percolator::Error::io("tokio", e))?;
    let gc_opts = GcOptions::default()
        .with_life_time(Duration::from_secs(config.life_time_secs))?
        .resolving_locks_in(vec![with.clone(), without.clone()]);
    let worker = GcWorker::new(
        stack.client(options)?.asynchronous(),
        stack.hbase.clone(),
        gc_opts,
    );
    let handle = runtime.block_on(async {
        worker.spawn(
            vec![with.clone()],
            Duration::from_secs(config.interval_secs),
        )
    });
    let stop = Arc::new(AtomicBool::new(false));
    let updates = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..config.writers {
            let (client, stop, updates) = (&client, &stop, &updates);
            let (with, without) = (&with, &without);
            s.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let row = format!("c{:05}", rand::random::<usize>() % config.cells);
                    let value = vec![b'x'; config.value_size];
                    let done = client.run(|t| {
                        t.set(with, &row, "f", "q", value.clone())?;
                        t.set(without, &row, "f", "q", value.clone())
                    });
                    if done.is_ok() {
                        updates.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
        std::thread::sleep(Duration::from_secs(config.seconds));
        stop.store(true, Ordering::Relaxed);
    });
    let seconds = started.elapsed().as_secs_f64();
    let last = runtime.block_on(handle.shutdown()).unwrap_or_default();
    client.shutdown();
    let rate = last.cells() as f64 / last.collect_secs.max(1e-9);
    let lag = percolator::oracle::physical_of(stack.tso.get_timestamp()?)
        .saturating_sub(percolator::oracle::physical_of(last.safe_point)) as f64
        / 1000.0;
    let report = GcBenchReport {
        updates: updates.load(Ordering::Relaxed),
        seconds,
        with_gc: footprint(&stack, &with)?,
        without_gc: footprint(&stack, &without)?,
        gc_rounds_cells_per_sec: rate,
        gc_safe_point_lag_secs: lag,
    };
    stack.drop_tables(&[&with, &without, &liveness, &schema.meta_table]);
    Ok(report)
}

/// Every stored version of the user and write families (lock cells are one per logical cell
/// whatever GC does), per logical cell.
fn footprint(stack: &Stack, table: &str) -> Result<Footprint> {
    let schema = txn::Schema::default();
    let scan = Scan::new().max_versions(i32::MAX);
    let (mut cells, mut versions, mut max, mut bytes) = (0u64, 0u64, 0u64, 0u64);
    for row in stack.hbase.scan(table, &scan)? {
        let row = row?;
        let mut per_cell: std::collections::HashMap<Vec<u8>, u64> = Default::default();
        for c in row.cells.iter().filter(|c| c.family != schema.lock_family) {
            let q = if c.family == schema.write_family {
                c.qualifier.clone()
            } else {
                percolator::format::column_qualifier(&c.family, &c.qualifier)
            };
            *per_cell.entry(q).or_default() += 1;
            versions += 1;
            bytes +=
                (row.row.len() + c.family.len() + c.qualifier.len() + 8 + c.value.len()) as u64;
        }
        cells += per_cell.len() as u64;
        max = max.max(per_cell.values().copied().max().unwrap_or(0));
    }
    let per = |n: u64| n as f64 / cells.max(1) as f64;
    Ok(Footprint {
        cells,
        versions_per_cell: per(versions),
        max_versions: max,
        bytes_per_cell: per(bytes),
    })
}
