//! Snapshot read of one column from its lock cell and newest write records (docs/design.md
//! invariant 5).

use crate::format::{decode_write, CodecError, Lock, LockState, WriteKind};
use crate::hbase::Cell;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadDecision {
    Value(Vec<u8>),
    /// The committed value is large: read the data column at exactly this version.
    FetchData {
        start_ts: u64,
    },
    /// Never written, or deleted, as of the snapshot.
    Missing,
    /// A lock at or below the snapshot: its transaction may commit below the snapshot, so the
    /// read must wait or resolve it before returning anything.
    Blocked(Lock),
    /// Every fetched write record was a rollback or a lock-only commit: fetch more versions.
    NeedMoreVersions,
}

/// `writes` are the column's write-record cells at or below the snapshot, newest first, as
/// HBase returns them; `complete` says no older versions were cut off by maxVersions.
pub fn read_column(
    snapshot: u64,
    lock: &LockState,
    writes: &[Cell],
    complete: bool,
) -> Result<ReadDecision, CodecError> {
    if let LockState::Locked(l) = lock
        && l.start_ts <= snapshot
    {
        return Ok(ReadDecision::Blocked(l.clone()));
    }
    for cell in writes {
        if u64::try_from(cell.timestamp).map_or(true, |t| t > snapshot) {
            continue;
        }
        let rec = decode_write(&cell.value)?;
        match rec.kind {
            // Neither changed the value: the answer is further down.
            WriteKind::Rollback | WriteKind::Lock => continue,
            WriteKind::Delete => return Ok(ReadDecision::Missing),
            WriteKind::Put => {
                return Ok(match rec.short_value {
                    Some(v) => ReadDecision::Value(v),
                    None => ReadDecision::FetchData {
                        start_ts: rec.start_ts,
                    },
                })
            }
        }
    }
    Ok(if complete {
        ReadDecision::Missing
    } else {
        ReadDecision::NeedMoreVersions
    })
}

/// The commit_ts of the column's newest change (0 if none) among `writes`, its write-record
/// cells at every version, newest first. Rollback records are no change. When every cell
/// fetched is a rollback and older ones were cut off (`complete` false), the oldest fetched
/// counts: at worst an observer then runs once for nothing.
pub fn newest_change(writes: &[Cell], complete: bool) -> Result<u64, CodecError> {
    for cell in writes {
        if decode_write(&cell.value)?.kind != WriteKind::Rollback {
            return Ok(cell.timestamp as u64);
        }
    }
    Ok(match writes.last() {
        Some(oldest) if !complete => oldest.timestamp as u64,
        _ => 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::fixtures::{lock, write_cell as rec};

    #[test]
    fn the_newest_change_looks_past_rollbacks_at_any_version() {
        let writes = [
            rec(50, WriteKind::Rollback, 50, None),
            rec(40, WriteKind::Lock, 35, None),
            rec(30, WriteKind::Put, 25, Some(b"v")),
        ];
        assert_eq!(newest_change(&writes, true).unwrap(), 40);
        assert_eq!(newest_change(&writes[2..], true).unwrap(), 30);
        assert_eq!(newest_change(&writes[..1], true).unwrap(), 0);
        assert_eq!(newest_change(&writes[..1], false).unwrap(), 50);
        assert_eq!(newest_change(&[], true).unwrap(), 0);
    }

    #[test]
    fn newest_committed_put_at_or_below_the_snapshot_wins() {
        let writes = [
            rec(20, WriteKind::Put, 15, Some(b"new")),
            rec(10, WriteKind::Put, 5, Some(b"old")),
        ];
        let free = LockState::Released { max_ts: 20 };
        assert_eq!(
            read_column(25, &free, &writes, true).unwrap(),
            ReadDecision::Value(b"new".to_vec())
        );
        assert_eq!(
            read_column(15, &free, &writes[1..], true).unwrap(),
            ReadDecision::Value(b"old".to_vec())
        );
    }

    #[test]
    fn locks_below_the_snapshot_block_and_newer_ones_are_ignored() {
        let writes = [rec(10, WriteKind::Put, 5, Some(b"old"))];
        let locked = LockState::Locked(lock(30, "p"));
        assert!(matches!(
            read_column(30, &locked, &writes, true).unwrap(),
            ReadDecision::Blocked(_)
        ));
        assert_eq!(
            read_column(29, &locked, &writes, true).unwrap(),
            ReadDecision::Value(b"old".to_vec())
        );
    }

    #[test]
    fn lock_only_commits_are_looked_past_like_rollbacks() {
        let free = LockState::Released { max_ts: 30 };
        let writes = [
            rec(30, WriteKind::Lock, 25, None),
            rec(20, WriteKind::Put, 15, Some(b"kept")),
        ];
        assert_eq!(
            read_column(40, &free, &writes, true).unwrap(),
            ReadDecision::Value(b"kept".to_vec())
        );
        assert_eq!(
            read_column(40, &free, &writes[..1], false).unwrap(),
            ReadDecision::NeedMoreVersions
        );
        assert_eq!(
            read_column(40, &free, &writes[..1], true).unwrap(),
            ReadDecision::Missing
        );
    }

    #[test]
    fn deletes_rollbacks_and_large_values() {
        let free = LockState::Released { max_ts: 40 };
        let writes = [
            rec(40, WriteKind::Rollback, 40, None),
            rec(30, WriteKind::Delete, 25, None),
        ];
        assert_eq!(
            read_column(50, &free, &writes, true).unwrap(),
            ReadDecision::Missing
        );
        assert_eq!(
            read_column(50, &free, &writes[..1], false).unwrap(),
            ReadDecision::NeedMoreVersions
        );
        let big = [rec(30, WriteKind::Put, 25, None)];
        assert_eq!(
            read_column(50, &free, &big, true).unwrap(),
            ReadDecision::FetchData { start_ts: 25 }
        );
        assert_eq!(
            read_column(50, &LockState::Absent, &[], true).unwrap(),
            ReadDecision::Missing
        );
    }
}
