//! The observer data model: notification and acknowledgment cells of the notify family, and
//! the observed-column registry in the meta table. Layout in `docs/observers.md`.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::hbase::{Put, RowResult};
use crate::key::CellKey;
use crate::txn::codec::{column_qualifier, split_column_qualifier};
use crate::txn::context::Context;
use crate::txn::meta::META_FAMILY;
use crate::txn::mutation::Write;
use crate::txn::Schema;

/// Qualifier prefix of a notification in the notify family (the rest: the encoded column).
const NOTIFICATION: u8 = b'n';
/// Qualifier prefix of an acknowledgment in the ack family (then the observer's name, a zero
/// byte, the column): never read as a notification even if the families were one.
const ACK: u8 = b'a';
/// The meta row qualifier prefix of an observed column (then the encoded column).
const OBSERVED: &[u8] = b"obs:col:";

/// A column that an observer watches.
///
/// ```
/// let c = percolator::observer::ObservedColumn::new("docs", "f", "content");
/// assert_eq!(c.to_string(), "docs/f:content");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObservedColumn {
    pub table: String,
    pub family: Vec<u8>,
    pub qualifier: Vec<u8>,
}

impl ObservedColumn {
    /// ```
    /// let c = percolator::observer::ObservedColumn::new("docs", "f", "content");
    /// assert_eq!(c.family, b"f");
    /// ```
    pub fn new(
        table: impl Into<String>,
        family: impl AsRef<[u8]>,
        qualifier: impl AsRef<[u8]>,
    ) -> ObservedColumn {
        ObservedColumn {
            table: table.into(),
            family: family.as_ref().to_vec(),
            qualifier: qualifier.as_ref().to_vec(),
        }
    }

    /// The cell of this column in `row`.
    ///
    /// ```
    /// let c = percolator::observer::ObservedColumn::new("docs", "f", "content");
    /// assert_eq!(c.key("d1")?.row, b"d1");
    /// # Ok::<(), percolator::Error>(())
    /// ```
    pub fn key(&self, row: impl AsRef<[u8]>) -> Result<CellKey> {
        Ok(CellKey::new(
            &self.table,
            row.as_ref(),
            self.family.clone(),
            self.qualifier.clone(),
        )?)
    }

    fn encoded(&self) -> Vec<u8> {
        column_qualifier(&self.family, &self.qualifier)
    }
}

impl std::fmt::Display for ObservedColumn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}/{}:{}",
            self.table,
            String::from_utf8_lossy(&self.family),
            String::from_utf8_lossy(&self.qualifier)
        )
    }
}

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

/// The acknowledgment cell of `observer` for `column` in `row`: a transactional cell of the
/// ack family holding the commit_ts of the newest change the observer has processed.
pub(crate) fn ack_key(
    schema: &Schema,
    observer: &str,
    column: &ObservedColumn,
    row: &[u8],
) -> Result<CellKey> {
    let mut q = vec![ACK];
    q.extend_from_slice(observer.as_bytes());
    q.push(0);
    q.extend_from_slice(&column.encoded());
    Ok(CellKey::new(
        &column.table,
        row,
        schema.ack_family.clone(),
        q,
    )?)
}

/// The notification cell a write to `key` leaves, at version `start_ts` (its writer's).
pub(crate) fn notification_put(schema: &Schema, key: &CellKey, start_ts: u64) -> Put {
    Put::new(key.row.clone()).add_at(
        schema.notify_family.clone(),
        notification_qualifier(&key.family, &key.qualifier),
        start_ts as i64,
        Vec::new(),
    )
}

/// Checks an observer name: it is part of acknowledgment qualifiers, ended by a zero byte.
pub(crate) fn check_observer_name(name: &str) -> Result<()> {
    if name.is_empty() || name.contains('\0') {
        return Err(Error::IllegalArgument {
            message: format!("observer name {name:?} must be non-empty and without NUL bytes"),
        });
    }
    Ok(())
}

/// The meta row cell that marks `column` observed by `observer`.
pub(crate) fn registry_cell(column: &ObservedColumn, observer: &str) -> (Vec<u8>, Vec<u8>) {
    let mut q = OBSERVED.to_vec();
    q.extend_from_slice(&column.encoded());
    (q, observer.as_bytes().to_vec())
}

/// Whether the meta row of a table marks `key`'s column observed.
fn is_observed(meta: &RowResult, key: &CellKey) -> bool {
    let mut q = OBSERVED.to_vec();
    q.extend_from_slice(&column_qualifier(&key.family, &key.qualifier));
    meta.value(META_FAMILY, &q).is_some()
}

/// The observed columns a table's meta row lists, with their observers' names.
pub(crate) fn observed_columns(table: &str, meta: &RowResult) -> Vec<(ObservedColumn, String)> {
    meta.cells
        .iter()
        .filter(|c| c.family == META_FAMILY)
        .filter_map(|c| {
            let encoded = c.qualifier.strip_prefix(OBSERVED)?;
            let (family, qualifier) = split_column_qualifier(encoded).ok()?;
            let name = String::from_utf8_lossy(&c.value).into_owned();
            Some((ObservedColumn::new(table, family, qualifier), name))
        })
        .collect()
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
    if flags.iter().any(|&f| f) {
        let notify_keys: Vec<CellKey> = writes
            .iter()
            .zip(&flags)
            .filter(|(_, &f)| f)
            .map(|((k, _), _)| {
                CellKey::new(
                    &k.table,
                    k.row.clone(),
                    ctx.schema().notify_family.clone(),
                    "",
                )
            })
            .collect::<std::result::Result<_, _>>()?;
        // A table made transactional before observers existed lacks the notify family.
        ctx.check_families(&notify_keys).await?;
    }
    Ok(flags)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notification_and_ack_qualifiers_never_collide() {
        let schema = Schema::default();
        let col = ObservedColumn::new("t", "f", "q");
        let n = notification_qualifier(b"f", b"q");
        let a = ack_key(&schema, "obs", &col, b"r").unwrap();
        assert_ne!(n[0], a.qualifier[0]);
        assert_eq!(parse_notification(&n), Some((b"f".to_vec(), b"q".to_vec())));
        assert_eq!(parse_notification(&a.qualifier), None);
    }

    #[test]
    fn registry_cells_round_trip() {
        let col = ObservedColumn::new("t", "f", "q");
        let (q, v) = registry_cell(&col, "counter");
        let meta = RowResult {
            row: b"table/t".to_vec(),
            cells: vec![crate::hbase::Cell {
                family: META_FAMILY.to_vec(),
                qualifier: q,
                value: v,
                timestamp: 1,
            }],
            partial: false,
        };
        assert_eq!(observed_columns("t", &meta), [(col, "counter".to_string())]);
        assert!(is_observed(
            &meta,
            &CellKey::new("t", "r", "f", "q").unwrap()
        ));
        assert!(!is_observed(
            &meta,
            &CellKey::new("t", "r", "f", "x").unwrap()
        ));
    }

    #[test]
    fn observer_names_are_checked() {
        assert!(check_observer_name("counts").is_ok());
        assert!(matches!(
            check_observer_name("a\0b"),
            Err(Error::IllegalArgument { .. })
        ));
        assert!(check_observer_name("").is_err());
    }
}
