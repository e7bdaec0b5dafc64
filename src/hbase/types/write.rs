//! Puts and deletes.

use super::read::Column;

/// One cell of a put; `timestamp: None` falls back to the put's timestamp, then server time.
///
/// ```
/// use percolator::hbase::Put;
/// let put = Put::new("r").add_at("f", "q", 3, "v");
/// let cell = &put.cells[0];
/// assert_eq!((&cell.family[..], &cell.qualifier[..]), (&b"f"[..], &b"q"[..]));
/// assert_eq!((&cell.value[..], cell.timestamp), (&b"v"[..], Some(3)));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PutCell {
    pub family: Vec<u8>,
    pub qualifier: Vec<u8>,
    pub value: Vec<u8>,
    pub timestamp: Option<i64>,
}

/// How a mutation is written to the write-ahead log; `UseDefault` leaves it to the table.
///
/// ```
/// use percolator::hbase::{Durability, Put};
/// assert_eq!(Durability::default(), Durability::UseDefault);
/// for d in [Durability::SkipWal, Durability::AsyncWal, Durability::SyncWal, Durability::FsyncWal] {
///     assert_eq!(Put::new("r").durability(d).durability, d);
/// }
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Durability {
    #[default]
    UseDefault,
    SkipWal,
    AsyncWal,
    SyncWal,
    FsyncWal,
}

/// A write of cells to one row.
///
/// ```
/// use percolator::hbase::{Durability, Put};
/// let put = Put::new("r").add("f", "q", "v").timestamp(10);
/// assert_eq!(put.row, b"r");
/// assert_eq!(put.cells[0].value, b"v");
/// assert_eq!((put.timestamp, put.durability), (Some(10), Durability::UseDefault));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Put {
    pub row: Vec<u8>,
    pub cells: Vec<PutCell>,
    pub timestamp: Option<i64>,
    pub durability: Durability,
}

impl Put {
    /// An empty put of `row`; add cells with [`Put::add`] or [`Put::add_at`].
    ///
    /// ```
    /// use percolator::hbase::Put;
    /// assert!(Put::new("r").cells.is_empty());
    /// ```
    pub fn new(row: impl Into<Vec<u8>>) -> Self {
        Put {
            row: row.into(),
            cells: Vec::new(),
            timestamp: None,
            durability: Durability::UseDefault,
        }
    }

    /// Adds a cell written at the put's timestamp (or server time).
    ///
    /// ```
    /// use percolator::hbase::Put;
    /// let put = Put::new("r").add("f", "q", "v");
    /// assert_eq!((&put.cells[0].value[..], put.cells[0].timestamp), (&b"v"[..], None));
    /// ```
    pub fn add(
        mut self,
        family: impl Into<Vec<u8>>,
        qualifier: impl Into<Vec<u8>>,
        value: impl Into<Vec<u8>>,
    ) -> Self {
        self.cells.push(PutCell {
            family: family.into(),
            qualifier: qualifier.into(),
            value: value.into(),
            timestamp: None,
        });
        self
    }

    /// Adds a cell written at its own `timestamp`.
    ///
    /// ```
    /// use percolator::hbase::Put;
    /// assert_eq!(Put::new("r").add_at("f", "q", 4, "v").cells[0].timestamp, Some(4));
    /// ```
    pub fn add_at(
        mut self,
        family: impl Into<Vec<u8>>,
        qualifier: impl Into<Vec<u8>>,
        timestamp: i64,
        value: impl Into<Vec<u8>>,
    ) -> Self {
        self.cells.push(PutCell {
            family: family.into(),
            qualifier: qualifier.into(),
            value: value.into(),
            timestamp: Some(timestamp),
        });
        self
    }

    /// The timestamp of every cell that does not carry its own.
    ///
    /// ```
    /// use percolator::hbase::Put;
    /// assert_eq!(Put::new("r").timestamp(8).timestamp, Some(8));
    /// ```
    pub fn timestamp(mut self, ts: i64) -> Self {
        self.timestamp = Some(ts);
        self
    }

    /// How the put is written to the WAL.
    ///
    /// ```
    /// use percolator::hbase::{Durability, Put};
    /// assert_eq!(Put::new("r").durability(Durability::SkipWal).durability, Durability::SkipWal);
    /// ```
    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }
}

/// What a [`Delete`] removes of each column it names.
///
/// ```
/// use percolator::hbase::{Delete, DeleteType};
/// assert_eq!(DeleteType::default(), DeleteType::Columns);
/// for t in [DeleteType::Column, DeleteType::Columns, DeleteType::Family, DeleteType::FamilyVersion] {
///     assert_eq!(Delete::new("r").delete_type(t).delete_type, t);
/// }
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DeleteType {
    /// One version: the given timestamp, or the latest.
    Column,
    /// All versions at or below the timestamp (or now).
    #[default]
    Columns,
    /// The whole family at or below the timestamp (or now).
    Family,
    /// Every column of the family at exactly the timestamp.
    FamilyVersion,
}

/// A delete. With no columns it deletes the whole row.
///
/// ```
/// use percolator::hbase::{Delete, DeleteType, Durability};
/// let delete = Delete::new("r").column("f", "q").timestamp(5);
/// assert_eq!((delete.row.as_slice(), delete.columns.len()), (&b"r"[..], 1));
/// assert_eq!((delete.timestamp, delete.delete_type), (Some(5), DeleteType::Columns));
/// assert_eq!(delete.durability, Durability::UseDefault);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delete {
    pub row: Vec<u8>,
    pub columns: Vec<Column>,
    pub timestamp: Option<i64>,
    pub delete_type: DeleteType,
    pub durability: Durability,
}

impl Delete {
    /// A delete of the whole row until columns are added.
    ///
    /// ```
    /// use percolator::hbase::Delete;
    /// assert!(Delete::new("r").columns.is_empty());
    /// ```
    pub fn new(row: impl Into<Vec<u8>>) -> Self {
        Delete {
            row: row.into(),
            columns: Vec::new(),
            timestamp: None,
            delete_type: DeleteType::Columns,
            durability: Durability::UseDefault,
        }
    }

    /// Adds one column to delete.
    ///
    /// ```
    /// use percolator::hbase::{Column, Delete};
    /// assert_eq!(Delete::new("r").column("f", "q").columns, [Column::new("f", "q")]);
    /// ```
    pub fn column(mut self, family: impl Into<Vec<u8>>, qualifier: impl Into<Vec<u8>>) -> Self {
        self.columns.push(Column::new(family, qualifier));
        self
    }

    /// Adds one column at `timestamp`: with `DeleteType::Column`, just that version.
    ///
    /// ```
    /// use percolator::hbase::{Column, Delete};
    /// assert_eq!(Delete::new("r").column_at("f", "q", 3).columns, [Column::new("f", "q").at(3)]);
    /// ```
    pub fn column_at(
        mut self,
        family: impl Into<Vec<u8>>,
        qualifier: impl Into<Vec<u8>>,
        timestamp: i64,
    ) -> Self {
        self.columns
            .push(Column::new(family, qualifier).at(timestamp));
        self
    }

    /// Selects a whole family; meaningful with `DeleteType::Family` / `FamilyVersion`.
    ///
    /// ```
    /// use percolator::hbase::{Column, Delete};
    /// assert_eq!(Delete::new("r").family("f").columns, [Column::family("f")]);
    /// ```
    pub fn family(mut self, family: impl Into<Vec<u8>>) -> Self {
        self.columns.push(Column::family(family));
        self
    }

    /// A whole family at `timestamp`: what `DeleteType::FamilyVersion` needs (the gateway
    /// reads that type's timestamp from the column, not from the delete).
    ///
    /// ```
    /// use percolator::hbase::{Column, Delete};
    /// assert_eq!(Delete::new("r").family_at("f", 4).columns, [Column::family("f").at(4)]);
    /// ```
    pub fn family_at(mut self, family: impl Into<Vec<u8>>, timestamp: i64) -> Self {
        self.columns.push(Column::family(family).at(timestamp));
        self
    }

    /// The timestamp the delete type is measured against (default: now).
    ///
    /// ```
    /// use percolator::hbase::Delete;
    /// assert_eq!(Delete::new("r").timestamp(6).timestamp, Some(6));
    /// ```
    pub fn timestamp(mut self, ts: i64) -> Self {
        self.timestamp = Some(ts);
        self
    }

    /// ```
    /// use percolator::hbase::{Delete, DeleteType};
    /// assert_eq!(Delete::new("r").delete_type(DeleteType::Family).delete_type, DeleteType::Family);
    /// ```
    pub fn delete_type(mut self, delete_type: DeleteType) -> Self {
        self.delete_type = delete_type;
        self
    }
}
