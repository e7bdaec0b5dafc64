//! The soak's GC loop and its count of versions per cell.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::bank;
use crate::stack::Stack;
use percolator::gc::{GcOptions, GcWorker};
use percolator::hbase::Scan;
use percolator::txn::TxnOptions;
use percolator::{Error, Result};

/// GC rounds over `tables` every `every` seconds until `stop`; tallies rounds, failed rounds
/// and versions collected.
pub(super) fn gc_loop(
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
pub(super) fn versions_per_cell(
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
