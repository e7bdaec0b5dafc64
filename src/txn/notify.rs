//! Observer notifications as the committer writes them (docs/observers.md): which writes of a
//! commit leave a notification (the cells' byte format is `notify_cells`). The observed
//! columns are listed in each table's meta row; the observer framework (`crate::observer`)
//! registers them and consumes the notifications.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::error::Result;
use crate::hbase::RowResult;
use crate::key::CellKey;
use crate::txn::context::Context;
use crate::txn::meta::META_FAMILY;
use crate::txn::mutation::Write;
use crate::txn::notify_cells::observed_qualifier;

/// Whether the meta row of a table marks `key`'s column observed.
fn is_observed(meta: &RowResult, key: &CellKey) -> bool {
    meta.value(
        META_FAMILY,
        &observed_qualifier(&key.family, &key.qualifier),
    )
    .is_some()
}

/// For each write of a commit, whether it leaves a notification: a put or delete of an
/// observed column (strong), or a column given [`notify`](crate::AsyncTransaction::notify)
/// (weak). Reads each written table's cached meta row only.
pub(crate) async fn notify_flags(
    ctx: &Arc<Context>,
    writes: &[(CellKey, Write)],
    weak: &BTreeSet<CellKey>,
) -> Result<Vec<bool>> {
    let mut flags = Vec::with_capacity(writes.len());
    let mut meta: Option<(&str, Arc<RowResult>)> = None;
    for (key, write) in writes {
        if weak.contains(key) {
            flags.push(true);
            continue;
        }
        if matches!(write, Write::Lock) || ctx.schema().is_percolator_family(&key.family) {
            flags.push(false);
            continue;
        }
        let row = match &meta {
            Some((table, row)) if *table == key.table => Arc::clone(row),
            _ => {
                let row = ctx.table_meta(&key.table).await?;
                meta = Some((&key.table, Arc::clone(&row)));
                row
            }
        };
        flags.push(is_observed(&row, key));
    }
    // A table made transactional before observers existed lacks the notify family.
    let mut checked: Option<&str> = None;
    for ((key, _), _) in writes.iter().zip(&flags).filter(|(_, &f)| f) {
        if checked != Some(key.table.as_str()) {
            ctx.check_family(&key.table, &ctx.schema().notify_family)
                .await?;
            checked = Some(key.table.as_str());
        }
    }
    Ok(flags)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::txn::notify_cells::parse_observed;

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
        assert!(is_observed(
            &meta,
            &CellKey::new("t", "r", "f", "q").unwrap()
        ));
        assert!(!is_observed(
            &meta,
            &CellKey::new("t", "r", "f", "x").unwrap()
        ));
        assert_eq!(
            parse_observed(&meta.cells[0].qualifier),
            Some((b"f".to_vec(), b"q".to_vec()))
        );
    }
}
