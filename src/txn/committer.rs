//! The committer: two-phase commit of one transaction's buffered writes. Every cell is
//! prewritten at once (the first is the primary), then the commit point is written (see
//! `commit_point`), then the secondaries, in the background unless asked to wait. Failure
//! handling follows docs/design.md invariants 1-4, 7 and 9.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use tracing::Instrument;

use crate::error::{Error, Result};
use crate::hbase::{CheckAndMutate, Delete};
use crate::key::CellKey;
use crate::metrics;
use crate::txn::actions::{self, after_failed_prewrite, PrewriteNext};
use crate::txn::commit_point;
use crate::txn::granularity::LockGranularity;
use crate::txn::mutation::{LockTemplate, Mutation, Write};
use crate::txn::options::Seam;
use crate::txn::resolver::LockResolver;
use crate::txn::session::Session;
use crate::txn::stats::Stats;

/// How a prewrite of one cell ended.
enum Prewritten {
    Locked,
    Failed(Error),
    /// The client died at a seam right after this cell was locked.
    Crashed(Seam),
}

/// Prewrite rounds of one cell before it gives up with `Timeout`.
const PREWRITE_ROUNDS: usize = 16;

pub(crate) struct Committer {
    session: Session,
    start_ts: u64,
    /// Shared, not copied: the prewrites and the background secondary commits read them.
    muts: Vec<Arc<Mutation>>,
    /// A delete in the primary's row that lands with the commit point (observers clear their
    /// notifications so).
    primary_extra: Option<Delete>,
}

/// What one prewrite locks: a cell, or every write to one row of a table that locks rows.
enum Unit {
    Cell(CellKey, Write, bool),
    Row(Vec<(CellKey, Write, bool)>),
}

/// A commit that went through.
pub(crate) struct Committed {
    pub commit_ts: u64,
    /// Whether the primary's extra delete landed with the commit point.
    pub extra_applied: bool,
}

impl Committer {
    /// `writes` in commit order: the first is the primary; `notify[i]` says whether write i
    /// leaves an observer notification. Checks every table and family written, and learns
    /// each table's lock granularity: in a table that locks rows, a row's writes become one
    /// mutation (docs/design.md invariant 14).
    pub async fn new(
        session: Session,
        start_ts: u64,
        writes: Vec<(CellKey, Write)>,
        notify: Vec<bool>,
    ) -> Result<Committer> {
        let ctx = session.ctx();
        let keys: Vec<&CellKey> = writes.iter().map(|(k, _)| k).collect();
        let granularities = ctx.check_families(keys).await?;
        // Whether each write's table locks rows.
        let row_locked: Vec<bool> = writes
            .iter()
            .map(|(k, _)| granularities.of(&k.table) == LockGranularity::Row)
            .collect();
        let opts = ctx.opts();
        let primary = writes[0].0.clone();
        let template = LockTemplate {
            primary_row: row_locked[0],
            primary,
            owner: ctx.liveness().owner().to_string(),
            wall_ms: ctx.now_ms(),
            ttl_ms: opts.lock_ttl.as_millis() as u64,
            short_value_limit: opts.short_value_limit,
        };
        let mut units: Vec<Unit> = Vec::new();
        let mut rows: HashMap<(String, Vec<u8>), usize> = HashMap::new();
        for (((key, write), notify), row_locked) in writes.into_iter().zip(notify).zip(row_locked) {
            if !row_locked {
                units.push(Unit::Cell(key, write, notify));
                continue;
            }
            let at = *rows
                .entry((key.table.clone(), key.row.clone()))
                .or_insert_with(|| {
                    units.push(Unit::Row(Vec::new()));
                    units.len() - 1
                });
            if let Unit::Row(members) = &mut units[at] {
                members.push((key, write, notify));
            }
        }
        let muts = units
            .into_iter()
            .map(|unit| {
                Arc::new(match unit {
                    Unit::Cell(key, write, notify) => {
                        template.mutation(start_ts, key, write, notify)
                    }
                    Unit::Row(members) => template.row_mutation(start_ts, members),
                })
            })
            .collect();
        Ok(Committer {
            session,
            start_ts,
            muts,
            primary_extra: None,
        })
    }

    /// Makes `delete` (in the primary's row) land with the commit point.
    pub fn with_primary_extra(mut self, delete: Option<Delete>) -> Committer {
        self.primary_extra = delete;
        self
    }

    /// Commits and returns commit_ts.
    pub async fn commit(self) -> Result<Committed> {
        let ctx = Arc::clone(self.session.ctx());
        let started = Instant::now();
        let results = self
            .prewrite_all()
            .instrument(tracing::debug_span!("prewrite", cells = self.muts.len()))
            .await;
        let prewritten = Instant::now();
        metrics::seconds_as(
            metrics::COMMIT_PHASE,
            "phase",
            "prewrite",
            prewritten - started,
        );
        let mut locked = Vec::new();
        let mut failure = None;
        for (m, r) in self.muts.iter().zip(results) {
            match r {
                Prewritten::Locked => locked.push(m),
                Prewritten::Crashed(seam) => return Err(self.crashed(seam)),
                Prewritten::Failed(e) => failure = failure.or(Some(e)),
            }
        }
        if let Some(e) = failure {
            self.roll_back_own(&locked).await;
            Stats::bump(&ctx.stats().aborted);
            return Err(e);
        }
        if ctx.crash_at(Seam::BeforePrimaryCommit) {
            return Err(self.crashed(Seam::BeforePrimaryCommit));
        }
        // Invariant 9: commit_ts is fetched only now, after every lock is in place.
        let commit_ts = match ctx.timestamp().await {
            Ok(ts) => ts,
            Err(e) => {
                self.roll_back_own(&locked).await;
                return Err(e);
            }
        };
        let stamped = Instant::now();
        metrics::seconds_as(
            metrics::COMMIT_PHASE,
            "phase",
            "commit_ts",
            stamped - prewritten,
        );
        let primary = &self.muts[0].key;
        let extra_applied = commit_point::commit_primary(
            &self.session,
            primary,
            self.start_ts,
            commit_ts,
            self.primary_extra.as_ref(),
        )
        .instrument(tracing::debug_span!("commit_point", commit_ts))
        .await?;
        Stats::bump(&ctx.stats().committed);
        metrics::seconds_as(
            metrics::COMMIT_PHASE,
            "phase",
            "commit_point",
            stamped.elapsed(),
        );
        metrics::seconds(metrics::COMMIT, started.elapsed());
        if ctx.crash_at(Seam::AfterPrimaryCommit) {
            return Err(self.crashed(Seam::AfterPrimaryCommit));
        }
        let secondaries = Secondaries {
            session: self.session.clone(),
            muts: self.muts[1..].to_vec(),
            commit_ts,
        };
        // In the background it outlives the commit's span, still as its child.
        let span = tracing::debug_span!("secondaries", cells = secondaries.muts.len());
        if ctx.opts().sync_secondaries {
            if !secondaries.commit().instrument(span).await {
                return Err(self.crashed(Seam::BetweenSecondaryCommits));
            }
        } else if !secondaries.muts.is_empty() && !ctx.is_dead() {
            ctx.background().spawn(
                async move {
                    secondaries.commit().await;
                }
                .instrument(span),
            );
        }
        Ok(Committed {
            commit_ts,
            extra_applied,
        })
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

    /// Prewrites every cell at once. Each cell goes on by itself once its first CAS returns,
    /// so the primary is under heartbeat as soon as it is locked, however long the others
    /// take.
    async fn prewrite_all(&self) -> Vec<Prewritten> {
        futures::future::join_all(self.muts.iter().map(|m| self.prewrite_cell(m))).await
    }

    /// One cell's prewrite: on a failed CAS, one read of the lock cell tells why
    /// (invariant 2); a lost reply is settled by that same read (invariant 7).
    async fn prewrite_cell(&self, m: &Arc<Mutation>) -> Prewritten {
        let ctx = self.session.ctx();
        match self.try_prewrite(m).await {
            Ok(()) => {
                let seam = if m.is_primary() {
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
        let mut absent = ctx.lock_guess().absent_first(table);
        let mut guessed = true;
        let started = Instant::now();
        let mut waits = 0;
        for _ in 0..PREWRITE_ROUNDS {
            let cam = m.prewrite_cas(schema, absent);
            match self.session.cas(table, &cam).await {
                Ok(true) => {
                    ctx.lock_guess().learn(table, absent);
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
            let raw = self
                .session
                .lock_cell(&m.key, m.lock.qualifier(&m.key))
                .await?;
            match after_failed_prewrite(&m.key, m.lock.start_ts, &m.bytes, raw.as_deref())? {
                PrewriteNext::AlreadyLocked => return Ok(()),
                PrewriteNext::RetryAbsent => absent = true,
                PrewriteNext::Retry => absent = false,
                PrewriteNext::Conflict { max_ts } => {
                    return Err(Error::WriteConflict {
                        table: m.key.table.clone(),
                        row: m.key.row.clone(),
                        column: m.key.column(),
                        start_ts: m.lock.start_ts,
                        conflict_ts: max_ts,
                    })
                }
                PrewriteNext::LockedBy(other) => {
                    // Percolator aborts on a live lock (waiting could deadlock two writers);
                    // an abandoned one is cleaned first.
                    let raw = raw.unwrap_or_default();
                    let resolver = LockResolver::new(&self.session);
                    if !resolver.resolve(&m.key, &other, &raw).await? {
                        return Err(Error::KeyLocked {
                            table: m.key.table.clone(),
                            row: m.key.row.clone(),
                            column: m.key.column(),
                            lock_ts: other.start_ts,
                            primary: Some(Box::new(other.primary.clone())),
                        });
                    }
                    absent = false;
                }
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
            after: started.elapsed(),
        })
    }

    /// Rolls back the cells this transaction locked itself (after a failed prewrite round).
    /// Failures are only logged: whoever meets such a lock later settles it.
    async fn roll_back_own(&self, locked: &[&Arc<Mutation>]) {
        if locked.is_empty() {
            return;
        }
        let ctx = self.session.ctx();
        // A heartbeat may have rewritten the primary's bytes: use what is stored.
        let stored = ctx.primaries().retire(self.start_ts);
        let cams: Vec<_> = locked
            .iter()
            .map(|m| {
                let bytes = match (&stored, m.is_primary()) {
                    (Some(s), true) => s.bytes(),
                    _ => &m.bytes,
                };
                actions::rollback(ctx.schema(), &m.key, &m.lock, bytes)
            })
            .collect();
        let outcomes = self.session.cas_all(&calls(locked, &cams)).await;
        log_failures(locked, outcomes, "rollback of own lock");
    }
}

/// A committed transaction's secondaries (docs/design.md invariant 3). Their failures are
/// harmless: a reader that meets a left-over lock rolls it forward through the committed
/// primary. The first goes in one round and the rest in the next; the seam between them is
/// where a client can die with some committed and some not.
struct Secondaries {
    session: Session,
    muts: Vec<Arc<Mutation>>,
    commit_ts: u64,
}

impl Secondaries {
    /// False when the client died at the seam between the rounds.
    async fn commit(&self) -> bool {
        let Some((first, rest)) = self.muts.split_first() else {
            return true;
        };
        let started = Instant::now();
        let ctx = self.session.ctx();
        self.round(std::slice::from_ref(first)).await;
        if ctx.crash_at(Seam::BetweenSecondaryCommits) {
            ctx.die();
        }
        if ctx.is_dead() {
            return false;
        }
        self.round(rest).await;
        metrics::seconds_as(
            metrics::COMMIT_PHASE,
            "phase",
            "secondaries",
            started.elapsed(),
        );
        true
    }

    async fn round(&self, muts: &[Arc<Mutation>]) {
        let ctx = self.session.ctx();
        if muts.is_empty() || ctx.is_dead() {
            return;
        }
        let cams: Vec<CheckAndMutate> = muts
            .iter()
            .map(|m| actions::commit(ctx.schema(), &m.key, &m.lock, &m.bytes, self.commit_ts))
            .collect();
        let outcomes = self.session.cas_all(&calls(muts, &cams)).await;
        log_failures(muts, outcomes, "secondary commit");
    }
}

fn log_failures<M: AsRef<Mutation>>(muts: &[M], outcomes: Vec<Result<bool>>, what: &'static str) {
    for (m, outcome) in muts.iter().zip(outcomes) {
        if let Err(e) = outcome {
            let key = &m.as_ref().key;
            tracing::debug!(%key, error = %e, "{what} failed; left for lazy resolution");
        }
    }
}

/// Pairs each mutation's table with its CAS, for `Session::cas_all`.
fn calls<'a, M: AsRef<Mutation>>(
    muts: &'a [M],
    cams: &'a [CheckAndMutate],
) -> Vec<(&'a str, &'a CheckAndMutate)> {
    muts.iter()
        .map(|m| m.as_ref().key.table.as_str())
        .zip(cams)
        .collect()
}
