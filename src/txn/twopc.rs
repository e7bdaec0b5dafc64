//! Two-phase commit: parallel prewrite of every cell, the commit point on the primary, then
//! the secondaries in the background (tracked). Failure handling follows DESIGN.md 1-4, 7, 9.

use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::txn::actions::{self, after_failed_prewrite, PrewriteNext, TxnStatus};
use crate::txn::codec::{encode_lock, Lock, MutationKind};
use crate::txn::key::CellKey;
use crate::txn::options::Seam;
use crate::txn::session::{PrimaryGuard, Session, Stats};

/// One buffered write, ready to prewrite.
pub(crate) struct Mutation {
    pub key: CellKey,
    pub lock: Lock,
    pub bytes: Vec<u8>,
    pub value: Option<Vec<u8>>,
}

/// How a prewrite of one cell ended.
enum Prewritten {
    Locked,
    Failed(Error),
    /// The client died at a seam right after this cell was locked.
    Crashed(Seam),
}

impl Session {
    /// Commits `writes` (the first is the primary). Returns commit_ts.
    pub fn commit(&self, start_ts: u64, writes: Vec<(CellKey, Option<Vec<u8>>)>) -> Result<u64> {
        let inner = &self.inner;
        for table in writes.iter().map(|(k, _)| &k.table) {
            inner.check_table(table)?;
        }
        // Shared, not copied: the prewrite jobs and the secondary commits read the same values.
        let muts: Vec<Arc<Mutation>> = self.build_mutations(start_ts, writes);
        let primary = muts[0].key.clone();

        let results = {
            let session = self.clone();
            inner
                .executor
                .map(muts.clone(), move |m| session.prewrite_cell(&m))
        };
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

        // Invariant 9: commit_ts is fetched only now, after every lock is in place.
        let commit_ts = match inner.timestamp() {
            Ok(t) => t,
            Err(e) => {
                self.roll_back_own(&locked);
                return Err(e);
            }
        };
        if inner.crash_at(Seam::BeforePrimaryCommit) {
            return Err(self.crashed(start_ts, Seam::BeforePrimaryCommit));
        }
        self.commit_primary(&primary, start_ts, commit_ts)?;
        Stats::bump(&inner.stats.committed);
        if inner.crash_at(Seam::AfterPrimaryCommit) {
            return Err(self.crashed(start_ts, Seam::AfterPrimaryCommit));
        }
        if self.commit_secondaries(muts.into_iter().skip(1).collect(), commit_ts) {
            return Err(self.crashed(start_ts, Seam::BetweenSecondaryCommits));
        }
        Ok(commit_ts)
    }

    fn build_mutations(
        &self,
        start_ts: u64,
        writes: Vec<(CellKey, Option<Vec<u8>>)>,
    ) -> Vec<Arc<Mutation>> {
        let opts = &self.inner.opts;
        let primary = writes[0].0.clone();
        let wall_ms = self.inner.now_ms();
        writes
            .into_iter()
            .map(|(key, value)| {
                let lock = Lock {
                    start_ts,
                    kind: if value.is_some() {
                        MutationKind::Put
                    } else {
                        MutationKind::Delete
                    },
                    primary: primary.clone(),
                    owner: self.inner.liveness.owner().to_string(),
                    wall_ms,
                    ttl_ms: opts.lock_ttl.as_millis() as u64,
                    short_value: value
                        .as_ref()
                        .filter(|v| v.len() <= opts.short_value_limit)
                        .cloned(),
                };
                let bytes = encode_lock(&lock);
                Arc::new(Mutation {
                    key,
                    lock,
                    bytes,
                    value,
                })
            })
            .collect()
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

    /// One cell's prewrite: the CAS, and on failure one read of the lock cell to learn why
    /// (DESIGN.md invariant 2). A lost reply is settled by that same read (invariant 7).
    fn prewrite_cell(&self, m: &Mutation) -> Prewritten {
        let is_primary = m.key == m.lock.primary;
        match self.try_prewrite(m) {
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

    fn try_prewrite(&self, m: &Mutation) -> Result<()> {
        let schema = &self.inner.opts.schema;
        let mut absent = false;
        let started = Instant::now();
        let mut waits = 0;
        for _ in 0..16 {
            let cam = actions::prewrite(
                schema,
                &m.key,
                &m.lock,
                &m.bytes,
                m.value.as_deref(),
                absent,
            );
            match self.cas(&m.key.table, &cam) {
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
    fn guard_primary(&self, m: &Mutation) {
        let guard = PrimaryGuard {
            key: m.key.clone(),
            lock: m.lock.clone(),
            bytes: m.bytes.clone(),
            live: true,
        };
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
        let jobs: Vec<(Arc<Mutation>, Vec<u8>)> = locked
            .iter()
            .map(|m| {
                let bytes = match (&primary_bytes, m.key == m.lock.primary) {
                    (Some(b), true) => b.clone(),
                    _ => m.bytes.clone(),
                };
                (Arc::clone(m), bytes)
            })
            .collect();
        let session = self.clone();
        self.inner.executor.map(jobs, move |(m, bytes)| {
            let cam = actions::rollback(&session.inner.opts.schema, &m.key, &m.lock, &bytes);
            if let Err(e) = session.cas(&m.key.table, &cam) {
                // Left for lazy cleanup by whoever meets the lock.
                tracing::debug!(key = %m.key, error = %e, "rollback of own lock failed");
            }
        });
    }

    /// Stops heartbeats of the primary and returns its lock's bytes as stored now.
    fn take_primary(&self, start_ts: u64) -> Option<Vec<u8>> {
        let guard = self.inner.primaries.lock().remove(&start_ts)?;
        let mut g = guard.lock();
        g.live = false;
        Some(g.bytes.clone())
    }

    /// The commit point (DESIGN.md invariant 3), with a lost reply settled by re-reading the
    /// primary (invariant 7).
    fn commit_primary(&self, primary: &CellKey, start_ts: u64, commit_ts: u64) -> Result<()> {
        let guard = self.inner.primaries.lock().get(&start_ts).cloned();
        let Some(guard) = guard else {
            return Err(Error::RolledBack {
                start_ts,
                table: primary.table.clone(),
                row: primary.row.clone(),
            });
        };
        // Build the CAS under the guard, send it outside: the keeper must not stall on this
        // mutex (it also refreshes the liveness row) while the commit point is in flight.
        let cam = {
            let mut g = guard.lock();
            g.live = false;
            actions::commit(
                &self.inner.opts.schema,
                primary,
                &g.lock,
                &g.bytes,
                commit_ts,
            )
        };
        let outcome = self.cas(&primary.table, &cam);
        self.inner.primaries.lock().remove(&start_ts);
        match outcome {
            Ok(true) => Ok(()),
            Ok(false) | Err(Error::OutcomeUnknown { .. }) => {
                self.settle_primary(primary, start_ts, commit_ts)
            }
            Err(e) => Err(e),
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

    /// Commits the secondaries in parallel (in the background unless `sync_secondaries`);
    /// failures are left to lazy roll-forward by readers. Tracked by the executor, drained on
    /// shutdown. A client that dies at a seam between them (it marks itself dead) commits no
    /// more; returns true when that happened while we waited (sync mode).
    fn commit_secondaries(&self, secondaries: Vec<Arc<Mutation>>, commit_ts: u64) -> bool {
        if secondaries.is_empty() {
            return false;
        }
        let session = self.clone();
        let work = move |m: Arc<Mutation>| {
            if session.inner.is_dead() {
                return;
            }
            let cam = actions::commit(
                &session.inner.opts.schema,
                &m.key,
                &m.lock,
                &m.bytes,
                commit_ts,
            );
            if let Err(e) = session.cas(&m.key.table, &cam) {
                tracing::debug!(key = %m.key, error = %e, "secondary commit left for roll-forward");
            }
            if session.inner.crash_at(Seam::BetweenSecondaryCommits) {
                session.inner.die();
            }
        };
        if self.inner.opts.sync_secondaries {
            self.inner.executor.map(secondaries, work);
            self.inner.is_dead()
        } else {
            let work = Arc::new(work);
            for m in secondaries {
                let work = work.clone();
                self.inner.executor.spawn(move || work(m));
            }
            false
        }
    }
}
