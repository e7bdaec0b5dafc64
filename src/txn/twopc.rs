//! Two-phase commit: parallel prewrite of every cell, the commit point on the primary, then
//! the secondaries in the background (tracked). Failure handling follows docs/design.md 1-4, 7, 9.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::hbase::CheckAndMutate;
use crate::txn::actions::{self, after_failed_prewrite, PrewriteNext, TxnStatus};
use crate::txn::codec::{encode_lock, Lock, MutationKind};
use crate::txn::key::CellKey;
use crate::txn::options::Seam;
use crate::txn::schema::Schema;
use crate::txn::session::{PrimaryGuard, Session, Stats};

/// One buffered write, ready to prewrite.
pub(crate) struct Mutation {
    pub key: CellKey,
    pub lock: Lock,
    pub bytes: Vec<u8>,
    pub value: Option<Vec<u8>>,
}

impl Mutation {
    /// This cell's prewrite CAS (`absent`: the variant for a never-written cell).
    fn prewrite_cas(&self, schema: &Schema, absent: bool) -> CheckAndMutate {
        actions::prewrite(
            schema,
            &self.key,
            &self.lock,
            &self.bytes,
            self.value.as_deref(),
            absent,
        )
    }
}

/// Why the commit point was not reached.
enum Uncommitted {
    /// No commit timestamp: nothing was sent, our locks can be rolled back.
    NoTimestamp(Error),
    Failed(Error),
}

/// How a prewrite of one cell ended.
enum Prewritten {
    Locked,
    Failed(Error),
    /// The client died at a seam right after this cell was locked.
    Crashed(Seam),
}

/// Above this, a blind write's primary prewrite does not carry its start timestamp.
const FUSED_VALUE_LIMIT: usize = 16 * 1024;

/// What every lock of one commit shares, fixed before the start timestamp may be known.
struct LockTemplate {
    primary: CellKey,
    owner: String,
    wall_ms: u64,
    ttl_ms: u64,
    short_value_limit: usize,
}

impl LockTemplate {
    fn mutation(&self, start_ts: u64, key: CellKey, value: Option<Vec<u8>>) -> Mutation {
        let lock = Lock {
            start_ts,
            kind: MutationKind::of(value.as_ref()),
            primary: self.primary.clone(),
            owner: self.owner.clone(),
            wall_ms: self.wall_ms,
            ttl_ms: self.ttl_ms,
            short_value: value
                .as_ref()
                .filter(|v| v.len() <= self.short_value_limit)
                .cloned(),
        };
        let bytes = encode_lock(&lock);
        Mutation {
            key,
            lock,
            bytes,
            value,
        }
    }
}

impl Session {
    /// Commits `writes` (the first is the primary) and returns commit_ts. Without a start
    /// timestamp yet (the transaction only wrote), the primary's prewrite fetches and carries it.
    pub fn commit(
        &self,
        start_ts: Option<u64>,
        writes: Vec<(CellKey, Option<Vec<u8>>)>,
    ) -> Result<u64> {
        let inner = &self.inner;
        inner.check_families(writes.iter().map(|(k, _)| k))?;
        let template = Arc::new(self.lock_template(&writes[0].0));
        let primary_len = writes[0].1.as_ref().map_or(0, Vec::len);
        let mut writes = writes.into_iter();
        let (start_ts, primary, primary_outcome) = match start_ts {
            Some(ts) => (ts, None, None),
            // A large primary value is not handed to the oracle lane: writing it could block
            // the lane (and every other transaction's timestamp) while the gateway reads it.
            None if primary_len > FUSED_VALUE_LIMIT => (inner.timestamp()?, None, None),
            None => {
                // `writes[0]` was read above: there is a first write.
                let first = writes.next().expect("a commit has at least one write");
                let (ts, m, outcome) = self.prewrite_primary_fresh(&template, first)?;
                (ts, Some(m), Some(outcome))
            }
        };
        // Shared, not copied: the prewrite jobs and the secondary commits read the same values.
        let muts: Vec<Arc<Mutation>> = primary
            .into_iter()
            .chain(writes.map(|(key, value)| Arc::new(template.mutation(start_ts, key, value))))
            .collect();

        // Every first CAS overlaps: the primary's went out with the start timestamp, or goes
        // out now with the others.
        let results = self.prewrite_all(&muts, primary_outcome);
        let mut locked = Vec::new();
        let mut failure = None;
        for (m, r) in muts.iter().zip(results) {
            match r {
                Prewritten::Locked => locked.push(m),
                Prewritten::Crashed(seam) => return Err(self.crashed(start_ts, seam)),
                Prewritten::Failed(e) => failure = failure.or(Some(e)),
            }
        }
        if let Some(e) = failure {
            self.roll_back_own(&locked);
            Stats::bump(&inner.stats.aborted);
            return Err(e);
        }

        if inner.crash_at(Seam::BeforePrimaryCommit) {
            return Err(self.crashed(start_ts, Seam::BeforePrimaryCommit));
        }
        // Invariant 9: commit_ts is fetched only now, after every lock is in place; it travels
        // with the commit point's request.
        let commit_ts = match self.commit_primary(&muts[0].key, start_ts) {
            Ok(commit_ts) => commit_ts,
            Err(Uncommitted::NoTimestamp(e)) => {
                self.roll_back_own(&locked);
                return Err(e);
            }
            Err(Uncommitted::Failed(e)) => return Err(e),
        };
        Stats::bump(&inner.stats.committed);
        if inner.crash_at(Seam::AfterPrimaryCommit) {
            return Err(self.crashed(start_ts, Seam::AfterPrimaryCommit));
        }
        if self.commit_secondaries(muts.into_iter().skip(1).collect(), commit_ts) {
            return Err(self.crashed(start_ts, Seam::BetweenSecondaryCommits));
        }
        Ok(commit_ts)
    }

    fn lock_template(&self, primary: &CellKey) -> LockTemplate {
        let opts = &self.inner.opts;
        LockTemplate {
            primary: primary.clone(),
            owner: self.inner.liveness.owner().to_string(),
            wall_ms: self.inner.now_ms(),
            ttl_ms: opts.lock_ttl.as_millis() as u64,
            short_value_limit: opts.short_value_limit,
        }
    }

    /// The first prewrite CAS of the primary, carrying a fresh start timestamp. Returns the
    /// timestamp, the primary's mutation (built once, where the timestamp arrived) and the CAS
    /// outcome, which `prewrite_cell` then takes over.
    fn prewrite_primary_fresh(
        &self,
        template: &Arc<LockTemplate>,
        (key, value): (CellKey, Option<Vec<u8>>),
    ) -> Result<(u64, Arc<Mutation>, Result<bool>)> {
        let built = Arc::new(OnceLock::new());
        let (inner, shared, slot) = (
            Arc::clone(&self.inner),
            Arc::clone(template),
            Arc::clone(&built),
        );
        // The primary's table: the key itself goes into the request.
        let (start_ts, outcome) = self.cas_fresh(
            &template.primary.table,
            Box::new(move |start_ts| {
                let m = Arc::new(shared.mutation(start_ts, key, value));
                let cam = m.prewrite_cas(&inner.opts.schema, false);
                let _ = slot.set(m);
                cam
            }),
        )?;
        // A timestamp is only returned once the request was built from it.
        let m = built.get().cloned().ok_or_else(|| Error::Protocol {
            peer: crate::Peer::Oracle,
            message: format!("start timestamp {start_ts} came without the prewrite it carries"),
        })?;
        Ok((start_ts, m, outcome))
    }

    fn crashed(&self, start_ts: u64, seam: Seam) -> Error {
        tracing::info!(
            start_ts,
            seam = seam.name(),
            "client dies at an injected crash"
        );
        self.inner.die();
        Error::ClientCrashed {
            start_ts,
            seam: seam.name(),
        }
    }

    /// Prewrites `muts`, every first CAS overlapped. `primary` is the outcome of the primary's
    /// first CAS when it already went out (carrying the start timestamp); a failed primary
    /// then stops the others from being tried.
    fn prewrite_all(
        &self,
        muts: &[Arc<Mutation>],
        primary: Option<Result<bool>>,
    ) -> Vec<Prewritten> {
        let mut results = Vec::with_capacity(muts.len());
        if let Some(first) = primary {
            results.push(self.prewrite_cell(&muts[0], first));
            if !matches!(results[0], Prewritten::Locked) {
                return results;
            }
        }
        let todo = &muts[results.len()..];
        let schema = &self.inner.opts.schema;
        let cams: Vec<_> = todo.iter().map(|m| m.prewrite_cas(schema, false)).collect();
        let outcomes = self.cas_all(&calls(todo, &cams));
        results.extend(
            todo.iter()
                .zip(outcomes)
                .map(|(m, first)| self.prewrite_cell(m, first)),
        );
        results
    }

    /// One cell's prewrite: the CAS, and on failure one read of the lock cell to learn why
    /// (docs/design.md invariant 2). A lost reply is settled by that same read (invariant 7).
    /// `first` is the outcome of its first CAS, already sent.
    fn prewrite_cell(&self, m: &Arc<Mutation>, first: Result<bool>) -> Prewritten {
        let is_primary = m.key == m.lock.primary;
        match self.try_prewrite(m, first) {
            Ok(()) => {
                if is_primary {
                    self.guard_primary(m);
                }
                let seam = if is_primary {
                    Seam::AfterPrimaryPrewrite
                } else {
                    Seam::AfterSecondaryPrewrite
                };
                if self.inner.crash_at(seam) {
                    Prewritten::Crashed(seam)
                } else {
                    Prewritten::Locked
                }
            }
            Err(e) => Prewritten::Failed(e),
        }
    }

    fn try_prewrite(&self, m: &Mutation, first: Result<bool>) -> Result<()> {
        let mut first = Some(first);
        let schema = &self.inner.opts.schema;
        let mut absent = false;
        let started = Instant::now();
        let mut waits = 0;
        for _ in 0..16 {
            let outcome = first
                .take()
                .unwrap_or_else(|| self.cas(&m.key.table, &m.prewrite_cas(schema, absent)));
            match outcome {
                Ok(true) => return Ok(()),
                Ok(false) | Err(Error::OutcomeUnknown { .. }) => {}
                Err(e) => return Err(e),
            }
            let raw = self.lock_cell(&m.key)?;
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
                    if !self.resolve_lock(&m.key, &other, &raw)? {
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
            if started.elapsed() > self.inner.opts.max_lock_wait {
                break;
            }
            waits += 1;
            if waits > 3 {
                std::thread::sleep(self.inner.opts.retry.backoff(waits));
            }
        }
        Err(Error::Timeout {
            what: format!("prewrite of {} at {}", m.key, m.lock.start_ts),
            after: started.elapsed(),
        })
    }

    /// Registers the primary lock for wall-time refreshes while the commit is under way.
    fn guard_primary(&self, m: &Arc<Mutation>) {
        let guard = PrimaryGuard::new(Arc::clone(m));
        self.inner
            .primaries
            .lock()
            .insert(m.lock.start_ts, Arc::new(Mutex::new(guard)));
    }

    /// Rolls back the cells this transaction locked itself (after a failed prewrite round).
    fn roll_back_own(&self, locked: &[&Arc<Mutation>]) {
        let Some(first) = locked.first() else {
            return;
        };
        let start_ts = first.lock.start_ts;
        let primary_bytes = self.take_primary(start_ts);
        // The primary's bytes may have been refreshed by the keeper: use what is stored.
        let schema = &self.inner.opts.schema;
        let cams: Vec<_> = locked
            .iter()
            .map(|m| {
                let bytes = match (&primary_bytes, m.key == m.lock.primary) {
                    (Some(b), true) => b,
                    _ => &m.bytes,
                };
                actions::rollback(schema, &m.key, &m.lock, bytes)
            })
            .collect();
        self.cas_best_effort(locked, &cams, "rollback of own lock");
    }

    /// Stops heartbeats of the primary and returns its lock's bytes as stored now.
    fn take_primary(&self, start_ts: u64) -> Option<Vec<u8>> {
        let guard = self.inner.primaries.lock().remove(&start_ts)?;
        let mut g = guard.lock();
        g.live = false;
        Some(g.bytes().to_vec())
    }

    /// The commit point (docs/design.md invariant 3): the primary's commit CAS, carrying a fresh
    /// commit timestamp, with a lost reply settled by re-reading the primary (invariant 7).
    fn commit_primary(
        &self,
        primary: &CellKey,
        start_ts: u64,
    ) -> std::result::Result<u64, Uncommitted> {
        let guard = self.inner.primaries.lock().get(&start_ts).cloned();
        let Some(guard) = guard else {
            return Err(Uncommitted::Failed(Error::RolledBack {
                start_ts,
                table: primary.table.clone(),
                row: primary.row.clone(),
            }));
        };
        // Take what the CAS needs under the guard, send it outside: the keeper must not stall
        // on this mutex (it also refreshes the liveness row) while the commit point is in
        // flight.
        let stored = guard.lock().retire();
        let inner = Arc::clone(&self.inner);
        let sent = self.cas_fresh(
            &primary.table,
            Box::new(move |commit_ts| {
                let (key, lock, bytes) = (stored.key(), stored.lock(), stored.bytes());
                actions::commit(&inner.opts.schema, key, lock, bytes, commit_ts)
            }),
        );
        // Without a timestamp the guard stays, with the bytes stored, for the rollback.
        let (commit_ts, outcome) = sent.map_err(Uncommitted::NoTimestamp)?;
        self.inner.primaries.lock().remove(&start_ts);
        match outcome {
            Ok(true) => Ok(commit_ts),
            Ok(false) | Err(Error::OutcomeUnknown { .. }) => self
                .settle_primary(primary, start_ts, commit_ts)
                .map(|()| commit_ts)
                .map_err(Uncommitted::Failed),
            Err(e) => Err(Uncommitted::Failed(e)),
        }
    }

    /// After a failed or unanswered commit CAS: the primary tells what happened. If it still
    /// holds our lock (a lost reply, or a heartbeat whose reply was lost changed its bytes),
    /// the commit is repeated against the bytes actually stored: the lock is ours either way.
    fn settle_primary(&self, primary: &CellKey, start_ts: u64, commit_ts: u64) -> Result<()> {
        let undetermined = |reason: String| Error::CommitUndetermined {
            start_ts,
            commit_ts,
            reason,
        };
        for _ in 0..3 {
            let (raw, status) = match self.primary_status(primary, start_ts) {
                Ok(found) => found,
                Err(e) => return Err(undetermined(format!("re-reading the primary failed: {e}"))),
            };
            match status {
                TxnStatus::Committed { commit_ts: c } if c == commit_ts => return Ok(()),
                TxnStatus::Committed { commit_ts: c } => {
                    return Err(undetermined(format!("primary committed at unexpected {c}")))
                }
                TxnStatus::Locked { lock } => {
                    let raw = raw.unwrap_or_default();
                    let cam =
                        actions::commit(&self.inner.opts.schema, primary, &lock, &raw, commit_ts);
                    match self.cas(&primary.table, &cam) {
                        Ok(true) => return Ok(()),
                        Ok(false) | Err(Error::OutcomeUnknown { .. }) => continue,
                        Err(e) => return Err(undetermined(format!("retrying the commit: {e}"))),
                    }
                }
                _ => {
                    return Err(Error::RolledBack {
                        start_ts,
                        table: primary.table.clone(),
                        row: primary.row.clone(),
                    })
                }
            }
        }
        Err(undetermined("primary still locked after retries".into()))
    }

    /// Overlapped CASes whose failures are only logged: whoever meets the lock later settles
    /// it (rolls it forward or back).
    fn cas_best_effort<M: AsRef<Mutation>>(
        &self,
        muts: &[M],
        cams: &[CheckAndMutate],
        what: &'static str,
    ) {
        for (m, outcome) in muts.iter().zip(self.cas_all(&calls(muts, cams))) {
            self.settled(m.as_ref(), outcome, what);
        }
    }

    pub(crate) fn settled(&self, m: &Mutation, outcome: Result<bool>, what: &'static str) {
        if let Err(e) = outcome {
            tracing::debug!(key = %m.key, error = %e, "{what} failed; left for lazy resolution");
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
