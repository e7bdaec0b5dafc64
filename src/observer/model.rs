//! The observer data model: acknowledgment cells of the ack family and the observed-column
//! registry in the meta table; the notification cells themselves are the committer's
//! (all of their bytes are `format::observer`'s). Layout in `docs/observers.md`.

use crate::error::{Error, Result};
use crate::format::meta::META_FAMILY;
use crate::format::observer::{ack_qualifier, observed_qualifier, parse_observed};
pub(crate) use crate::format::observer::{
    notification_filter, notification_qualifier, parse_notification,
};
use crate::hbase::RowResult;
use crate::key::{Binary, CellKey};
use crate::txn::Schema;

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
}

impl std::fmt::Display for ObservedColumn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}/{}:{}",
            Binary(self.table.as_bytes()),
            Binary(&self.family),
            Binary(&self.qualifier)
        )
    }
}

/// The acknowledgment cell of `observer` for `column` in `row`: a transactional cell of the
/// ack family holding the commit_ts of the newest change the observer has processed.
pub fn ack_key(
    schema: &Schema,
    observer: &str,
    column: &ObservedColumn,
    row: &[u8],
) -> Result<CellKey> {
    let q = ack_qualifier(observer, &column.family, &column.qualifier);
    Ok(CellKey::new(
        &column.table,
        row,
        schema.ack_family.clone(),
        q,
    )?)
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
    (
        observed_qualifier(&column.family, &column.qualifier),
        observer.as_bytes().to_vec(),
    )
}

/// The observed columns a table's meta row lists, with their observers' names.
pub(crate) fn observed_columns(table: &str, meta: &RowResult) -> Vec<(ObservedColumn, String)> {
    meta.cells
        .iter()
        .filter(|c| c.family == META_FAMILY)
        .filter_map(|c| {
            let (family, qualifier) = parse_observed(&c.qualifier)?;
            let name = String::from_utf8_lossy(&c.value).into_owned();
            Some((ObservedColumn::new(table, family, qualifier), name))
        })
        .collect()
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
