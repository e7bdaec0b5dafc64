//! How a commit sends its per-cell requests: a bounded window of them in flight, each built
//! just before it is sent and dropped once answered, so that a transaction of any size holds
//! the requests of one window, not one per cell (docs/design.md, "Large transactions").

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use futures::StreamExt;

use crate::key::CellKey;
use crate::txn::mutation::{LockTemplate, Mutation};
use crate::txn::packed::CommitCells;

/// Requests of one phase in flight at once. Enough to keep every connection of the default
/// pool of 16 busy several calls deep (and a bench's pool of 64); each one holds its
/// encoded request and its task's state, a few KB.
pub(crate) const WINDOW: usize = 256;

/// Whether to start more requests after one was answered.
pub(crate) enum Flow {
    Go,
    Stop,
}

/// Runs `op` on each of `items` with at most [`WINDOW`] running, started in order, handing
/// each outcome to `each` as it comes. Once `each` says stop, nothing more is started; the
/// requests already sent are still awaited, so that every outcome is known.
pub(crate) async fn windowed<T, Fut>(
    items: impl Iterator<Item = usize>,
    op: impl Fn(usize) -> Fut,
    mut each: impl FnMut(usize, T) -> Flow,
) where
    Fut: Future<Output = T>,
{
    let stop = AtomicBool::new(false);
    let started = items.take_while(|_| !stop.load(Ordering::Relaxed));
    let mut running = futures::stream::iter(started)
        .map(|i| {
            let done = op(i);
            async move { (i, done.await) }
        })
        .buffer_unordered(WINDOW);
    while let Some((i, outcome)) = running.next().await {
        if let Flow::Stop = each(i, outcome) {
            stop.store(true, Ordering::Relaxed);
        }
    }
}

/// A commit's cells and what their locks share; the mutation of a cell is built when it is
/// needed, except the primary's, which the heartbeat holds while the commit runs.
pub(crate) struct CommitBatch {
    template: LockTemplate,
    start_ts: u64,
    cells: CommitCells,
    /// Whether cell i leaves an observer notification.
    notify: Vec<bool>,
    primary: Arc<Mutation>,
}

impl CommitBatch {
    pub fn new(
        template: LockTemplate,
        start_ts: u64,
        cells: CommitCells,
        notify: Vec<bool>,
    ) -> CommitBatch {
        let primary =
            Arc::new(template.mutation(start_ts, cells.key(0), cells.write(0), notify[0]));
        CommitBatch {
            template,
            start_ts,
            cells,
            notify,
            primary,
        }
    }

    pub fn len(&self) -> usize {
        self.cells.len()
    }

    pub fn primary(&self) -> &Arc<Mutation> {
        &self.primary
    }

    /// Cell i's mutation (its lock and lock bytes are the same every time).
    pub fn mutation(&self, i: usize) -> Arc<Mutation> {
        if i == 0 {
            return Arc::clone(&self.primary);
        }
        let (key, write) = (self.cells.key(i), self.cells.write(i));
        Arc::new(
            self.template
                .mutation(self.start_ts, key, write, self.notify[i]),
        )
    }

    /// One key for each table and family written.
    pub fn family_probes(&self) -> Vec<CellKey> {
        self.cells.family_probes()
    }
}
