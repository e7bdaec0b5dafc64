//! Observer notifications as the committer writes them (docs/observers.md): which writes of a
//! commit leave a notification (the cells' byte format is `format::observer`). The observed
//! columns are listed in each table's meta row; the observer framework (`crate::observer`)
//! registers them and consumes the notifications.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::packed::{CommitCells, Written};
use crate::error::Result;
use crate::format::meta::META_FAMILY;
use crate::format::observer::{observed_qualifier, OBSERVED};
use crate::hbase::RowResult;
use crate::key::CellKey;
use crate::txn::context::Context;
use crate::txn::table_checks;
use crate::txn::table_checks::Granularities;
use crate::txn::CellFlags;

/// Whether the meta row of a table marks column `family:qualifier` observed. Most tables
/// observe nothing: their writes build no qualifier to look up.
fn is_observed(meta: &RowResult, family: &[u8], qualifier: &[u8]) -> bool {
    let observes = meta
        .cells
        .iter()
        .any(|c| c.family == META_FAMILY && c.qualifier.starts_with(OBSERVED));
    observes
        && meta
            .value(META_FAMILY, &observed_qualifier(family, qualifier))
            .is_some()
}

/// For each write of a commit, whether it leaves a notification: a put or delete of an
/// observed column (strong), or a column given [`notify`](crate::AsyncTransaction::notify)
/// (weak). Reads the meta rows the commit's table check read (`checked`), or, for a table
/// it did not check, the cached one.
pub(crate) async fn notify_flags(
    ctx: &Arc<Context>,
    writes: &CommitCells,
    weak: &BTreeSet<CellKey>,
    checked: &Granularities<'_>,
) -> Result<CellFlags> {
    let mut flags = CellFlags::with_capacity(writes.len());
    for i in 0..writes.len() {
        let flag = match flag_without_meta(ctx, writes, weak, i) {
            Some(flag) => flag,
            None => {
                let table = writes.table(i);
                // The rare reads are boxed: held in place, they would size every commit's
                // future.
                let row = match checked.meta_row(table) {
                    Some(row) => Arc::clone(row),
                    None => Box::pin(table_checks::table_meta(ctx, table)).await?,
                };
                let cell = writes.cell(i);
                is_observed(&row, cell.family(), cell.qualifier())
            }
        };
        flags.push(flag);
    }
    // A table made transactional before observers existed lacks the notify family.
    let mut has_notify_family: Option<&str> = None;
    for (i, _) in flags.iter().enumerate().filter(|&(_, &f)| f) {
        let table = writes.table(i);
        if has_notify_family != Some(table) {
            Box::pin(table_checks::check_family(
                ctx,
                table,
                &ctx.schema().notify_family,
            ))
            .await?;
            has_notify_family = Some(table);
        }
    }
    Ok(flags)
}

/// [`notify_flags`] when it needs no read: every written table's meta row is among `checked`,
/// and each table a notification goes to has the notify family in its cached descriptor.
/// `None` when something must be read.
pub(crate) fn notify_flags_cached(
    ctx: &Context,
    writes: &CommitCells,
    weak: &BTreeSet<CellKey>,
    checked: &Granularities<'_>,
) -> Option<CellFlags> {
    let mut flags = CellFlags::with_capacity(writes.len());
    for i in 0..writes.len() {
        let table = writes.table(i);
        let flag = match flag_without_meta(ctx, writes, weak, i) {
            Some(flag) => flag,
            None => {
                let cell = writes.cell(i);
                is_observed(checked.meta_row(table)?, cell.family(), cell.qualifier())
            }
        };
        if flag
            && !ctx
                .known_table(table)?
                .contains(&ctx.schema().notify_family)
        {
            return None;
        }
        flags.push(flag);
    }
    Some(flags)
}

/// Whether write `i` leaves a notification, when its table's meta row does not decide it: a
/// weak notification does, a lock-only write or a write to a project family does not.
fn flag_without_meta(
    ctx: &Context,
    writes: &CommitCells,
    weak: &BTreeSet<CellKey>,
    i: usize,
) -> Option<bool> {
    if !weak.is_empty() && weak.contains(&writes.key(i)) {
        return Some(true);
    }
    let cell = writes.cell(i);
    if cell.written() == Written::Lock || ctx.schema().is_percolator_family(cell.family()) {
        return Some(false);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::observer::parse_observed;

    #[test]
    fn observed_qualifiers_mark_exactly_their_column() {
        let meta = RowResult {
            row: b"table/t".to_vec(),
            cells: vec![crate::hbase::Cell {
                family: META_FAMILY.to_vec(),
                qualifier: observed_qualifier(b"f", b"q"),
                value: b"counter".to_vec(),
                timestamp: 1,
            }],
            partial: false,
        };
        assert!(is_observed(&meta, b"f", b"q"));
        assert!(!is_observed(&meta, b"f", b"x"));
        assert_eq!(
            parse_observed(&meta.cells[0].qualifier),
            Some((b"f".to_vec(), b"q".to_vec()))
        );
    }
}
