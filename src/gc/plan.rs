//! What GC removes from one column, as a pure function of what is stored (TiKV's rule, newest
//! first; docs/gc.md). Records committed above the safe point stay. Among the rest, rollback
//! and lock-only records go until the first Put or Delete; that Put stays with its data (a
//! Delete there goes, since nothing below it can be read); everything older goes, with the
//! data its Put records point to. Data that no record points to (a rolled-back or abandoned
//! prewrite) goes when it is below the safe point, no lock holds it, and a Put or Delete at or
//! below the safe point hides it from every reader at or above the safe point. Lock cells are
//! never touched: a released one holds the mark that stops zombie prewrites.

use std::collections::HashSet;

use crate::format::{LockState, WriteKind, WriteRecord};

/// One column as stored: its lock state, write records and data versions.
#[derive(Clone, Debug, Default)]
pub(crate) struct StoredColumn {
    pub lock: Option<LockState>,
    /// (version, record), any order.
    pub writes: Vec<(u64, WriteRecord)>,
    /// Versions of the user cell, any order.
    pub data: Vec<u64>,
}

/// The exact versions to delete from one column.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ColumnPlan {
    pub writes: Vec<u64>,
    pub data: Vec<u64>,
    /// How many of `writes` are rollback records.
    pub rollbacks: u64,
}

/// The versions of `column` that no reader at or above `safe_point` can need.
pub(crate) fn plan_column(column: &StoredColumn, safe_point: u64) -> ColumnPlan {
    let mut writes = column.writes.clone();
    writes.sort_by_key(|w| std::cmp::Reverse(w.0));
    let mut plan = ColumnPlan::default();
    let mut keep_data = HashSet::new();
    let mut drop_data = HashSet::new();
    // Set once the newest Put or Delete at or below the safe point has been met.
    let mut hidden_below = false;
    for (version, rec) in &writes {
        if *version > safe_point {
            if rec.kind == WriteKind::Put {
                keep_data.insert(rec.start_ts);
            }
            continue;
        }
        let keep = !hidden_below && rec.kind == WriteKind::Put;
        if matches!(rec.kind, WriteKind::Put | WriteKind::Delete) && !hidden_below {
            hidden_below = true;
        }
        if keep {
            keep_data.insert(rec.start_ts);
            continue;
        }
        plan.writes.push(*version);
        if rec.kind == WriteKind::Rollback {
            plan.rollbacks += 1;
        }
        if rec.kind == WriteKind::Put {
            drop_data.insert(rec.start_ts);
        }
    }
    let locked_at = match &column.lock {
        Some(LockState::Locked(lock)) => Some(lock.start_ts),
        _ => None,
    };
    let mut data = column.data.clone();
    data.sort_unstable_by(|a, b| b.cmp(a));
    data.dedup();
    for version in data {
        if keep_data.contains(&version) || locked_at == Some(version) {
            continue;
        }
        let orphan_hidden = hidden_below && version < safe_point;
        if drop_data.contains(&version) || orphan_hidden {
            plan.data.push(version);
        }
    }
    plan
}

/// Versions a column keeps after `plan`: write records plus data versions.
pub(crate) fn kept_versions(column: &StoredColumn, plan: &ColumnPlan) -> usize {
    column.writes.len() + column.data.len() - plan.writes.len() - plan.data.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::fixtures::lock;

    fn rec(kind: WriteKind, start_ts: u64) -> WriteRecord {
        WriteRecord {
            kind,
            start_ts,
            short_value: (kind == WriteKind::Put).then(|| b"v".to_vec()),
        }
    }

    fn column(writes: &[(u64, WriteKind, u64)], data: &[u64]) -> StoredColumn {
        StoredColumn {
            lock: Some(LockState::Released { max_ts: 1000 }),
            writes: writes.iter().map(|&(v, k, s)| (v, rec(k, s))).collect(),
            data: data.to_vec(),
        }
    }

    #[test]
    fn keeps_everything_above_the_safe_point_and_the_newest_put_at_or_below_it() {
        use WriteKind::*;
        // Newest first: put@90 (s 85), rollback@70, lock@60, put@50 (s 45), put@30 (s 25).
        let col = column(
            &[
                (90, Put, 85),
                (70, Rollback, 70),
                (60, Lock, 55),
                (50, Put, 45),
                (30, Put, 25),
            ],
            &[85, 45, 25],
        );
        let plan = plan_column(&col, 80);
        assert_eq!(plan.writes, [70, 60, 30]);
        assert_eq!(plan.data, [25]);
        assert_eq!(plan.rollbacks, 1);
        assert_eq!(kept_versions(&col, &plan), 4);
        // At a safe point above everything, the newest put is still kept.
        let plan = plan_column(&col, 100);
        assert_eq!(plan.writes, [70, 60, 50, 30]);
        assert_eq!(plan.data, [45, 25]);
        // A safe point exactly at a commit keeps that commit.
        assert_eq!(plan_column(&col, 90).writes, [70, 60, 50, 30]);
        assert_eq!(plan_column(&col, 89).writes, [70, 60, 30]);
    }

    #[test]
    fn a_delete_at_the_top_goes_with_everything_older() {
        use WriteKind::*;
        let col = column(
            &[(60, Delete, 55), (50, Put, 45), (40, Rollback, 40)],
            &[45],
        );
        let plan = plan_column(&col, 70);
        assert_eq!(plan.writes, [60, 50, 40]);
        assert_eq!(plan.data, [45]);
    }

    #[test]
    fn rollbacks_alone_go_but_nothing_hides_orphans_without_a_put_or_delete() {
        use WriteKind::*;
        let col = column(&[(40, Rollback, 40), (20, Rollback, 20)], &[40]);
        let plan = plan_column(&col, 50);
        assert_eq!(plan.writes, [40, 20]);
        assert!(
            plan.data.is_empty(),
            "no put or delete below the safe point hides it"
        );
    }

    #[test]
    fn orphan_data_goes_only_below_the_safe_point_unlocked_and_hidden() {
        use WriteKind::*;
        let mut col = column(&[(30, Put, 25)], &[25, 40, 60, 70]);
        col.lock = Some(LockState::Locked(lock(60, "p")));
        let plan = plan_column(&col, 65);
        // 40: abandoned below the safe point; 60: held by a lock; 70: above the safe point.
        assert_eq!(plan.data, [40]);
        assert!(plan.writes.is_empty());
    }

    /// The safe point may be an open transaction's start_ts (it never passes the oldest one), so
    /// a data version at exactly the safe point that no record or lock accounts for may be that
    /// transaction's: only versions strictly below it are orphans.
    #[test]
    fn data_at_the_safe_point_itself_is_never_an_orphan() {
        use WriteKind::*;
        let col = column(&[(30, Put, 25)], &[25, 64, 65]);
        let plan = plan_column(&col, 65);
        assert_eq!(plan.data, [64]);
        assert!(plan.writes.is_empty());
    }

    #[test]
    fn data_pointed_at_from_above_the_safe_point_stays() {
        use WriteKind::*;
        // Started below the safe point, committed above it: still readable.
        let col = column(&[(90, Put, 20), (30, Put, 10)], &[20, 10]);
        let plan = plan_column(&col, 50);
        assert!(plan.writes.is_empty());
        assert!(plan.data.is_empty());
        let plan = plan_column(&col, 95);
        assert_eq!(
            (plan.writes.as_slice(), plan.data.as_slice()),
            (&[30][..], &[10][..])
        );
    }
}
