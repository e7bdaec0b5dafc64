//! The commit: two-phase commit of one transaction's buffered writes, read top-down in
//! [`commit`]. Failure handling follows docs/design.md invariants 1-4, 7 and 9.
//!
//! The steps, in order, each a function of its own:
//! 1. `checks`: the snapshot is not older than GC's safe point, every table and family written
//!    is transactional and not being migrated, which writes leave an observer notification
//!    (`notify`), and which tables lock rows.
//! 2. `prewrite`: every lock, the primary first, a window at a time (`batches`); a write's
//!    notification rides in its lock's checkAndMutate, so a commit never lacks one. A failed
//!    prewrite rolls back the locks it placed.
//! 3. The commit timestamp, fetched only once every lock is in place (invariant 9).
//! 4. `commit_point`: the primary's commit, the one write that decides the transaction.
//! 5. `secondaries`: the other locks' commits, in the background unless asked to wait.
//!
//! What the steps send is built by `mutation` (one lock's mutation, through the pure steps of
//! `actions`) from the buffered writes that `packed` holds; `lock_guess` (beside the table cache that
//! keeps it) picks which prewrite variant to try first.

mod batches;
mod checks;
mod commit_point;
mod mutation;
mod notify;
mod packed;
mod prewrite;
mod secondaries;

use std::collections::BTreeSet;
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use tracing::Instrument;

use crate::error::{Error, Result};
use crate::hbase::Delete;
use crate::key::CellKey;
use crate::metrics;
use crate::txn::options::Seam;
use crate::txn::session::Session;
use crate::txn::spans::in_span;
use crate::txn::stats::Stats;
use crate::txn::timestamps;
use crate::txn::timestamps::Stamped;

pub(crate) use mutation::{LockTemplate, Mutation, Write};
pub(crate) use packed::{WriteBuffer, Written};

use packed::CommitCells;

use batches::CommitBatch;
use checks::CommitChecks;
use prewrite::Locked;
use secondaries::Secondaries;

/// A commit that went through.
pub(crate) struct Committed {
    pub commit_ts: u64,
    /// Whether the primary's extra delete landed with the commit point.
    pub extra_applied: bool,
}

/// Commits `writes`, buffered by the transaction at `start_ts`, whose primary is `primary`:
/// the checks, the prewrites (each write's notification in its lock's request), the commit
/// timestamp, the commit point, the secondaries. `weak`: the cells given a notification without an observed
/// write; `extra`: a delete in the primary's row that lands with the commit point (observers
/// clear their notifications so).
///
/// Not an `async fn`: its arguments would sit in its future beside the body's copies of them,
/// and a commit's future is copied whole as each layer around it starts.
#[allow(clippy::manual_async_fn)]
pub(crate) fn commit<'s>(
    session: &'s Session,
    start_ts: u64,
    primary: CellKey,
    writes: WriteBuffer,
    weak: &'s BTreeSet<CellKey>,
    extra: Option<Delete>,
) -> impl Future<Output = Result<Committed>> + Send + 's {
    async move {
        let cells = writes.into_commit_order(&primary);
        // One reading of the clock judges the cached safe point and tables, and starts the
        // commit's timing.
        let started = Instant::now();
        let checks = checks::check(session.ctx(), start_ts, &cells, weak, started).await?;
        let committer = Committer::new(session, start_ts, primary, cells, checks, extra, started);
        let locked = committer.prewrite().await?;
        let stamped = committer.commit_ts(&locked).await?;
        let committed = committer.commit_point(stamped).await?;
        committer.secondaries(committed.commit_ts).await?;
        Ok(committed)
    }
}

struct Committer<'s> {
    /// The transaction's: its round trips count there.
    session: &'s Session,
    start_ts: u64,
    /// Shared, not copied: the prewrites and the background secondary commits read them.
    muts: Arc<CommitBatch>,
    /// A delete in the primary's row that lands with the commit point.
    primary_extra: Option<Delete>,
    /// When the commit started: its checks of the tables were judged by this reading of the
    /// clock, and its duration is measured from it.
    started: Instant,
}

impl<'s> Committer<'s> {
    /// `cells` in commit order: the first is the primary, `primary` (its key, which the
    /// caller holds already: each lock names it), as `checks` found its tables.
    fn new(
        session: &'s Session,
        start_ts: u64,
        primary: CellKey,
        cells: CommitCells,
        checks: CommitChecks,
        primary_extra: Option<Delete>,
        started: Instant,
    ) -> Committer<'s> {
        let ctx = session.ctx();
        let CommitChecks { notify, row_tables } = checks;
        let opts = ctx.opts();
        let template = LockTemplate {
            primary,
            primary_row: row_tables.iter().any(|t| t == cells.table(0)),
            owner: ctx.liveness().owner().to_string(),
            wall_ms: ctx.now_ms(),
            ttl_ms: opts.lock_ttl.as_millis() as u64,
            short_value_limit: opts.short_value_limit,
        };
        let muts = Arc::new(CommitBatch::new(
            template, start_ts, cells, notify, row_tables,
        ));
        Committer {
            session,
            start_ts,
            muts,
            primary_extra,
            started,
        }
    }

    /// Invariant 9: commit_ts is fetched only now, after every lock is in place. A client
    /// that dies before it, or a fetch that fails, leaves the locks rolled back.
    async fn commit_ts(&self, locked: &Locked) -> Result<Stamped> {
        let ctx = self.session.ctx();
        if ctx.opts().crashes_at(Seam::BeforePrimaryCommit) {
            return Err(self.crashed(Seam::BeforePrimaryCommit));
        }
        match timestamps::timestamp_asked_at(ctx, locked.at).await {
            Ok(stamped) => {
                metrics::seconds(
                    metrics::key!(metrics::COMMIT_PHASE, "phase" => "commit_ts"),
                    stamped.waited,
                );
                Ok(stamped)
            }
            Err(e) => {
                // Paths off the usual commit are boxed (see `prewrite::try_prewrite`).
                Box::pin(self.roll_back_own(&locked.cells)).await;
                Err(e)
            }
        }
    }

    /// The primary's commit: once it lands, the transaction is committed.
    async fn commit_point(&self, stamped: Stamped) -> Result<Committed> {
        let ctx = self.session.ctx();
        let commit_ts = stamped.ts;
        let primary = &self.muts.primary().key;
        let extra_applied = in_span!(
            tracing::debug_span!("commit_point", commit_ts),
            commit_point::commit_primary(
                self.session,
                primary,
                self.start_ts,
                commit_ts,
                self.primary_extra.as_ref(),
            )
        )?;
        Stats::bump(&ctx.stats().committed);
        let done = Instant::now();
        metrics::seconds(
            metrics::key!(metrics::COMMIT_PHASE, "phase" => "commit_point"),
            done - stamped.came,
        );
        metrics::seconds(metrics::key!(metrics::COMMIT), done - self.started);
        if ctx.opts().crashes_at(Seam::AfterPrimaryCommit) {
            return Err(self.crashed(Seam::AfterPrimaryCommit));
        }
        Ok(Committed {
            commit_ts,
            extra_applied,
        })
    }

    /// The secondaries of a commit of two locks or more, in the background unless the options
    /// ask to wait for them (then a client that dies between them fails the commit).
    async fn secondaries(&self, commit_ts: u64) -> Result<()> {
        if self.muts.len() < 2 {
            return Ok(());
        }
        let ctx = self.session.ctx();
        let secondaries = Secondaries {
            session: Session::new(Arc::clone(ctx)),
            muts: Arc::clone(&self.muts),
            commit_ts,
        };
        // In the background it outlives the commit's span, still as its child.
        let span = tracing::debug_span!("secondaries", cells = secondaries.muts.len() - 1);
        if ctx.opts().sync_secondaries {
            if !Box::pin(secondaries.commit().instrument(span)).await {
                return Err(self.crashed(Seam::BetweenSecondaryCommits));
            }
        } else if !ctx.is_dead() {
            ctx.background().spawn(
                async move {
                    secondaries.commit().await;
                }
                .instrument(span),
            );
        }
        Ok(())
    }

    fn crashed(&self, seam: Seam) -> Error {
        tracing::info!(
            start_ts = self.start_ts,
            seam = seam.name(),
            "client dies at an injected crash"
        );
        self.session.ctx().die();
        crate::error::client_crashed(self.start_ts, seam.name())
    }
}

/// Logs a failed request of a step whose failure is harmless (left for lazy resolution).
fn log_failure(m: &Mutation, outcome: Result<bool>, what: &'static str) {
    if let Err(e) = outcome {
        let key = &m.key;
        tracing::debug!(%key, error = %e, "{what} failed; left for lazy resolution");
    }
}
