//! The table pass: scans every row with all its versions, plans each column below the safe
//! point (`plan`) and removes what the plan names with exact single-version deletes, one
//! Delete per row. Each deleted version is one no reader at or above the safe point can need,
//! and a repeated delete is harmless, so passes may overlap and be cut short anywhere.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use futures::stream::{FuturesUnordered, StreamExt};
use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::format::{
    column_qualifier, decode_lock_state, decode_write, split_column_qualifier, LockState,
    ROW_LOCK_QUALIFIER,
};
use crate::gc::plan::{kept_versions, plan_column, StoredColumn};
use crate::gc::{GcProgress, TableReport};
use crate::hbase::{Delete, DeleteType, RowResult, Scan};
use crate::key::Binary;
use crate::ranges::KeyRange;
use crate::txn::actions::ts;
use crate::txn::store::next_page_start;
use crate::txn::{HBaseAccess, Schema};

/// What a pass needs besides the store.
pub(crate) struct Pass<'a> {
    pub store: &'a dyn HBaseAccess,
    pub schema: &'a Schema,
    pub safe_point: u64,
    pub page_rows: i32,
    /// Test hook: fail as a crash would after this many pages of deletes.
    pub crash_after_pages: Option<u64>,
    pub cancelled: &'a (dyn Fn() -> bool + Send + Sync),
    pub progress: &'a (dyn Fn(&GcProgress) + Send + Sync),
}

impl Pass<'_> {
    /// Collects `table` over `ranges`, `workers` of them at a time. Each range is a pass of
    /// its own (a repeated delete is harmless, so ranges may be cut short or done again);
    /// the report and the progress are the table's, summed over the ranges.
    pub async fn collect(
        &self,
        table: &str,
        ranges: &[KeyRange],
        workers: usize,
    ) -> Result<TableReport> {
        let report = Mutex::new(TableReport {
            table: table.to_string(),
            ranges: ranges.len() as u64,
            ..TableReport::default()
        });
        let pages = AtomicU64::new(0);
        let mut waiting = ranges.iter();
        let mut running = FuturesUnordered::new();
        for range in waiting.by_ref().take(workers.max(1)) {
            running.push(self.collect_range(table, range, &report, &pages));
        }
        // The first failure ends the pass; the ranges under way stop with it.
        while let Some(done) = running.next().await {
            done?;
            if let Some(range) = waiting.next() {
                running.push(self.collect_range(table, range, &report, &pages));
            }
        }
        drop(running);
        Ok(report.into_inner())
    }

    async fn collect_range(
        &self,
        table: &str,
        range: &KeyRange,
        report: &Mutex<TableReport>,
        pages: &AtomicU64,
    ) -> Result<()> {
        let mut from = range.start.clone();
        loop {
            if (self.cancelled)() {
                return Err(Error::Shutdown);
            }
            let scan = Scan::range(from.clone(), range.end.clone()).max_versions(i32::MAX);
            let page = self.store.scan_page(table, &scan, self.page_rows).await?;
            let mut seen = TableReport::default();
            let deletes: Vec<Delete> = page
                .iter()
                .filter_map(|row| self.plan_row(table, row, &mut seen))
                .collect();
            self.store.delete_many(table, &deletes).await?;
            let pages_done = pages.fetch_add(1, Ordering::Relaxed) + 1;
            let progress = {
                let mut report = report.lock();
                report.add(&seen);
                GcProgress {
                    table: table.to_string(),
                    report: report.clone(),
                }
            };
            (self.progress)(&progress);
            if self.crash_after_pages == Some(pages_done) {
                return Err(crate::error::client_crashed(
                    self.safe_point,
                    "gc between pages",
                ));
            }
            match next_page_start(&page, self.page_rows) {
                Some(next) => from = next,
                None => return Ok(()),
            }
        }
    }

    /// The row's exact-version Delete, or `None` when nothing in it is garbage.
    fn plan_row(&self, table: &str, row: &RowResult, report: &mut TableReport) -> Option<Delete> {
        let schema = self.schema;
        let mut columns: BTreeMap<Vec<u8>, StoredColumn> = BTreeMap::new();
        let mut data: BTreeMap<(Vec<u8>, Vec<u8>), Vec<u64>> = BTreeMap::new();
        let mut damaged: Vec<Vec<u8>> = Vec::new();
        for cell in &row.cells {
            let version = u64::try_from(cell.timestamp).unwrap_or(0);
            if cell.family == schema.lock_family && cell.qualifier == ROW_LOCK_QUALIFIER {
                // A row lock holds the data versions of every column it lists.
                match decode_lock_state(Some(&cell.value)) {
                    Ok(LockState::Locked(lock)) => {
                        for c in lock.row.iter().flatten() {
                            let q = column_qualifier(&c.family, &c.qualifier);
                            columns.entry(q).or_default().lock =
                                Some(LockState::Locked(lock.clone()));
                        }
                    }
                    Ok(_) => {}
                    Err(_) => {
                        // Which columns it holds is unknown: leave the whole row alone.
                        report.damaged += 1;
                        tracing::warn!(table, row = %Binary(&row.row), "GC skipped a row with a damaged row lock");
                        return None;
                    }
                }
            } else if cell.family == schema.lock_family {
                match decode_lock_state(Some(&cell.value)) {
                    Ok(lock) => {
                        columns.entry(cell.qualifier.clone()).or_default().lock = Some(lock)
                    }
                    Err(_) => damaged.push(cell.qualifier.clone()),
                }
            } else if cell.family == schema.write_family {
                match decode_write(&cell.value) {
                    Ok(rec) => columns
                        .entry(cell.qualifier.clone())
                        .or_default()
                        .writes
                        .push((version, rec)),
                    Err(_) => damaged.push(cell.qualifier.clone()),
                }
            } else if cell.family != schema.notify_family {
                // Data of transactional columns, the observers' acknowledgments (`_pa`)
                // included; notifications are not versions of anything.
                data.entry((cell.family.clone(), cell.qualifier.clone()))
                    .or_default()
                    .push(version);
            }
        }
        report.rows += 1;
        let mut delete = Delete::new(row.row.clone()).delete_type(DeleteType::Column);
        for (q, mut column) in columns {
            report.cells += 1;
            // A damaged record is reported and its column left alone.
            if damaged.contains(&q) {
                report.damaged += 1;
                continue;
            }
            let Ok((family, qualifier)) = split_column_qualifier(&q) else {
                report.damaged += 1;
                continue;
            };
            column.data = data
                .remove(&(family.clone(), qualifier.clone()))
                .unwrap_or_default();
            let plan = plan_column(&column, self.safe_point);
            report.versions_kept += kept_versions(&column, &plan) as u64;
            report.write_records_removed += plan.writes.len() as u64;
            report.rollback_records_removed += plan.rollbacks;
            report.data_versions_removed += plan.data.len() as u64;
            for v in &plan.writes {
                delete = delete.column_at(schema.write_family.clone(), q.clone(), ts(*v));
            }
            for v in &plan.data {
                delete = delete.column_at(family.clone(), qualifier.clone(), ts(*v));
            }
        }
        if !damaged.is_empty() {
            tracing::warn!(table, row = %Binary(&row.row), "GC skipped columns with damaged records");
        }
        (!delete.columns.is_empty()).then_some(delete)
    }
}
