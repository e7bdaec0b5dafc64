//! Observer notifications as the committer writes them (docs/observers.md): which writes of a
//! commit leave a notification, and the cell it is. The observed columns are listed in each
//! table's meta row; the observer framework (`crate::observer`) registers them and consumes
//! the notifications, building on what is here.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::error::Result;
use crate::hbase::{Put, RowResult};
use crate::key::CellKey;
use crate::txn::actions::ts;
use crate::txn::codec::{column_qualifier, split_column_qualifier};
use crate::txn::context::Context;
use crate::txn::meta::META_FAMILY;
use crate::txn::mutation::Write;
use crate::txn::Schema;

/// Qualifier prefix of a notification in the notify family (the rest: the encoded column).
const NOTIFICATION: u8 = b'n';
/// The meta row qualifier prefix of an observed column (then the encoded column).
const OBSERVED: &[u8] = b"obs:col:";

/// The notification qualifier of a column.
pub(crate) fn notification_qualifier(family: &[u8], qualifier: &[u8]) -> Vec<u8> {
    let mut q = vec![NOTIFICATION];
    q.extend_from_slice(&column_qualifier(family, qualifier));
    q
}

/// The column a notification qualifier names, `None` for other cells of the family.
pub(crate) fn parse_notification(q: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    match q.split_first() {
        Some((&NOTIFICATION, rest)) => split_column_qualifier(rest).ok(),
        _ => None,
    }
}

/// The filter that makes a scan of the notify family return notifications only.
pub(crate) fn notification_filter() -> String {
    format!("ColumnPrefixFilter('{}')", NOTIFICATION as char)
}

/// The notification cell a write to `key` leaves, at version `start_ts` (its writer's).
pub(crate) fn notification_put(schema: &Schema, key: &CellKey, start_ts: u64) -> Put {
    Put::new(key.row.clone()).add_at(
        schema.notify_family.clone(),
        notification_qualifier(&key.family, &key.qualifier),
        ts(start_ts),
        Vec::new(),
    )
}

/// The meta row qualifier that marks the column (`family`, `qualifier`) observed.
pub(crate) fn observed_qualifier(family: &[u8], qualifier: &[u8]) -> Vec<u8> {
    let mut q = OBSERVED.to_vec();
    q.extend_from_slice(&column_qualifier(family, qualifier));
    q
}

/// The observed column an observed-qualifier names, `None` for other cells of the meta row.
pub(crate) fn parse_observed(q: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    split_column_qualifier(q.strip_prefix(OBSERVED)?).ok()
}

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
