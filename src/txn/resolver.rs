//! The lock resolver (docs/design.md invariant 4): a lock is rolled forward when its primary
//! committed, back when it did not and cannot any more, and waited on while its owner lives.
//! Everything it learns comes from the primary, the one cell that decides a transaction.

use std::future::Future;
use std::pin::Pin;

use tracing::Instrument;

use crate::error::{Error, Result};
use crate::format::{decode_lock_state, Lock, MutationKind};
use crate::hbase::{CheckAndMutate, Get, TimeRange};
use crate::key::CellKey;
use crate::metrics;
use crate::txn::actions::{self, corrupted, ts, TxnStatus};
use crate::txn::granularity::LockGranularity;
use crate::txn::session::Session;
use crate::txn::stats::Stats;
use crate::txn::table_checks;

/// How many times the resolver re-reads a primary whose state moved under it before it gives
/// the caller a "still locked" answer (the caller then backs off).
const MAX_ROUNDS: usize = 6;

pub(crate) struct LockResolver<'a> {
    session: &'a Session,
    /// Locks that started below this count as cleanable whatever their owner's liveness (GC
    /// below its safe point: such a transaction can no longer read or commit, docs/gc.md).
    /// Locks above it, a live transaction met on the way, are judged as usual.
    force_below: u64,
}

impl<'a> LockResolver<'a> {
    pub fn new(session: &'a Session) -> Self {
        LockResolver {
            session,
            force_below: 0,
        }
    }

    /// A resolver that decides every lock that started below `safe_point` now: rolls it
    /// forward if its primary committed, back otherwise, without waiting for a live owner.
    pub fn forcing_below(session: &'a Session, safe_point: u64) -> Self {
        LockResolver {
            session,
            force_below: safe_point,
        }
    }

    /// Resolves `lock`, found on `key` with stored bytes `lock_bytes`. True when that lock is
    /// gone (resolved here or by someone else), false when its transaction is alive and the
    /// caller should wait.
    pub async fn resolve(&self, key: &CellKey, lock: &Lock, lock_bytes: &[u8]) -> Result<bool> {
        let span = tracing::debug_span!(
            "resolve_lock",
            lock_start_ts = lock.start_ts,
            primary = %lock.primary
        );
        self.resolve_at(key, lock, lock_bytes, 0)
            .instrument(span)
            .await
    }

    /// One level of recursion at most (a primary blocked by another transaction's lock is
    /// resolved through that one's primary), so the future is boxed.
    fn resolve_at<'f>(
        &'f self,
        key: &'f CellKey,
        lock: &'f Lock,
        lock_bytes: &'f [u8],
        depth: u8,
    ) -> Pin<Box<dyn Future<Output = Result<bool>> + Send + 'f>> {
        Box::pin(async move {
            let ctx = self.session.ctx();
            let schema = ctx.schema();
            let primary = &lock.primary;
            for _ in 0..MAX_ROUNDS {
                let (primary_raw, status) = self
                    .primary_status(primary, lock.start_ts, lock.primary_row)
                    .await?;
                match status {
                    TxnStatus::Committed { commit_ts } => {
                        if !lock.is_primary_lock(key) {
                            let cam = actions::commit(schema, key, lock, lock_bytes, commit_ts);
                            if self.cas_settled(&key.table, &cam).await? {
                                Stats::bump(&ctx.stats().rolled_forward);
                                metrics::count(
                                    metrics::key!(metrics::LOCKS_RESOLVED, "outcome" => "rolled_forward"),
                                );
                            }
                        }
                        return Ok(true);
                    }
                    TxnStatus::RolledBack => {
                        if !lock.is_primary_lock(key) {
                            let cam = actions::rollback(schema, key, lock, lock_bytes);
                            if self.cas_settled(&key.table, &cam).await? {
                                Stats::bump(&ctx.stats().rolled_back);
                                metrics::count(
                                    metrics::key!(metrics::LOCKS_RESOLVED, "outcome" => "rolled_back"),
                                );
                            }
                        }
                        return Ok(true);
                    }
                    TxnStatus::Locked { lock: plock } => {
                        if !self.may_clean(&plock).await? {
                            return Ok(false);
                        }
                        let raw = primary_raw.unwrap_or_default();
                        let cam = actions::rollback(schema, primary, &plock, &raw);
                        if self.cas_settled(&primary.table, &cam).await? {
                            Stats::bump(&ctx.stats().rolled_back);
                            metrics::count(
                                metrics::key!(metrics::LOCKS_RESOLVED, "outcome" => "rolled_back"),
                            );
                        }
                    }
                    TxnStatus::PrimaryNotLocked { absent } => {
                        // Its primary prewrite may still be in flight: make it impossible
                        // before declaring the transaction rolled back.
                        if !self.may_clean(lock).await? {
                            return Ok(false);
                        }
                        let cam = actions::fence(
                            schema,
                            primary,
                            lock.start_ts,
                            absent,
                            lock.primary_row,
                        );
                        self.cas_settled(&primary.table, &cam).await?;
                    }
                    TxnStatus::BlockedBy { lock: other } => {
                        if !self.may_clean(lock).await? || depth > 0 {
                            return Ok(false);
                        }
                        let raw = primary_raw.unwrap_or_default();
                        if !self.resolve_at(primary, &other, &raw, depth + 1).await? {
                            return Ok(false);
                        }
                    }
                }
            }
            Ok(false)
        })
    }

    /// Whether the transaction `start_ts` with primary `primary` committed: `Some(commit_ts)`,
    /// or `None` when it is rolled back or its owner is alive. A primary left locked by a dead
    /// or stale owner is rolled back and one not locked yet is fenced, so `None` is final
    /// unless the owner is alive.
    pub async fn settle_transaction(
        &self,
        primary: &CellKey,
        start_ts: u64,
    ) -> Result<Option<u64>> {
        let primary_row = table_checks::lock_granularity(self.session.ctx(), &primary.table)
            .await?
            == LockGranularity::Row;
        // The transaction as its primary stands for it, owned by no one and long stale: every
        // "may it be cleaned" about it is yes, while a lock still on the primary is judged on
        // its own owner and wall time.
        let stale = Lock {
            start_ts,
            kind: MutationKind::Put,
            primary: primary.clone(),
            owner: String::new(),
            wall_ms: 0,
            ttl_ms: 0,
            short_value: None,
            row: None,
            primary_row,
        };
        for _ in 0..3 {
            match self.primary_status(primary, start_ts, primary_row).await?.1 {
                TxnStatus::Committed { commit_ts } => return Ok(Some(commit_ts)),
                TxnStatus::RolledBack => return Ok(None),
                _ => {
                    if !self.resolve(primary, &stale, &[]).await? {
                        return Ok(None);
                    }
                }
            }
        }
        Ok(None)
    }

    /// Reads the primary's lock cell (its row's when `primary_row`) and its write records at or
    /// after `start_ts` (two Gets of one row in one round trip: the lock cell carries server
    /// time, below every oracle timestamp, so one time range cannot cover both).
    pub async fn primary_status(
        &self,
        primary: &CellKey,
        start_ts: u64,
        primary_row: bool,
    ) -> Result<(Option<Vec<u8>>, TxnStatus)> {
        let schema = self.session.ctx().schema();
        let q = schema.qualifier(primary);
        let lock_q = LockGranularity::of_primary(primary_row)
            .lock_qualifier(&q)
            .to_vec();
        let gets = [
            Get::new(primary.row.clone()).column(schema.lock_family.clone(), lock_q.clone()),
            Get::new(primary.row.clone())
                .column(schema.write_family.clone(), q.clone())
                .time_range(TimeRange::new(ts(start_ts), i64::MAX))
                .max_versions(i32::MAX),
        ];
        let rows = self.session.get_many(&primary.table, &gets).await?;
        let raw = rows[0]
            .value(&schema.lock_family, &lock_q)
            .map(<[u8]>::to_vec);
        let state = decode_lock_state(raw.as_deref()).map_err(|e| corrupted("lock", primary, e))?;
        let writes: Vec<_> = rows[1]
            .versions(&schema.write_family, &q)
            .cloned()
            .collect();
        let status = actions::txn_status(start_ts, &state, &writes)
            .map_err(|e| corrupted("write record", primary, e))?;
        Ok((raw, status))
    }

    /// A lock may be cleaned when its wall time is stale or its owner's liveness row is gone,
    /// or when it belongs to an observer run (its primary is an acknowledgment) of a client
    /// whose observer workers are known dead.
    async fn may_clean(&self, lock: &Lock) -> Result<bool> {
        if lock.start_ts < self.force_below {
            return Ok(true);
        }
        let ctx = self.session.ctx();
        if lock.primary.family == ctx.schema().ack_family
            && ctx.liveness().observer_runs_abandoned(&lock.owner)
        {
            return Ok(true);
        }
        if ctx.now_ms() > lock.wall_ms.saturating_add(lock.ttl_ms) {
            return Ok(true);
        }
        let alive = ctx
            .liveness()
            .is_alive(ctx.store(), &lock.owner, || self.session.count())
            .await?;
        if alive {
            Stats::bump(&ctx.stats().lock_waits);
            metrics::count(metrics::key!(metrics::LOCK_WAITS));
        }
        Ok(!alive)
    }

    /// A resolver CAS: safe to repeat because it is conditional on exact stored bytes, so a
    /// lost reply just means "read again" and the caller's next round re-reads.
    async fn cas_settled(&self, table: &str, cam: &CheckAndMutate) -> Result<bool> {
        match self.session.cas(table, cam).await {
            Ok(applied) => Ok(applied),
            Err(Error::OutcomeUnknown { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }
}
