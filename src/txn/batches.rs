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
/// pool of 16 busy several calls deep (and a bench's pool of 64); each one holds its mutation,
/// its checkAndMutate, the encoded request and its task's state, about 8 KB in all
/// (docs/benchmarks.md, section 8).
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
    let (mut items, stop) = (items.peekable(), AtomicBool::new(false));
    let few: Vec<usize> = items.by_ref().take(WINDOW).collect();
    if items.peek().is_none() {
        // All fit in one window: they start together, as one plain join.
        let outcomes = futures::future::join_all(few.iter().map(|&i| op(i))).await;
        for (i, outcome) in few.into_iter().zip(outcomes) {
            each(i, outcome);
        }
        return;
    }
    let started = few
        .into_iter()
        .chain(items)
        .take_while(|_| !stop.load(Ordering::Relaxed));
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

/// A commit's cells and what their locks share. The mutations of the first window's cells are
/// built once and kept for both phases (every cell's in most transactions, and the primary's,
/// which the heartbeat holds); a later cell's is built each time it is needed.
pub(crate) struct CommitBatch {
    template: LockTemplate,
    start_ts: u64,
    cells: CommitCells,
    /// Whether cell i leaves an observer notification.
    notify: Vec<bool>,
    /// The mutations of cells `0..kept.len()`, the primary's first.
    kept: Vec<Arc<Mutation>>,
    /// One key for each table and family the cells after `kept` write.
    probes: Vec<CellKey>,
}

impl CommitBatch {
    pub fn new(
        template: LockTemplate,
        start_ts: u64,
        cells: CommitCells,
        notify: Vec<bool>,
    ) -> CommitBatch {
        let mut batch = CommitBatch {
            template,
            start_ts,
            cells,
            notify,
            kept: Vec::new(),
            probes: Vec::new(),
        };
        batch.kept = (0..batch.len().min(WINDOW))
            .map(|i| batch.build(i))
            .collect();
        batch.probes = batch.cells.family_probes(batch.kept.len());
        batch
    }

    fn build(&self, i: usize) -> Arc<Mutation> {
        let (key, write) = (self.cells.key(i), self.cells.write(i));
        let notify = self.notify[i];
        Arc::new(self.template.mutation(self.start_ts, key, write, notify))
    }

    pub fn len(&self) -> usize {
        self.cells.len()
    }

    pub fn primary(&self) -> &Arc<Mutation> {
        &self.kept[0]
    }

    /// Cell i's mutation (its lock and lock bytes are the same every time).
    pub fn mutation(&self, i: usize) -> Arc<Mutation> {
        match self.kept.get(i) {
            Some(m) => Arc::clone(m),
            None => self.build(i),
        }
    }

    /// Keys naming every table and family written, for `Context::check_families`.
    pub fn family_keys(&self) -> impl Iterator<Item = &CellKey> {
        self.kept.iter().map(|m| &m.key).chain(&self.probes)
    }
}
