//! Lock granularity, a per-table choice stored in the table's meta row (docs/design.md
//! invariant 14): a table locks cells (Percolator's choice, the default) or rows (one prewrite
//! and one commit checkAndMutate per row, whatever the number of columns, at the price of
//! conflicts between writers of different columns of a row).
//!
//! The choice is made when transactions are enabled and never changes afterwards: clients that
//! disagreed on it would look for locks in different cells and miss each other's. Whoever sets
//! it writes the meta row before the table gains its percolator families, and a client reads
//! the meta row again right after it first finds those families, so no client ever uses a
//! table under the wrong granularity.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};
use crate::format::meta::META_FAMILY;
use crate::format::meta::{GRANULARITY_CELL, GRANULARITY_ROW, LOCK_GRANULARITY};
use crate::format::ROW_LOCK_QUALIFIER;
use crate::hbase::{Put, RowResult};

/// What one lock of a transactional table covers.
///
/// ```
/// use percolator::txn::LockGranularity;
/// assert_eq!("row".parse::<LockGranularity>()?, LockGranularity::Row);
/// assert_eq!(LockGranularity::default().to_string(), "cell");
/// assert!("page".parse::<LockGranularity>().is_err());
/// # Ok::<(), percolator::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum LockGranularity {
    /// One lock per column of a row: writers of different columns never conflict.
    #[default]
    Cell,
    /// One lock per row: a transaction's writes to a row cost one prewrite and one commit
    /// checkAndMutate, and any two writers of a row conflict.
    Row,
}

impl LockGranularity {
    fn as_bytes(self) -> &'static [u8] {
        match self {
            LockGranularity::Cell => GRANULARITY_CELL,
            LockGranularity::Row => GRANULARITY_ROW,
        }
    }

    /// The granularity of a lock's primary, from the lock's own flag
    /// ([`Lock::primary_row`](crate::format::Lock)).
    pub(crate) fn of_primary(primary_row: bool) -> LockGranularity {
        if primary_row {
            LockGranularity::Row
        } else {
            LockGranularity::Cell
        }
    }

    /// The lock-family qualifier a column's lock lives under in a table of this granularity:
    /// the column's own (`column_q`, as [`Schema::qualifier`](crate::txn::Schema::qualifier)
    /// gives it), or its row's.
    ///
    /// ```
    /// use percolator::txn::LockGranularity;
    /// assert_eq!(LockGranularity::Cell.lock_qualifier(b"\x01fq"), b"\x01fq");
    /// assert_eq!(LockGranularity::Row.lock_qualifier(b"\x01fq"), b"");
    /// ```
    pub fn lock_qualifier(self, column_q: &[u8]) -> &[u8] {
        match self {
            LockGranularity::Cell => column_q,
            LockGranularity::Row => ROW_LOCK_QUALIFIER,
        }
    }

    /// The granularity a table's meta row records; a row without the cell is a cell table.
    pub(crate) fn of_meta_row(table: &str, meta: &RowResult) -> Result<LockGranularity> {
        match meta.value(META_FAMILY, LOCK_GRANULARITY) {
            None => Ok(LockGranularity::Cell),
            Some(v) if v == GRANULARITY_CELL => Ok(LockGranularity::Cell),
            Some(v) if v == GRANULARITY_ROW => Ok(LockGranularity::Row),
            Some(other) => Err(Error::Corrupted {
                what: "meta row",
                table: table.to_string(),
                row: crate::format::meta::meta_row(table),
                column: LOCK_GRANULARITY.to_vec(),
                reason: format!(
                    "unknown lock granularity {:?}",
                    String::from_utf8_lossy(other)
                ),
            }),
        }
    }

    /// Adds this granularity to a meta-row put.
    pub(crate) fn put_into(self, put: Put) -> Put {
        put.add(META_FAMILY, LOCK_GRANULARITY, self.as_bytes().to_vec())
    }
}

impl fmt::Display for LockGranularity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LockGranularity::Cell => "cell",
            LockGranularity::Row => "row",
        })
    }
}

impl FromStr for LockGranularity {
    type Err = Error;

    fn from_str(s: &str) -> Result<LockGranularity> {
        match s {
            "cell" => Ok(LockGranularity::Cell),
            "row" => Ok(LockGranularity::Row),
            other => Err(Error::IllegalArgument {
                message: format!("lock granularity must be `cell` or `row`, not {other:?}"),
            }),
        }
    }
}
