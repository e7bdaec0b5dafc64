//! One observer run: the transaction that processes one notified (row, column), acknowledges
//! the change and clears the notifications it has covered. The rules (docs/observers.md):
//! - The run's snapshot must include every change whose notification it clears: it reads the
//!   column (which settles every lock below its start_ts) and then the column's newest write
//!   record; a record above its start_ts means a change it cannot see, so it gives up
//!   (`Stale`) and a later run with a newer snapshot takes over.
//! - The acknowledgment (commit_ts of the newest change processed) is a transactional cell:
//!   two runs of one change both write it, so at most one of them commits.
//! - Notifications are cleared only after the commit, by their exact versions as scanned: a
//!   notification written meanwhile, at any version, survives.

use std::sync::Arc;

use async_trait::async_trait;

use crate::error::Result;
use crate::hbase::{Delete, DeleteType, Get};
use crate::observer::model::{ack_key, notification_qualifier, ObservedColumn};
use crate::txn::codec::{column_qualifier, decode_write, WriteKind};
use crate::{AsyncClient, AsyncTransaction};

/// User code run, in a transaction the worker supplies, when an observed column changes.
/// Whatever it writes commits together with the acknowledgment of the change, or not at all.
/// Writing observed columns (of other observers) chains observers into a pipeline.
///
/// ```
/// use percolator::observer::{ObservedColumn, Observer};
/// use percolator::AsyncTransaction;
/// struct Copy;
/// #[async_trait::async_trait]
/// impl Observer for Copy {
///     async fn process(&self, txn: &mut AsyncTransaction, row: &[u8], col: &ObservedColumn) -> percolator::Result<()> {
///         let value = txn.get(&col.table, row, &col.family, &col.qualifier).await?;
///         match value {
///             Some(v) => txn.set(&col.table, row, "f", "copy", v),
///             None => txn.delete(&col.table, row, "f", "copy"),
///         }
///     }
/// }
/// ```
#[async_trait]
pub trait Observer: Send + Sync + 'static {
    /// Processes the current state of `column` in `row`. An error aborts the run; the worker
    /// retries it with backoff (the notification stays until a run commits).
    async fn process(
        &self,
        txn: &mut AsyncTransaction,
        row: &[u8],
        column: &ObservedColumn,
    ) -> Result<()>;

    /// Called after a run of this observer committed (for metrics; the default does nothing).
    ///
    /// ```
    /// # use percolator::observer::{ObservedColumn, Observer};
    /// # struct Nop;
    /// # #[async_trait::async_trait]
    /// # impl Observer for Nop {
    /// #     async fn process(&self, _: &mut percolator::AsyncTransaction, _: &[u8], _: &ObservedColumn) -> percolator::Result<()> { Ok(()) }
    /// # }
    /// Nop.committed(b"row", &ObservedColumn::new("t", "f", "q"), 42);
    /// ```
    fn committed(&self, row: &[u8], column: &ObservedColumn, commit_ts: u64) {
        let _ = (row, column, commit_ts);
    }
}

/// How one run ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The observer ran and its transaction committed at this timestamp.
    Processed(u64),
    /// Nothing newer than the acknowledgment: notifications cleared, nothing committed.
    AlreadyAcked,
    /// A change committed above the run's snapshot: notifications left for a later run.
    Stale,
    /// The worker died at a seam: nothing after it happened.
    Died,
}

/// Where a worker can be made to die (tests and the demo's random kills).
///
/// ```
/// assert_ne!(percolator::observer::WorkerSeam::BeforeProcess, percolator::observer::WorkerSeam::MidScan);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WorkerSeam {
    /// A notification was scanned; its run has not started.
    BeforeProcess,
    /// The run committed; its notifications are not cleared yet.
    AfterCommit,
    /// Between two pages of a partition's scan.
    MidScan,
}

/// Decides whether a worker dies at a seam.
pub type WorkerCrash = Arc<dyn Fn(WorkerSeam) -> bool + Send + Sync>;

/// One run of `observer` (named `name`) over `column` in `row`, for the notification
/// versions `seen` (as scanned).
pub(crate) async fn run_once(
    client: &AsyncClient,
    name: &str,
    observer: &dyn Observer,
    column: &ObservedColumn,
    row: &[u8],
    seen: &[u64],
    die_at: &(dyn Fn(WorkerSeam) -> bool + Sync),
) -> Result<Outcome> {
    let ctx = client.ctx();
    let schema = ctx.schema().clone();
    let mut txn = client.begin().await?;
    let start_ts = txn.start_ts().await?;
    let ack = ack_key(&schema, name, column, row)?;
    // Reading the column settles every lock on it below start_ts (waiting for, rolling
    // forward or back); the acknowledgment comes in the same round trip.
    let acked = txn
        .get_many(&[column.key(row)?, ack.clone()])
        .await?
        .pop()
        .flatten()
        .and_then(|v| <[u8; 8]>::try_from(v.as_slice()).ok())
        .map_or(0, u64::from_be_bytes);
    let newest = newest_write(client, column, row).await?;
    if newest > start_ts {
        return Ok(Outcome::Stale);
    }
    let outcome = if newest <= acked {
        txn.rollback();
        Outcome::AlreadyAcked
    } else {
        observer.process(&mut txn, row, column).await?;
        txn.set_system(ack, newest.to_be_bytes().to_vec())?;
        let commit_ts = txn.commit().await?;
        observer.committed(row, column, commit_ts);
        if die_at(WorkerSeam::AfterCommit) {
            return Ok(Outcome::Died);
        }
        Outcome::Processed(commit_ts)
    };
    clear(client, column, row, seen).await?;
    Ok(outcome)
}

/// Write records read at once when looking for the newest change past rollback records.
const NEWEST_VERSIONS: i32 = 8;

/// The commit_ts of the column's newest change (0 if none), read raw, unbounded by any
/// snapshot. Rollback records are no change; a column with more rollbacks on top than one read
/// returns counts the oldest of them, which at worst runs the observer once for nothing.
async fn newest_write(client: &AsyncClient, column: &ObservedColumn, row: &[u8]) -> Result<u64> {
    let ctx = client.ctx();
    let get = Get::new(row.to_vec())
        .column(
            ctx.schema().write_family.clone(),
            column_qualifier(&column.family, &column.qualifier),
        )
        .max_versions(NEWEST_VERSIONS);
    let found = ctx.store().get_many(&column.table, &[get]).await?;
    let cells = found
        .first()
        .map(|r| r.cells.as_slice())
        .unwrap_or_default();
    let change = cells
        .iter()
        .find(|c| decode_write(&c.value).map_or(true, |w| w.kind != WriteKind::Rollback));
    let unread_below = cells.len() >= NEWEST_VERSIONS as usize;
    let change = change.or(cells.last().filter(|_| unread_below));
    Ok(change.map_or(0, |c| c.timestamp as u64))
}

/// Deletes exactly the notification versions `seen` of `column` in `row`.
async fn clear(
    client: &AsyncClient,
    column: &ObservedColumn,
    row: &[u8],
    seen: &[u64],
) -> Result<()> {
    if seen.is_empty() {
        return Ok(());
    }
    let ctx = client.ctx();
    let q = notification_qualifier(&column.family, &column.qualifier);
    let mut delete = Delete::new(row.to_vec()).delete_type(DeleteType::Column);
    for &v in seen {
        delete = delete.column_at(ctx.schema().notify_family.clone(), q.clone(), v as i64);
    }
    ctx.store().delete(&column.table, &delete).await
}
