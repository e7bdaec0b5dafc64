//! The first phase: every lock of a commit placed, the primary first, a window at a time. On
//! a failed CAS one read of the lock cell tells why (invariant 2), and settles a lost reply
//! (invariant 7); a commit that cannot place every lock rolls back the ones it placed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::metrics;
use crate::txn::actions::{self, after_failed_prewrite, PrewriteNext};
use crate::txn::families::KnownTable;
use crate::txn::lock_guess::LockCellGuess;
use crate::txn::options::Seam;
use crate::txn::resolver::LockResolver;
use crate::txn::spans::in_span;
use crate::txn::stats::Stats;
use crate::txn::CellFlags;

use super::batches::{windowed, Flow};
use super::commit_point;
use super::mutation::Mutation;
use super::{log_failure, Committer};

/// Prewrite rounds of one cell before it gives up with `Timeout`.
const PREWRITE_ROUNDS: usize = 16;

/// Every lock of a commit in place.
pub(super) struct Locked {
    /// Whether cell i is locked (all of them, unless the commit is rolled back).
    pub cells: CellFlags,
    /// When the last one was: the commit timestamp's wait is timed from it.
    pub at: Instant,
}

/// How a prewrite of one cell ended.
enum CellPrewrite {
    Locked,
    Failed(Error),
    /// The client died at a seam right after this cell was locked.
    Crashed(Seam),
}

/// How the prewrites of a commit ended.
#[derive(Default)]
struct Prewrites {
    /// Whether cell i is locked (a byte a cell: the indices of 100,000 would take eight).
    locked: CellFlags,
    failure: Option<Error>,
    /// The client died at this seam.
    crashed: Option<Seam>,
}

impl Committer<'_> {
    /// Locks every cell; on a failure, rolls back the locks placed and returns the failure.
    pub(super) async fn prewrite(&self) -> Result<Locked> {
        let ctx = self.session.ctx();
        let span = tracing::debug_span!("prewrite", cells = self.muts.len());
        let Prewrites {
            locked,
            failure,
            crashed,
        } = in_span!(span, self.prewrite_all());
        let at = Instant::now();
        metrics::seconds(
            metrics::key!(metrics::COMMIT_PHASE, "phase" => "prewrite"),
            at - self.started,
        );
        if let Some(seam) = crashed {
            return Err(self.crashed(seam));
        }
        if let Some(e) = failure {
            // Paths off the usual commit are boxed (see `try_prewrite`).
            Box::pin(self.roll_back_own(&locked)).await;
            Stats::bump(&ctx.stats().aborted);
            return Err(e);
        }
        Ok(Locked { cells: locked, at })
    }

    /// Prewrites every cell, a window at a time, the primary first. Each cell goes on by
    /// itself once its first CAS returns, so the primary is under heartbeat as soon as it is
    /// locked, however long the others take. After a failure or a crash no more cells are
    /// started: the ones locked already are what a rollback has to undo.
    async fn prewrite_all(&self) -> Prewrites {
        let mut out = Prewrites {
            locked: CellFlags::from_elem(false, self.muts.len()),
            ..Prewrites::default()
        };
        let cells = 0..self.muts.len();
        windowed(
            cells,
            |i| self.prewrite_cell(i),
            |i, prewritten| match prewritten {
                CellPrewrite::Locked => {
                    out.locked[i] = true;
                    Flow::Go
                }
                CellPrewrite::Crashed(seam) => {
                    out.crashed.get_or_insert(seam);
                    Flow::Stop
                }
                CellPrewrite::Failed(e) => {
                    out.failure.get_or_insert(e);
                    Flow::Stop
                }
            },
        )
        .await;
        out
    }

    /// One cell's prewrite: on a failed CAS, one read of the lock cell tells why
    /// (invariant 2); a lost reply is settled by that same read (invariant 7).
    async fn prewrite_cell(&self, i: usize) -> CellPrewrite {
        let ctx = self.session.ctx();
        let m = &self.muts.mutation(i);
        match self.try_prewrite(m).await {
            Ok(()) => {
                // Lock 0 is the primary's (`CommitBatch`): no key comparison needed to know it.
                debug_assert_eq!(i == 0, m.is_primary());
                let seam = if i == 0 {
                    ctx.primaries().register(Arc::clone(m) as _);
                    Seam::AfterPrimaryPrewrite
                } else {
                    Seam::AfterSecondaryPrewrite
                };
                if ctx.opts().crashes_at(seam) {
                    CellPrewrite::Crashed(seam)
                } else {
                    CellPrewrite::Locked
                }
            }
            Err(e) => CellPrewrite::Failed(e),
        }
    }

    async fn try_prewrite(&self, m: &Mutation) -> Result<()> {
        let ctx = self.session.ctx();
        let schema = ctx.schema();
        let table = m.key.table.as_str();
        // The commit checked its tables first, so the table is known; were it not, it starts
        // on "released" as a table found afresh does.
        let known = ctx.known_table(table);
        let fresh = LockCellGuess::default();
        let guess = known.as_deref().map_or(&fresh, KnownTable::lock_guess);
        let mut absent = guess.absent_first();
        let mut guessed = true;
        // Read at the first failure, not before: nearly every prewrite goes through at once,
        // and then needs no clock.
        let mut started: Option<Instant> = None;
        let mut waits = 0;
        for _ in 0..PREWRITE_ROUNDS {
            let cam = m.prewrite_cas(schema, absent);
            match self.session.cas(table, &cam).await {
                Ok(true) => {
                    guess.learn(absent);
                    return Ok(());
                }
                // A wrong guess of the variant costs one more CAS, not a read and a CAS; a
                // failure of both is read and classified below.
                Ok(false) if guessed => {
                    guessed = false;
                    absent = !absent;
                    continue;
                }
                Ok(false) | Err(Error::OutcomeUnknown { .. }) => guessed = false,
                Err(e) => return Err(e),
            }
            // Boxed, as every path off a commit's usual one: a future holds room for its
            // largest await, and the commit's layers copy each other whole as they start.
            let started = *started.get_or_insert_with(Instant::now);
            match Box::pin(self.after_failed_cas(m)).await? {
                None => return Ok(()),
                Some(next) => absent = next,
            }
            if started.elapsed() > ctx.opts().max_lock_wait {
                break;
            }
            waits += 1;
            if waits > 3 {
                tokio::time::sleep(ctx.opts().retry.backoff(waits)).await;
            }
        }
        Err(Error::Timeout {
            what: format!("prewrite of {} at {}", m.key, m.lock.start_ts),
            after: started.map_or(Duration::ZERO, |s| s.elapsed()),
        })
    }

    /// After a prewrite CAS that a wrong guess of its variant does not explain (both variants
    /// failed, or no reply came): one read of the lock cell tells why (invariant 2). `None`
    /// when the lock is ours already (a lost reply, invariant 7), else the variant to try next
    /// (`true` for an absent lock cell); a conflict, or a live lock of another transaction,
    /// ends the prewrite.
    async fn after_failed_cas(&self, m: &Mutation) -> Result<Option<bool>> {
        let raw = self
            .session
            .lock_cell(&m.key, m.lock.qualifier(&m.key))
            .await?;
        match after_failed_prewrite(&m.key, m.lock.start_ts, &m.bytes, raw.as_deref())? {
            PrewriteNext::AlreadyLocked => Ok(None),
            PrewriteNext::RetryAbsent => Ok(Some(true)),
            PrewriteNext::Retry => Ok(Some(false)),
            PrewriteNext::Conflict { max_ts } => Err(Error::WriteConflict {
                table: m.key.table.clone(),
                row: m.key.row.clone(),
                column: m.key.column(),
                start_ts: m.lock.start_ts,
                conflict_ts: max_ts,
            }),
            PrewriteNext::LockedBy(other) => {
                // Percolator aborts on a live lock (waiting could deadlock two writers); an
                // abandoned one is cleaned first.
                let raw = raw.unwrap_or_default();
                let resolver = LockResolver::new(self.session);
                if !resolver.resolve(&m.key, &other, &raw).await? {
                    return Err(Error::KeyLocked {
                        table: m.key.table.clone(),
                        row: m.key.row.clone(),
                        column: m.key.column(),
                        lock_ts: other.start_ts,
                        primary: Some(Box::new(other.primary.clone())),
                    });
                }
                Ok(Some(false))
            }
        }
    }

    /// Rolls back the cells this transaction locked itself (after a failed prewrite round).
    /// Failures are only logged: whoever meets such a lock later settles it.
    pub(super) async fn roll_back_own(&self, locked: &[bool]) {
        if !locked.contains(&true) {
            return;
        }
        let ctx = self.session.ctx();
        // A heartbeat may have rewritten the primary's bytes: use what is stored.
        let stored = ctx.primaries().retire(self.start_ts);
        let stored = &stored;
        let roll_back = |i| async move {
            let m = self.muts.mutation(i);
            let bytes = match (stored, m.is_primary()) {
                (Some(s), true) => s.bytes(),
                _ => &m.bytes,
            };
            let cam = actions::rollback(ctx.schema(), &m.key, &m.lock, bytes);
            let outcome = match self.session.cas(&m.key.table, &cam).await {
                Ok(false) | Err(Error::OutcomeUnknown { .. }) if m.is_primary() => {
                    let (session, primary_row) = (self.session, m.lock.primary_row);
                    let settle = commit_point::roll_back_primary(
                        session,
                        &m.key,
                        self.start_ts,
                        primary_row,
                    );
                    Box::pin(settle).await
                }
                outcome => outcome,
            };
            log_failure(&m, outcome, "rollback of own lock");
        };
        let own = (0..locked.len()).filter(|&i| locked[i]);
        windowed(own, roll_back, |_, ()| Flow::Go).await;
    }
}
