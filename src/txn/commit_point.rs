//! The commit point (docs/design.md invariant 3): the one checkAndMutate that decides a
//! transaction. It turns the primary's lock into a write record at `commit_ts`; before it
//! lands the transaction can still be rolled back by anyone, after it nobody can.
//!
//! A lost reply is settled by re-reading the primary (invariant 7). If the primary still
//! holds our lock (the reply was lost before the commit applied, or a heartbeat rewrote its
//! bytes meanwhile), the commit is repeated against the bytes actually stored. A commit that
//! gives up rolls its primary back the same way (`roll_back_primary`).

use crate::error::{Error, Result};
use crate::hbase::Delete;
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
        Ok(false) | Err(Error::OutcomeUnknown { .. }) => {
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
    let resolver = LockResolver::new(session);
    for _ in 0..3 {
        let (raw, status) = match resolver
            .primary_status(primary, start_ts, primary_row)
            .await
        {
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
                let cam = actions::commit(session.ctx().schema(), primary, &lock, &raw, commit_ts);
                match session.cas(&primary.table, &cam).await {
                    Ok(true) => return Ok(()),
                    Ok(false) | Err(Error::OutcomeUnknown { .. }) => continue,
                    Err(e) => return Err(undetermined(format!("retrying the commit: {e}"))),
                }
            }
            _ => return Err(rolled_back(primary, start_ts)),
        }
    }
    Err(undetermined("primary still locked after retries".into()))
}

/// After our own rollback CAS on the primary did not apply or lost its reply. The heartbeat
/// may have rewritten the lock's bytes: one in flight when the commit retired the primary
/// lands after the commit read what it believed stored, and one whose reply was lost left the
/// commit believing the old bytes. While the primary still holds our lock it is rolled back
/// against what is stored; anything else (released, or rolled back by a resolver) is final.
pub(crate) async fn roll_back_primary(
    session: &Session,
    primary: &CellKey,
    start_ts: u64,
    primary_row: bool,
) -> Result<bool> {
    let resolver = LockResolver::new(session);
    for _ in 0..3 {
        let (raw, status) = resolver
            .primary_status(primary, start_ts, primary_row)
            .await?;
        let TxnStatus::Locked { lock } = status else {
            return Ok(true);
        };
        let raw = raw.unwrap_or_default();
        let cam = actions::rollback(session.ctx().schema(), primary, &lock, &raw);
        match session.cas(&primary.table, &cam).await {
            Ok(true) => return Ok(true),
            Ok(false) | Err(Error::OutcomeUnknown { .. }) => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(false)
}

fn rolled_back(primary: &CellKey, start_ts: u64) -> Error {
    Error::RolledBack {
        start_ts,
        table: primary.table.clone(),
        row: primary.row.clone(),
    }
}
