//! The commit point (docs/design.md invariant 3): the one checkAndMutate that decides a
//! transaction. It turns the primary's lock into a write record at `commit_ts`; before it
//! lands the transaction can still be rolled back by anyone, after it nobody can.
//!
//! A lost reply, or an HBase error (which does not say the CAS was not applied), is settled by
//! re-reading the primary (invariant 7). If the primary still
//! holds our lock (the reply was lost before the commit applied, or a heartbeat rewrote its
//! bytes meanwhile), the commit is repeated against the bytes actually stored. A commit that
//! gives up rolls its primary back the same way (`roll_back_primary`).

use crate::error::{Error, Result, RetryClass};
use crate::format::Lock;
use crate::hbase::{CheckAndMutate, Delete};
use crate::key::CellKey;
use crate::txn::actions::{self, TxnStatus};
use crate::txn::resolver::LockResolver;
use crate::txn::session::Session;

/// Writes the commit point of transaction `start_ts` whose primary is `primary`, at
/// `commit_ts`. `Ok` means committed; `RolledBack` means another client rolled it back first;
/// `CommitUndetermined` means the outcome could not be learned.
///
/// `extra` (a delete in the primary's row) rides in the commit point's CAS, so it lands
/// exactly when the transaction commits; `Ok(true)` says it landed. A commit settled by
/// re-reading the primary returns `Ok(false)`: the caller applies `extra` itself if it must.
pub(crate) async fn commit_primary(
    session: &Session,
    primary: &CellKey,
    start_ts: u64,
    commit_ts: u64,
    extra: Option<&Delete>,
) -> Result<bool> {
    let ctx = session.ctx();
    // Retired first: no heartbeat rewrites the lock once the commit is on its way.
    let Some(stored) = ctx.primaries().retire(start_ts) else {
        return Err(rolled_back(primary, start_ts));
    };
    let cam = actions::commit(
        ctx.schema(),
        stored.key(),
        stored.lock(),
        stored.bytes(),
        commit_ts,
    );
    let primary_row = stored.lock().primary_row;
    let rides = extra.filter(|d| d.row == primary.row);
    let cam = match rides {
        Some(delete) => cam.delete(delete.clone()),
        None => cam,
    };
    match session.cas(&primary.table, &cam).await {
        Ok(true) => Ok(rides.is_some()),
        // An HBase error does not say the CAS was not applied: the gateway's client may have
        // applied it, lost the reply to a region move, and given up on its retries. Reported
        // as it stands, a `Retry` error would have `run` do a committed transaction again.
        Ok(false) | Err(Error::OutcomeUnknown { .. } | Error::ServerIo { .. }) => {
            // Boxed: the usual commit never settles, and should not carry room for it.
            Box::pin(settle(session, primary, start_ts, commit_ts, primary_row)).await?;
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

/// After a failed or unanswered commit CAS: the primary tells what happened.
async fn settle(
    session: &Session,
    primary: &CellKey,
    start_ts: u64,
    commit_ts: u64,
    primary_row: bool,
) -> Result<()> {
    let undetermined = |reason: String| Error::CommitUndetermined {
        start_ts,
        commit_ts,
        primary: Box::new(primary.clone()),
        reason,
    };
    let commit = |lock: &Lock, raw: &[u8]| {
        actions::commit(session.ctx().schema(), primary, lock, raw, commit_ts)
    };
    match on_our_lock(session, primary, start_ts, primary_row, commit).await {
        Ok(OnOurLock::Applied) => Ok(()),
        Ok(OnOurLock::Gone(Some(c))) if c == commit_ts => Ok(()),
        Ok(OnOurLock::Gone(Some(c))) => {
            Err(undetermined(format!("primary committed at unexpected {c}")))
        }
        Ok(OnOurLock::Gone(None)) => Err(rolled_back(primary, start_ts)),
        Ok(OnOurLock::StillLocked) => {
            Err(undetermined("primary still locked after retries".into()))
        }
        Err(Failed::Reading(e)) => Err(undetermined(format!("re-reading the primary failed: {e}"))),
        Err(Failed::Sending(e)) => Err(undetermined(format!("retrying the commit: {e}"))),
    }
}

/// After our own rollback CAS on the primary did not apply or lost its reply. The heartbeat
/// may have rewritten the lock's bytes: one in flight when the commit retired the primary
/// lands after the commit read what it believed stored, and one whose reply was lost left the
/// commit believing the old bytes. While the primary still holds our lock it is rolled back
/// against what is stored; anything else (released, or rolled back by a resolver) is final.
/// False when it is still ours after every round.
pub(crate) async fn roll_back_primary(
    session: &Session,
    primary: &CellKey,
    start_ts: u64,
    primary_row: bool,
) -> Result<bool> {
    let rollback =
        |lock: &Lock, raw: &[u8]| actions::rollback(session.ctx().schema(), primary, lock, raw);
    match on_our_lock(session, primary, start_ts, primary_row, rollback).await {
        Ok(OnOurLock::StillLocked) => Ok(false),
        Ok(OnOurLock::Applied | OnOurLock::Gone(_)) => Ok(true),
        Err(Failed::Reading(e) | Failed::Sending(e)) => Err(e),
    }
}

/// What acting on our own lock, as the primary stores it, came to.
enum OnOurLock {
    /// The CAS built from the stored lock applied.
    Applied,
    /// The primary holds our lock no more: the commit_ts it shows for us, if any.
    Gone(Option<u64>),
    /// Still our lock after every round, its bytes changed under each CAS.
    StillLocked,
}

/// The step of [`on_our_lock`] that failed.
enum Failed {
    Reading(Error),
    Sending(Error),
}

/// Up to three rounds: re-reads the primary and, while it holds our lock, sends the CAS that
/// `cas` builds from that lock and its stored bytes; a CAS that misses or loses its reply
/// means "read again". What settles both a commit point and a rollback that missed.
async fn on_our_lock(
    session: &Session,
    primary: &CellKey,
    start_ts: u64,
    primary_row: bool,
    cas: impl Fn(&Lock, &[u8]) -> CheckAndMutate,
) -> std::result::Result<OnOurLock, Failed> {
    let resolver = LockResolver::new(session);
    for _ in 0..3 {
        // A primary whose region is still in transition (the CAS that failed met it) is read
        // once it is back: the context's store waits reads out (`TxnOptions::settle_timeout`).
        let (raw, status) = resolver
            .primary_status(primary, start_ts, primary_row)
            .await
            .map_err(Failed::Reading)?;
        let lock = match status {
            TxnStatus::Locked { lock } => lock,
            TxnStatus::Committed { commit_ts } => return Ok(OnOurLock::Gone(Some(commit_ts))),
            _ => return Ok(OnOurLock::Gone(None)),
        };
        let cam = cas(&lock, &raw.unwrap_or_default());
        match session.cas(&primary.table, &cam).await {
            Ok(true) => return Ok(OnOurLock::Applied),
            Ok(false) | Err(Error::OutcomeUnknown { .. }) => continue,
            // Applied or not, the next read tells (once the region is back).
            Err(e @ Error::ServerIo { .. }) if e.retry_class() == RetryClass::Retry => continue,
            Err(e) => return Err(Failed::Sending(e)),
        }
    }
    Ok(OnOurLock::StillLocked)
}

fn rolled_back(primary: &CellKey, start_ts: u64) -> Error {
    Error::RolledBack {
        start_ts,
        table: primary.table.clone(),
        row: primary.row.clone(),
    }
}
