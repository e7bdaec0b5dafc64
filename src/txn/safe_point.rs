//! The GC safe point as readers see it (docs/gc.md): the timestamp below which versions may
//! have been collected. It lives in the meta table's global row and only ever rises. A
//! transaction checks its start_ts against the cached value after every read and before it
//! commits (docs/design.md invariant 13), so a read that could have missed a collected
//! version fails with `SnapshotTooOld` instead of answering.

use std::time::Instant;

use crate::error::{Error, Result};
use crate::format::meta::{decode_safe_point, GLOBAL_ROW};
use crate::txn::context::Context;
use crate::txn::meta::read_row;

/// `SnapshotTooOld` when a snapshot at `start_ts` may miss versions collected below
/// `safe_point`. A snapshot exactly at the safe point is whole: GC keeps the newest version
/// at or below it.
pub(crate) fn check(start_ts: u64, safe_point: u64) -> Result<()> {
    if start_ts < safe_point {
        return Err(Error::SnapshotTooOld {
            start_ts,
            safe_point,
        });
    }
    Ok(())
}

/// `SnapshotTooOld` if GC's safe point, as cached, is above `start_ts` (docs/gc.md).
pub(crate) async fn check_snapshot(ctx: &Context, start_ts: u64) -> Result<()> {
    match snapshot_checked(ctx, start_ts, Instant::now()) {
        Some(checked) => checked,
        // Boxed: a read is rare, and its future would otherwise size every commit's.
        None => Box::pin(check_snapshot_read(ctx, start_ts)).await,
    }
}

/// [`check_snapshot`] when the cached safe point is young at `now` (the
/// caller's reading of the clock); `None` when it must be read.
pub(crate) fn snapshot_checked(ctx: &Context, start_ts: u64, now: Instant) -> Option<Result<()>> {
    let safe_point = ctx.safe_point().young(now)?;
    Some(check(start_ts, safe_point))
}

async fn check_snapshot_read(ctx: &Context, start_ts: u64) -> Result<()> {
    let meta_table = &ctx.schema().meta_table;
    let safe_point = ctx
        .safe_point()
        .get(Instant::now, || async {
            let global = read_row(ctx.store(), meta_table, GLOBAL_ROW).await?;
            decode_safe_point(&global, meta_table)
        })
        .await?;
    check(start_ts, safe_point)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::meta::{decode_safe_point as decode, META_FAMILY, SAFE_POINT_QUALIFIER};
    use crate::hbase::{Cell, RowResult};

    fn global(value: &[u8]) -> RowResult {
        RowResult {
            row: GLOBAL_ROW.to_vec(),
            cells: vec![Cell {
                family: META_FAMILY.to_vec(),
                qualifier: SAFE_POINT_QUALIFIER.to_vec(),
                timestamp: 1,
                value: value.to_vec(),
            }],
            partial: false,
        }
    }

    #[test]
    fn a_snapshot_below_the_safe_point_is_too_old_and_one_at_it_is_whole() {
        let row = global(&100u64.to_be_bytes());
        let sp = decode(&row, "m").unwrap();
        assert_eq!(sp, 100);
        assert!(matches!(
            check(99, sp),
            Err(Error::SnapshotTooOld {
                start_ts: 99,
                safe_point: 100
            })
        ));
        check(100, sp).unwrap();
        assert_eq!(decode(&RowResult::default(), "m").unwrap(), 0);
        assert!(matches!(
            decode(&global(b"short"), "m"),
            Err(Error::Corrupted { .. })
        ));
    }
}
