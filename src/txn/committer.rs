//! The committer: two-phase commit of one transaction's buffered writes. Every cell is
//! prewritten, a window of them at a time (the first is the primary; see `batches`), then the
//! commit point is written (see `commit_point`), then the secondaries, in the background
//! unless asked to wait. Failure handling follows docs/design.md invariants 1-4, 7 and 9.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tracing::Instrument;

use crate::error::{Error, Result};
use crate::hbase::Delete;
use crate::key::CellKey;
use crate::metrics;
use crate::txn::actions::{self, after_failed_prewrite, PrewriteNext};
use crate::txn::batches::{windowed, CommitBatch, Flow};
use crate::txn::commit_checks::CommitChecks;
use crate::txn::commit_point;
use crate::txn::families::KnownTable;
use crate::txn::lock_guess::LockCellGuess;
use crate::txn::mutation::{LockTemplate, Mutation};
use crate::txn::options::Seam;
use crate::txn::packed::CommitCells;
use crate::txn::resolver::LockResolver;
use crate::txn::session::Session;
use crate::txn::spans::in_span;
use crate::txn::stats::Stats;
use crate::txn::CellFlags;

/// How a prewrite of one cell ended.
enum Prewritten {
    Locked,
    Failed(Error),
    /// The client died at a seam right after this cell was locked.
    Crashed(Seam),
}

/// Prewrite rounds of one cell before it gives up with `Timeout`.
const PREWRITE_ROUNDS: usize = 16;

pub(crate) struct Committer<'s> {
    /// The transaction's: its round trips count there.
    session: &'s Session,
    start_ts: u64,
    /// Shared, not copied: the prewrites and the background secondary commits read them.
    muts: Arc<CommitBatch>,
    /// A delete in the primary's row that lands with the commit point (observers clear their
    /// notifications so).
    primary_extra: Option<Delete>,
    /// When the commit started: its checks of the tables were judged by this reading of the
    /// clock, and its duration is measured from it.
    started: Instant,
}

/// A commit that went through.
pub(crate) struct Committed {
    pub commit_ts: u64,
    /// Whether the primary's extra delete landed with the commit point.
    pub extra_applied: bool,
}

impl<'s> Committer<'s> {
    /// `writes` in commit order: the first is the primary, `primary` (its key, which the
    /// caller holds already: each lock names it), as `checks` found its tables;
    /// `primary_extra`: a delete in the primary's row that lands with the commit point; `started`:
    /// when the commit started, which its duration is measured from.
    pub fn new(
        session: &'s Session,
        start_ts: u64,
        primary: CellKey,
        writes: CommitCells,
        checks: CommitChecks,
        primary_extra: Option<Delete>,
        started: Instant,
    ) -> Committer<'s> {
        let ctx = session.ctx();
        let CommitChecks { notify, row_tables } = checks;
        let opts = ctx.opts();
        let template = LockTemplate {
            primary,
            primary_row: row_tables.iter().any(|t| t == writes.table(0)),
            owner: ctx.liveness().owner().to_string(),
            wall_ms: ctx.now_ms(),
            ttl_ms: opts.lock_ttl.as_millis() as u64,
            short_value_limit: opts.short_value_limit,
        };
        let muts = Arc::new(CommitBatch::new(
            template, start_ts, writes, notify, row_tables,
        ));
        Committer {
            session,
            start_ts,
            muts,
            primary_extra,
            started,
        }
    }

    /// Commits and returns commit_ts.
    pub async fn commit(self) -> Result<Committed> {
        let ctx = self.session.ctx();
        let started = self.started;
        let span = tracing::debug_span!("prewrite", cells = self.muts.len());
        let prewritten = in_span!(span, self.prewrite_all());
        let Prewrites {
            locked,
            failure,
            crashed,
        } = prewritten;
        let prewritten = Instant::now();
        metrics::seconds(
            metrics::key!(metrics::COMMIT_PHASE, "phase" => "prewrite"),
            prewritten - started,
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
        if ctx.crash_at(Seam::BeforePrimaryCommit) {
            return Err(self.crashed(Seam::BeforePrimaryCommit));
        }
        // Invariant 9: commit_ts is fetched only now, after every lock is in place.
        let (commit_ts, stamped) = match ctx.timestamp_asked_at(prewritten).await {
            Ok(stamped) => {
                metrics::seconds(
                    metrics::key!(metrics::COMMIT_PHASE, "phase" => "commit_ts"),
                    stamped.waited,
                );
                (stamped.ts, stamped.came)
            }
            Err(e) => {
                Box::pin(self.roll_back_own(&locked)).await;
                return Err(e);
            }
        };
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
            done - stamped,
        );
        metrics::seconds(metrics::key!(metrics::COMMIT), done - started);
        if ctx.crash_at(Seam::AfterPrimaryCommit) {
            return Err(self.crashed(Seam::AfterPrimaryCommit));
        }
        let committed = Committed {
            commit_ts,
            extra_applied,
        };
        if self.muts.len() < 2 {
            return Ok(committed);
        }
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
        Ok(committed)
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
                Prewritten::Locked => {
                    out.locked[i] = true;
                    Flow::Go
                }
                Prewritten::Crashed(seam) => {
                    out.crashed.get_or_insert(seam);
                    Flow::Stop
                }
                Prewritten::Failed(e) => {
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
    async fn prewrite_cell(&self, i: usize) -> Prewritten {
        let ctx = self.session.ctx();
        let m = &self.muts.mutation(i);
        match self.try_prewrite(m).await {
            Ok(()) => {
                // Lock 0 is the primary's (`CommitBatch`): no key comparison needed to know it.
                debug_assert_eq!(i == 0, m.is_primary());
                let seam = if i == 0 {
                    ctx.primaries().register(m);
                    Seam::AfterPrimaryPrewrite
                } else {
                    Seam::AfterSecondaryPrewrite
                };
                if ctx.crash_at(seam) {
                    Prewritten::Crashed(seam)
                } else {
                    Prewritten::Locked
                }
            }
            Err(e) => Prewritten::Failed(e),
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
    async fn roll_back_own(&self, locked: &[bool]) {
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

/// How the prewrites of a commit ended.
#[derive(Default)]
struct Prewrites {
    /// Whether cell i is locked (a byte a cell: the indices of 100,000 would take eight).
    locked: CellFlags,
    failure: Option<Error>,
    /// The client died at this seam.
    crashed: Option<Seam>,
}

/// A committed transaction's secondaries, of a commit of two locks or more (docs/design.md
/// invariant 3). Their failures are harmless: a reader that meets a left-over lock rolls it
/// forward through the committed primary. The first goes in one round and the rest in the
/// next; the seam between them is where a client can die with some committed and some not.
struct Secondaries {
    session: Session,
    /// Every cell of the commit; the secondaries are those after the primary.
    muts: Arc<CommitBatch>,
    commit_ts: u64,
}

impl Secondaries {
    /// False when the client died at the seam between the rounds.
    async fn commit(&self) -> bool {
        let started = Instant::now();
        let ctx = self.session.ctx();
        self.round(1..2).await;
        if ctx.crash_at(Seam::BetweenSecondaryCommits) {
            ctx.die();
        }
        if ctx.is_dead() {
            return false;
        }
        self.round(2..self.muts.len()).await;
        metrics::seconds(
            metrics::key!(metrics::COMMIT_PHASE, "phase" => "secondaries"),
            started.elapsed(),
        );
        true
    }

    /// The cells `cells`, a window at a time; a client that dies meanwhile starts no more.
    async fn round(&self, cells: std::ops::Range<usize>) {
        let ctx = self.session.ctx();
        let commit = |i| async move {
            let m = self.muts.mutation(i);
            let cam = actions::commit(ctx.schema(), &m.key, &m.lock, &m.bytes, self.commit_ts);
            let outcome = self.session.cas(&m.key.table, &cam).await;
            log_failure(&m, outcome, "secondary commit");
        };
        let alive = cells.take_while(|_| !ctx.is_dead());
        windowed(alive, commit, |_, ()| Flow::Go).await;
    }
}

fn log_failure(m: &Mutation, outcome: Result<bool>, what: &'static str) {
    if let Err(e) = outcome {
        let key = &m.key;
        tracing::debug!(%key, error = %e, "{what} failed; left for lazy resolution");
    }
}
