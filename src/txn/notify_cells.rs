//! The byte format of observer notifications: the notification cell a write leaves in the
//! notify family, and the meta row's marks of observed columns (docs/observers.md). Below the
//! committer (`mutation` writes notifications) and the observer framework (which reads them);
//! which writes notify is `notify`'s.

use crate::hbase::Put;
use crate::key::CellKey;
use crate::txn::actions::ts;
use crate::txn::codec::{column_qualifier, split_column_qualifier};
use crate::txn::Schema;

/// Qualifier prefix of a notification in the notify family (the rest: the encoded column).
const NOTIFICATION: u8 = b'n';
/// The meta row qualifier prefix of an observed column (then the encoded column).
pub(crate) const OBSERVED: &[u8] = b"obs:col:";

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
