//! One observer run: the transaction that processes one notified (row, column), acknowledges
//! the change and clears the notifications it has covered. The rules (docs/observers.md):
//! - The run's snapshot must include every change whose notification it clears: the row read
//!   that settles every lock on the column below its start_ts also returns the column's newest
//!   write record; a record above its start_ts means a change it cannot see, so it gives up
//!   (`Stale`) and a later run with a newer snapshot takes over.
//! - The acknowledgment (commit_ts of the newest change processed) is a transactional cell:
//!   two runs of one change both write it, so at most one of them commits.
//! - Notifications are cleared with the commit (in the commit point's CAS) or after it, by
//!   their exact versions as scanned: a notification written meanwhile, at any version,
//!   survives.

use std::sync::Arc;

use async_trait::async_trait;

use crate::error::Result;
use crate::hbase::{Delete, DeleteType};
use crate::observer::model::{ack_key, notification_qualifier, ObservedColumn};
use crate::{AsyncClient, AsyncTransaction};

/// User code run, in a transaction the worker supplies, when an observed column changes.
/// Whatever it writes commits together with the acknowledgment of the change, or not at all.
/// Writing observed columns (of other observers) chains observers into a pipeline.
///
/// ```
/// use percolator::observer::{ObservedColumn, Observer};
/// use percolator::AsyncTransaction;
/// struct Copy;
/// #[percolator::observer::async_trait]
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

    /// Called after a run of this observer committed, with its timestamps and the commit_ts
    /// of the change it processed (for metrics such as the lag; the default does nothing).
    ///
    /// ```
    /// # use percolator::observer::{CommittedRun, ObservedColumn, Observer};
    /// # struct Nop;
    /// # #[percolator::observer::async_trait]
    /// # impl Observer for Nop {
    /// #     async fn process(&self, _: &mut percolator::AsyncTransaction, _: &[u8], _: &ObservedColumn) -> percolator::Result<()> { Ok(()) }
    /// # }
    /// Nop.committed(b"row", &ObservedColumn::new("t", "f", "q"), &CommittedRun::new(41, 42, 40));
    /// ```
    fn committed(&self, row: &[u8], column: &ObservedColumn, run: &CommittedRun) {
        let _ = (row, column, run);
    }
}

/// A committed observer run, as [`Observer::committed`] reports it.
///
/// ```
/// use percolator::oracle::compose;
/// let run = percolator::observer::CommittedRun::new(compose(1_030, 0), compose(1_045, 3), compose(1_000, 9));
/// assert_eq!(run.lag(), std::time::Duration::from_millis(45));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CommittedRun {
    /// The run's transaction's start timestamp (its snapshot).
    pub start_ts: u64,
    /// The run's commit timestamp.
    pub commit_ts: u64,
    /// The commit timestamp of the newest change of the column the run processed (the value
    /// its acknowledgment holds; changes committed before the run collapse into it).
    pub change_commit_ts: u64,
}

impl CommittedRun {
    /// ```
    /// let run = percolator::observer::CommittedRun::new(11, 12, 10);
    /// assert_eq!((run.start_ts, run.commit_ts, run.change_commit_ts), (11, 12, 10));
    /// ```
    pub fn new(start_ts: u64, commit_ts: u64, change_commit_ts: u64) -> CommittedRun {
        CommittedRun {
            start_ts,
            commit_ts,
            change_commit_ts,
        }
    }

    /// The lag: from the change's commit to the run's, by the oracle's timestamps (their
    /// physical milliseconds).
    pub fn lag(&self) -> std::time::Duration {
        let ms = crate::oracle::physical_of(self.commit_ts)
            .saturating_sub(crate::oracle::physical_of(self.change_commit_ts));
        std::time::Duration::from_millis(ms)
    }
}

/// How one run ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The observer ran and its transaction committed.
    Processed,
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
    /// The run committed (its notifications went with the commit point, unless the commit had
    /// to be settled by re-reading the primary: then they are not cleared yet).
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
    let schema = ctx.schema();
    let mut txn = client.begin().await?;
    let start_ts = txn.start_ts().await?;
    let ack = ack_key(schema, name, column, row)?;
    // One row read settles every lock on the column below start_ts (waiting for, rolling
    // forward or back) and, in the same atomic read, finds the column's newest change at any
    // version: a change above start_ts is one the snapshot does not show, so the run gives up
    // (`Stale`) and a later run with a newer snapshot takes over. The observer's own read of
    // the column is then served from this one.
    let read = txn
        .get_many_with_newest(&[column.key(row)?, ack.clone()])
        .await?;
    let newest = read[0].1;
    let acked = read[1]
        .0
        .as_deref()
        .and_then(|v| <[u8; 8]>::try_from(v).ok())
        .map_or(0, u64::from_be_bytes);
    if newest > start_ts {
        return Ok(Outcome::Stale);
    }
    let clearing = clear_delete(schema, column, row, seen);
    if newest <= acked {
        txn.rollback().await;
        apply_clear(client, column, clearing).await?;
        return Ok(Outcome::AlreadyAcked);
    }
    // The acknowledgment is written first so that it is the primary: the notifications are in
    // its row, and their delete lands in the commit point's own CAS.
    txn.set_system(ack, newest.to_be_bytes().to_vec())?;
    observer.process(&mut txn, row, column).await?;
    let committed = txn.commit_with(clearing.clone()).await?;
    let run = CommittedRun::new(start_ts, committed.commit_ts, newest);
    crate::metrics::seconds(
        crate::metrics::key!(crate::metrics::OBSERVER_LAG),
        run.lag(),
    );
    observer.committed(row, column, &run);
    if die_at(WorkerSeam::AfterCommit) {
        return Ok(Outcome::Died);
    }
    // A commit settled by re-reading its primary did not apply the delete: clear now.
    if !committed.extra_applied {
        apply_clear(client, column, clearing).await?;
    }
    Ok(Outcome::Processed)
}

/// The delete of exactly the notification versions `seen` of `column` in `row` (`None` when
/// none were seen): a notification written meanwhile, at any version, survives it.
fn clear_delete(
    schema: &crate::txn::Schema,
    column: &ObservedColumn,
    row: &[u8],
    seen: &[u64],
) -> Option<Delete> {
    if seen.is_empty() {
        return None;
    }
    let q = notification_qualifier(&column.family, &column.qualifier);
    let mut delete = Delete::new(row.to_vec()).delete_type(DeleteType::Column);
    for &v in seen {
        delete = delete.column_at(schema.notify_family.clone(), q.clone(), v as i64);
    }
    Some(delete)
}

async fn apply_clear(
    client: &AsyncClient,
    column: &ObservedColumn,
    clearing: Option<Delete>,
) -> Result<()> {
    match clearing {
        Some(delete) => client.ctx().store().delete(&column.table, &delete).await,
        None => Ok(()),
    }
}
