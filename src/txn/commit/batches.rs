//! How a commit sends its per-cell requests: a bounded window of them in flight, each built
//! just before it is sent and dropped once answered, so that a transaction of any size holds
//! the requests of one window, not one per cell (docs/design.md, "Large transactions").

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use futures::StreamExt;
use smallvec::SmallVec;

use super::mutation::{LockTemplate, Mutation};
use super::packed::CommitCells;
use crate::txn::CellFlags;

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
    // Most commits lock one cell or two. One request's future stays in this future; two are
    // joined in one allocation, not in a slice of them: held in place, they would double the
    // size of every commit's future, which each layer of the commit copies as it starts.
    let Some(first) = items.next() else { return };
    let Some(second) = items.next() else {
        each(first, op(first).await);
        return;
    };
    if items.peek().is_none() {
        let (a, b) = Box::pin(futures::future::join(op(first), op(second))).await;
        each(first, a);
        each(second, b);
        return;
    }
    let few: Vec<usize> = [first, second]
        .into_iter()
        .chain(items.by_ref().take(WINDOW - 2))
        .collect();
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

/// A commit's locks and what they share: one lock per cell, or, in a table that locks rows
/// (docs/design.md invariant 14), one per row for all of its cells. The mutations of the first
/// window's locks are built once and kept for both phases (every lock's in most transactions,
/// and the primary's, which the heartbeat holds); a later lock's is built each time it is
/// needed.
pub(crate) struct CommitBatch {
    template: LockTemplate,
    start_ts: u64,
    cells: CommitCells,
    /// Whether cell i leaves an observer notification.
    notify: CellFlags,
    /// The tables that lock rows, among those written.
    row_tables: Vec<String>,
    /// Which cells each lock holds, when a table locks rows; `None`: lock i holds cell i.
    units: Option<Units>,
    /// The mutations of locks `0..kept.len()`, the primary's first (in place for the one or
    /// two most commits take).
    kept: SmallVec<[Arc<Mutation>; 2]>,
}

/// The cells of each lock: lock u holds cells `order[starts[u]..starts[u + 1]]`, the first
/// holding the primary and every other cell of its row when its table locks rows.
struct Units {
    order: Vec<u32>,
    starts: Vec<u32>,
}

impl Units {
    /// Groups `cells` (the primary first, then the rest in key order, so that a row's cells
    /// are next to each other) into locks.
    fn of(cells: &CommitCells, locks_rows: impl Fn(&str) -> bool) -> Units {
        let same_row = |i: usize, j: usize| {
            cells.table(i) == cells.table(j) && cells.cell(i).row() == cells.cell(j).row()
        };
        let primary_row = locks_rows(cells.table(0));
        let mut order = vec![0u32];
        let mut starts = vec![0u32];
        if primary_row {
            order.extend(
                (1..cells.len())
                    .filter(|&i| same_row(0, i))
                    .map(|i| i as u32),
            );
        }
        let mut last: Option<usize> = None;
        for i in 1..cells.len() {
            if primary_row && same_row(0, i) {
                continue;
            }
            let joins = last.is_some_and(|l| locks_rows(cells.table(i)) && same_row(l, i));
            if !joins {
                starts.push(order.len() as u32);
            }
            order.push(i as u32);
            last = Some(i);
        }
        starts.push(order.len() as u32);
        Units { order, starts }
    }

    fn len(&self) -> usize {
        self.starts.len() - 1
    }

    fn cells(&self, u: usize) -> impl Iterator<Item = usize> + '_ {
        let (from, to) = (self.starts[u] as usize, self.starts[u + 1] as usize);
        self.order[from..to].iter().map(|&i| i as usize)
    }
}

impl CommitBatch {
    pub fn new(
        template: LockTemplate,
        start_ts: u64,
        cells: CommitCells,
        notify: CellFlags,
        row_tables: Vec<String>,
    ) -> CommitBatch {
        let units = (!row_tables.is_empty())
            .then(|| Units::of(&cells, |t| row_tables.iter().any(|r| r == t)));
        let mut batch = CommitBatch {
            template,
            start_ts,
            cells,
            notify,
            row_tables,
            units,
            kept: SmallVec::new(),
        };
        batch.kept = (0..batch.len().min(WINDOW))
            .map(|u| batch.build(u))
            .collect();
        batch
    }

    fn build(&self, u: usize) -> Arc<Mutation> {
        let cell = |i: usize| (self.cells.key(i), self.cells.write(i), self.notify[i]);
        let Some(units) = &self.units else {
            let (key, write, notify) = cell(u);
            return Arc::new(self.template.mutation(self.start_ts, key, write, notify));
        };
        let mut members = units.cells(u).peekable();
        let first = *members.peek().expect("a lock holds a cell");
        let table = self.cells.table(first);
        if !self.row_tables.iter().any(|r| r == table) {
            let (key, write, notify) = cell(first);
            return Arc::new(self.template.mutation(self.start_ts, key, write, notify));
        }
        let writes = members.map(cell).collect();
        Arc::new(self.template.row_mutation(self.start_ts, writes))
    }

    /// How many locks the commit takes.
    pub fn len(&self) -> usize {
        match &self.units {
            Some(units) => units.len(),
            None => self.cells.len(),
        }
    }

    pub fn primary(&self) -> &Arc<Mutation> {
        &self.kept[0]
    }

    /// Lock u's mutation (its lock and lock bytes are the same every time).
    pub fn mutation(&self, u: usize) -> Arc<Mutation> {
        match self.kept.get(u) {
            Some(m) => Arc::clone(m),
            None => self.build(u),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::super::mutation::Write;
    use super::super::packed::WriteBuffer;
    use super::*;
    use crate::key::CellKey;

    #[test]
    fn a_table_that_locks_rows_takes_one_lock_a_row_and_the_primarys_row_comes_first() {
        let mut b = WriteBuffer::default();
        for (t, r, q) in [
            ("rows", "1", "a"),
            ("rows", "2", "a"),
            ("rows", "1", "b"),
            ("cells", "1", "a"),
            ("cells", "1", "b"),
            ("rows", "2", "b"),
        ] {
            b.insert(&CellKey::new(t, r, "f", q).unwrap(), &Write::Put(q.into()));
        }
        let cells = b.into_commit_order(&CellKey::new("rows", "2", "f", "b").unwrap());
        let units = Units::of(&cells, |t| t == "rows");
        let locks: Vec<Vec<String>> = (0..units.len())
            .map(|u| {
                units
                    .cells(u)
                    .map(|i| {
                        let k = cells.key(i);
                        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
                        format!("{}/{}:{}", k.table, text(&k.row), text(&k.qualifier))
                    })
                    .collect()
            })
            .collect();
        assert_eq!(
            locks,
            [
                vec!["rows/2:b", "rows/2:a"],
                vec!["rows/1:a", "rows/1:b"],
                vec!["cells/1:a"],
                vec!["cells/1:b"],
            ]
        );
    }

    /// Runs `windowed` over `n` items whose op answers its index doubled, `each` stopping at
    /// `stop_at`; returns the outcomes in the order `each` got them, and how many ops started.
    fn run(n: usize, stop_at: Option<usize>) -> (Vec<(usize, usize)>, usize) {
        let (seen, started) = (RefCell::new(Vec::new()), RefCell::new(0));
        futures::executor::block_on(windowed(
            0..n,
            |i| {
                *started.borrow_mut() += 1;
                async move { i * 2 }
            },
            |i, out| {
                seen.borrow_mut().push((i, out));
                if Some(i) == stop_at {
                    Flow::Stop
                } else {
                    Flow::Go
                }
            },
        ));
        (seen.into_inner(), started.into_inner())
    }

    #[test]
    fn every_item_is_run_once_and_handed_its_own_outcome_whatever_the_count() {
        for n in [0, 1, 2, 3, WINDOW, WINDOW + 1, 3 * WINDOW + 7] {
            let (mut seen, started) = run(n, None);
            seen.sort_unstable();
            let want: Vec<_> = (0..n).map(|i| (i, i * 2)).collect();
            assert_eq!((seen, started), (want, n), "{n} items");
        }
    }

    #[test]
    fn a_stop_past_the_first_window_starts_nothing_more() {
        let n = 3 * WINDOW;
        let (seen, started) = run(n, Some(WINDOW + 10));
        assert!(started < n, "{started} of {n} started after a stop");
        assert_eq!(
            seen.len(),
            started,
            "every started op's outcome is handed over"
        );
    }
}
