//! Committing the secondaries once the commit point is passed (docs/design.md invariant 3).
//!
//! Their failures are harmless (a reader that meets a left-over lock rolls it forward through
//! the committed primary), so the committing call does not wait for them. In the background
//! they are queued on the client, and the executor's collector sends everything queued during
//! a tick as one burst of pipelined checkAndMutates, spread over a few connections: the
//! gateway wakes once per burst instead of once per transaction, and the committing thread
//! sends nothing.
//!
//! Each transaction's first secondary goes in one round and the rest in the next; the seam
//! between them is where a client can die with some secondaries committed and some not.

use std::sync::Arc;

use parking_lot::Mutex;

use crate::hbase::CheckAndMutate;
use crate::txn::actions;
use crate::txn::options::Seam;
use crate::txn::session::{Inner, Session};
use crate::txn::twopc::Mutation;

/// One committed transaction's secondaries, waiting for the collector.
struct Queued {
    session: Session,
    muts: Vec<Arc<Mutation>>,
    commit_ts: u64,
}

/// Secondaries queued since the collector last took them.
#[derive(Default)]
pub(crate) struct Backlog {
    queued: Mutex<Vec<Queued>>,
}

impl Session {
    /// Commits the secondaries (in the background unless `sync_secondaries`). Tracked by the
    /// executor, drained on shutdown. A client that dies at a seam between them (it marks
    /// itself dead) commits no more; returns true when that happened while we waited (sync
    /// mode).
    pub(crate) fn commit_secondaries(&self, muts: Vec<Arc<Mutation>>, commit_ts: u64) -> bool {
        if muts.is_empty() {
            return false;
        }
        let inner = &self.inner;
        if inner.opts.sync_secondaries {
            commit_round(inner, &[(self, &muts[0], commit_ts)]);
            if self.after_first_secondary() {
                let rest: Vec<_> = muts[1..].iter().map(|m| (self, m, commit_ts)).collect();
                commit_round(inner, &rest);
            }
            return inner.is_dead();
        }
        if inner.is_dead() {
            return false;
        }
        let first_in_tick = {
            let mut queued = inner.backlog.queued.lock();
            queued.push(Queued {
                session: self.clone(),
                muts,
                commit_ts,
            });
            queued.len() == 1
        };
        if first_in_tick {
            let inner = Arc::clone(inner);
            self.inner.executor.later(move || flush(&inner));
        }
        false
    }

    /// The seam after a transaction's first secondary commit: whether to go on (the client is
    /// alive and did not die here).
    fn after_first_secondary(&self) -> bool {
        if self.inner.crash_at(Seam::BetweenSecondaryCommits) {
            self.inner.die();
        }
        !self.inner.is_dead()
    }
}

/// One secondary to commit: the transaction it belongs to (its RPCs count there), the cell,
/// and the commit timestamp.
type Secondary<'a> = (&'a Session, &'a Arc<Mutation>, u64);

/// Overlapped commit CASes of secondaries, of one or several transactions of one client;
/// failures are only logged: whoever meets the lock later rolls it forward.
fn commit_round(inner: &Inner, round: &[Secondary]) {
    if round.is_empty() || inner.is_dead() {
        return;
    }
    let schema = &inner.opts.schema;
    let cams: Vec<CheckAndMutate> = round
        .iter()
        .map(|(_, m, commit_ts)| actions::commit(schema, &m.key, &m.lock, &m.bytes, *commit_ts))
        .collect();
    let calls: Vec<_> = round
        .iter()
        .zip(&cams)
        .map(|((session, m, _), cam)| {
            session.count();
            (m.key.table.as_str(), cam)
        })
        .collect();
    let outcomes = inner.store.check_and_mutate_all(&calls);
    for ((session, m, _), outcome) in round.iter().zip(outcomes) {
        session.settled(m, outcome, "secondary commit");
    }
}

/// The collector's job: every transaction queued so far, first secondaries in one round, the
/// rest of those whose client lives on in a second.
fn flush(inner: &Arc<Inner>) {
    let batch = std::mem::take(&mut *inner.backlog.queued.lock());
    let firsts: Vec<Secondary> = batch
        .iter()
        .map(|q| (&q.session, &q.muts[0], q.commit_ts))
        .collect();
    commit_round(inner, &firsts);
    let mut rest = Vec::new();
    for q in batch.iter().filter(|q| q.muts.len() > 1) {
        if q.session.after_first_secondary() {
            rest.extend(q.muts[1..].iter().map(|m| (&q.session, m, q.commit_ts)));
        }
    }
    commit_round(inner, &rest);
}
