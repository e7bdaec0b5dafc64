//! Whether a transaction committed, read off its primary (docs/design.md invariant 4).

use crate::format::{decode_write, CodecError, Lock, LockState, WriteKind};
use crate::hbase::Cell;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TxnStatus {
    Committed {
        commit_ts: u64,
    },
    RolledBack,
    /// The primary still holds the transaction's lock: it is in progress or abandoned.
    Locked {
        lock: Lock,
    },
    /// The primary is released below start_ts (or was never written): with parallel prewrite
    /// the primary's prewrite may still arrive, so nothing can be concluded before fencing.
    PrimaryNotLocked {
        absent: bool,
    },
    /// Another transaction holds the primary: resolve or wait for it first, because its
    /// release may leave the mark below our start_ts and let our prewrite through later.
    BlockedBy {
        lock: Lock,
    },
}

/// `writes` are the primary's write-record cells with versions >= start_ts, any order.
pub fn txn_status(
    start_ts: u64,
    primary_lock: &LockState,
    writes: &[Cell],
) -> Result<TxnStatus, CodecError> {
    for cell in writes {
        let rec = decode_write(&cell.value)?;
        if rec.start_ts != start_ts {
            continue;
        }
        return Ok(match rec.kind {
            WriteKind::Rollback => TxnStatus::RolledBack,
            WriteKind::Put | WriteKind::Delete | WriteKind::Lock => TxnStatus::Committed {
                commit_ts: u64::try_from(cell.timestamp).unwrap_or(0),
            },
        });
    }
    Ok(match primary_lock {
        LockState::Locked(lock) if lock.start_ts == start_ts => {
            TxnStatus::Locked { lock: lock.clone() }
        }
        LockState::Locked(lock) => TxnStatus::BlockedBy { lock: lock.clone() },
        // The mark at or above start_ts means our prewrite can never land, and there is no
        // commit record: the transaction did not and will not commit.
        LockState::Released { max_ts } if *max_ts >= start_ts => TxnStatus::RolledBack,
        LockState::Released { .. } => TxnStatus::PrimaryNotLocked { absent: false },
        LockState::Absent => TxnStatus::PrimaryNotLocked { absent: true },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::fixtures::{lock, write_cell};

    fn write(at: i64, kind: WriteKind, start_ts: u64) -> Cell {
        write_cell(at, kind, start_ts, None)
    }

    #[test]
    fn a_write_record_pointing_at_start_ts_means_committed() {
        let writes = [
            write(130, WriteKind::Put, 120),
            write(110, WriteKind::Put, 100),
        ];
        let released = LockState::Released { max_ts: 130 };
        assert_eq!(
            txn_status(100, &released, &writes).unwrap(),
            TxnStatus::Committed { commit_ts: 110 }
        );
        // A primary that was only locked commits with a lock record: committed all the same.
        let lock_only = [write(140, WriteKind::Lock, 135)];
        assert_eq!(
            txn_status(135, &released, &lock_only).unwrap(),
            TxnStatus::Committed { commit_ts: 140 }
        );
    }

    #[test]
    fn released_at_or_above_start_ts_without_a_record_means_rolled_back() {
        let writes = [write(130, WriteKind::Put, 120)];
        let released = LockState::Released { max_ts: 130 };
        assert_eq!(
            txn_status(100, &released, &writes).unwrap(),
            TxnStatus::RolledBack
        );
        let rb = [write(100, WriteKind::Rollback, 100)];
        assert_eq!(
            txn_status(100, &LockState::Released { max_ts: 100 }, &rb).unwrap(),
            TxnStatus::RolledBack
        );
    }

    #[test]
    fn released_below_start_ts_is_not_yet_conclusive() {
        assert_eq!(
            txn_status(100, &LockState::Released { max_ts: 50 }, &[]).unwrap(),
            TxnStatus::PrimaryNotLocked { absent: false }
        );
        assert_eq!(
            txn_status(100, &LockState::Absent, &[]).unwrap(),
            TxnStatus::PrimaryNotLocked { absent: true }
        );
    }

    #[test]
    fn locks_are_told_apart_by_start_ts() {
        let ours = lock(100, "p");
        assert_eq!(
            txn_status(100, &LockState::Locked(ours.clone()), &[]).unwrap(),
            TxnStatus::Locked { lock: ours }
        );
        let theirs = lock(90, "p");
        assert_eq!(
            txn_status(100, &LockState::Locked(theirs.clone()), &[]).unwrap(),
            TxnStatus::BlockedBy { lock: theirs }
        );
    }
}
