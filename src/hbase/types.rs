//! Typed HBase operations: what callers build, before any Thrift struct exists.
//!
//! Builders take `impl Into<Vec<u8>>` so callers can pass `&str`, `&[u8]` or owned bytes.
//! Conversions to and from the generated Thrift structs live in `convert.rs`.

/// One stored cell version.
///
/// ```
/// use percolator::hbase::Cell;
/// let cell = Cell { family: b"f".to_vec(), qualifier: b"q".to_vec(), timestamp: 7, value: b"v".to_vec() };
/// assert_eq!((&cell.family[..], &cell.qualifier[..]), (&b"f"[..], &b"q"[..]));
/// assert_eq!((cell.timestamp, &cell.value[..]), (7, &b"v"[..]));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cell {
    pub family: Vec<u8>,
    pub qualifier: Vec<u8>,
    pub timestamp: i64,
    pub value: Vec<u8>,
}

/// The cells of one row, sorted by family, qualifier, then timestamp descending (HBase order).
/// A missing row is an empty result with an empty `row`.
///
/// ```
/// use percolator::hbase::{Cell, RowResult};
/// let cell = Cell { family: b"f".to_vec(), qualifier: b"q".to_vec(), timestamp: 1, value: b"v".to_vec() };
/// let row = RowResult { row: b"r".to_vec(), cells: vec![cell], partial: false };
/// assert_eq!(row.row, b"r");
/// assert_eq!(row.cells.len(), 1);
/// assert!(!row.partial);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RowResult {
    pub row: Vec<u8>,
    pub cells: Vec<Cell>,
    /// Set when a scan's batch size split a wide row into several results.
    pub partial: bool,
}

impl RowResult {
    /// Whether the row has no cells (a missing row reads as empty).
    ///
    /// ```
    /// use percolator::hbase::RowResult;
    /// assert!(RowResult::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// All versions of one column, newest first.
    ///
    /// ```
    /// # use percolator::hbase::{Cell, RowResult};
    /// # let cell = |q: &str, ts, v: &str| Cell { family: b"f".to_vec(), qualifier: q.as_bytes().to_vec(), timestamp: ts, value: v.as_bytes().to_vec() };
    /// # let row = RowResult { row: b"r".to_vec(), cells: vec![cell("q", 2, "new"), cell("q", 1, "old")], partial: false };
    /// let values: Vec<_> = row.versions(b"f", b"q").map(|c| c.timestamp).collect();
    /// assert_eq!(values, [2, 1]);
    /// ```
    pub fn versions<'a>(
        &'a self,
        family: &'a [u8],
        qualifier: &'a [u8],
    ) -> impl Iterator<Item = &'a Cell> + 'a {
        self.cells
            .iter()
            .filter(move |c| c.family == family && c.qualifier == qualifier)
    }

    /// The newest version of one column.
    ///
    /// ```
    /// # use percolator::hbase::{Cell, RowResult};
    /// # let cell = |q: &str, ts, v: &str| Cell { family: b"f".to_vec(), qualifier: q.as_bytes().to_vec(), timestamp: ts, value: v.as_bytes().to_vec() };
    /// # let row = RowResult { row: b"r".to_vec(), cells: vec![cell("q", 2, "new"), cell("q", 1, "old")], partial: false };
    /// assert_eq!(row.latest(b"f", b"q").map(|c| c.timestamp), Some(2));
    /// assert!(row.latest(b"f", b"other").is_none());
    /// ```
    pub fn latest(&self, family: &[u8], qualifier: &[u8]) -> Option<&Cell> {
        self.cells
            .iter()
            .find(|c| c.family == family && c.qualifier == qualifier)
    }

    /// The newest value of one column.
    ///
    /// ```
    /// # use percolator::hbase::{Cell, RowResult};
    /// # let cell = |q: &str, ts, v: &str| Cell { family: b"f".to_vec(), qualifier: q.as_bytes().to_vec(), timestamp: ts, value: v.as_bytes().to_vec() };
    /// # let row = RowResult { row: b"r".to_vec(), cells: vec![cell("q", 2, "new"), cell("q", 1, "old")], partial: false };
    /// assert_eq!(row.value(b"f", b"q"), Some(&b"new"[..]));
    /// ```
    pub fn value(&self, family: &[u8], qualifier: &[u8]) -> Option<&[u8]> {
        self.latest(family, qualifier).map(|c| c.value.as_slice())
    }
}

/// A column selector: a whole family (`qualifier == None`) or one column.
///
/// ```
/// use percolator::hbase::Column;
/// let column = Column::new("f", "q").at(5);
/// assert_eq!(column.family, b"f");
/// assert_eq!(column.qualifier.as_deref(), Some(&b"q"[..]));
/// assert_eq!(column.timestamp, Some(5));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    pub family: Vec<u8>,
    pub qualifier: Option<Vec<u8>>,
    pub timestamp: Option<i64>,
}

impl Column {
    /// Selects every column of `family`.
    ///
    /// ```
    /// use percolator::hbase::Column;
    /// let column = Column::family("f");
    /// assert_eq!((column.family, column.qualifier), (b"f".to_vec(), None));
    /// ```
    pub fn family(family: impl Into<Vec<u8>>) -> Self {
        Column {
            family: family.into(),
            qualifier: None,
            timestamp: None,
        }
    }

    /// Selects the single column `family:qualifier`.
    ///
    /// ```
    /// use percolator::hbase::Column;
    /// assert_eq!(Column::new("f", "q").qualifier, Some(b"q".to_vec()));
    /// ```
    pub fn new(family: impl Into<Vec<u8>>, qualifier: impl Into<Vec<u8>>) -> Self {
        Column {
            family: family.into(),
            qualifier: Some(qualifier.into()),
            timestamp: None,
        }
    }

    /// Pins the selector to one timestamp (used by deletes of a single version).
    ///
    /// ```
    /// use percolator::hbase::Column;
    /// assert_eq!(Column::new("f", "q").at(9).timestamp, Some(9));
    /// ```
    pub fn at(mut self, timestamp: i64) -> Self {
        self.timestamp = Some(timestamp);
        self
    }
}

/// `[min, max)`: the max is exclusive, as in HBase.
///
/// ```
/// use percolator::hbase::TimeRange;
/// let range = TimeRange::new(10, 20);
/// assert_eq!((range.min, range.max), (10, 20));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeRange {
    pub min: i64,
    pub max: i64,
}

impl TimeRange {
    /// The versions with `min <= timestamp < max`.
    ///
    /// ```
    /// use percolator::hbase::TimeRange;
    /// assert_eq!(TimeRange::new(1, 5), TimeRange { min: 1, max: 5 });
    /// ```
    pub fn new(min: i64, max: i64) -> Self {
        TimeRange { min, max }
    }

    /// Everything at or below `ts`: `[0, ts + 1)`.
    ///
    /// ```
    /// use percolator::hbase::TimeRange;
    /// assert_eq!(TimeRange::up_to(7), TimeRange::new(0, 8));
    /// assert_eq!(TimeRange::up_to(i64::MAX).max, i64::MAX);
    /// ```
    pub fn up_to(ts: i64) -> Self {
        TimeRange {
            min: 0,
            max: ts.saturating_add(1),
        }
    }
}

/// A read of one row: which columns, which versions, and an optional server-side filter.
/// With no columns it reads every family.
///
/// ```
/// use percolator::hbase::{Get, TimeRange};
/// let get = Get::new("r").column("f", "q").time_range(TimeRange::up_to(9)).max_versions(2);
/// assert_eq!(get.row, b"r");
/// assert_eq!(get.columns.len(), 1);
/// assert_eq!((get.timestamp, get.time_range), (None, Some(TimeRange::new(0, 10))));
/// assert_eq!((get.max_versions, get.filter), (Some(2), None));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Get {
    pub row: Vec<u8>,
    pub columns: Vec<Column>,
    pub timestamp: Option<i64>,
    pub time_range: Option<TimeRange>,
    pub max_versions: Option<i32>,
    pub filter: Option<String>,
}

impl Get {
    /// A get of every column of `row`, latest version only.
    ///
    /// ```
    /// use percolator::hbase::Get;
    /// let get = Get::new("r");
    /// assert!(get.columns.is_empty() && get.max_versions.is_none());
    /// ```
    pub fn new(row: impl Into<Vec<u8>>) -> Self {
        Get {
            row: row.into(),
            columns: Vec::new(),
            timestamp: None,
            time_range: None,
            max_versions: None,
            filter: None,
        }
    }

    /// Adds a whole family to the columns read.
    ///
    /// ```
    /// use percolator::hbase::{Column, Get};
    /// assert_eq!(Get::new("r").family("f").columns, [Column::family("f")]);
    /// ```
    pub fn family(mut self, family: impl Into<Vec<u8>>) -> Self {
        self.columns.push(Column::family(family));
        self
    }

    /// Adds one column to the columns read.
    ///
    /// ```
    /// use percolator::hbase::{Column, Get};
    /// assert_eq!(Get::new("r").column("f", "q").columns, [Column::new("f", "q")]);
    /// ```
    pub fn column(mut self, family: impl Into<Vec<u8>>, qualifier: impl Into<Vec<u8>>) -> Self {
        self.columns.push(Column::new(family, qualifier));
        self
    }

    /// Only the version at exactly `ts` (overrides any time range, as in HBase).
    ///
    /// ```
    /// use percolator::hbase::Get;
    /// assert_eq!(Get::new("r").timestamp(5).timestamp, Some(5));
    /// ```
    pub fn timestamp(mut self, ts: i64) -> Self {
        self.timestamp = Some(ts);
        self
    }

    /// Only versions inside `range`.
    ///
    /// ```
    /// use percolator::hbase::{Get, TimeRange};
    /// assert_eq!(Get::new("r").time_range(TimeRange::new(1, 3)).time_range, Some(TimeRange::new(1, 3)));
    /// ```
    pub fn time_range(mut self, range: TimeRange) -> Self {
        self.time_range = Some(range);
        self
    }

    /// Up to `n` versions per column, newest first (HBase returns 1 by default).
    ///
    /// ```
    /// use percolator::hbase::Get;
    /// assert_eq!(Get::new("r").max_versions(3).max_versions, Some(3));
    /// ```
    pub fn max_versions(mut self, n: i32) -> Self {
        self.max_versions = Some(n);
        self
    }

    /// An HBase filter-language expression, e.g. `KeyOnlyFilter()`.
    ///
    /// ```
    /// use percolator::hbase::Get;
    /// assert_eq!(Get::new("r").filter("KeyOnlyFilter()").filter.as_deref(), Some("KeyOnlyFilter()"));
    /// ```
    pub fn filter(mut self, expr: impl Into<String>) -> Self {
        self.filter = Some(expr.into());
        self
    }
}

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

/// Comparison for check-and-mutate. HBase evaluates `value OP cell` (reversed from filters).
///
/// ```
/// use percolator::hbase::{CheckAndMutate, CompareOp};
/// let ops = [CompareOp::Less, CompareOp::LessOrEqual, CompareOp::Equal, CompareOp::NotEqual,
///     CompareOp::GreaterOrEqual, CompareOp::Greater, CompareOp::NoOp];
/// for op in ops {
///     assert_eq!(CheckAndMutate::new("r", "f", "q", op, "v").op, op);
/// }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompareOp {
    Less,
    LessOrEqual,
    Equal,
    NotEqual,
    GreaterOrEqual,
    Greater,
    NoOp,
}

/// One step of a [`RowMutations`]: a put or a delete.
///
/// ```
/// use percolator::hbase::{Delete, Mutation, Put, RowMutations};
/// let m = RowMutations::new("r").put(Put::new("r")).delete(Delete::new("r"));
/// assert!(matches!(m.mutations[..], [Mutation::Put(_), Mutation::Delete(_)]));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mutation {
    Put(Put),
    Delete(Delete),
}

/// Several mutations applied atomically to one row.
///
/// ```
/// use percolator::hbase::{Put, RowMutations};
/// let m = RowMutations::new("r").put(Put::new("r").add("f", "q", "v"));
/// assert_eq!((m.row.as_slice(), m.mutations.len()), (&b"r"[..], 1));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowMutations {
    pub row: Vec<u8>,
    pub mutations: Vec<Mutation>,
}

impl RowMutations {
    /// No mutations yet; each one added must be for the same `row`.
    ///
    /// ```
    /// use percolator::hbase::RowMutations;
    /// assert!(RowMutations::new("r").mutations.is_empty());
    /// ```
    pub fn new(row: impl Into<Vec<u8>>) -> Self {
        RowMutations {
            row: row.into(),
            mutations: Vec::new(),
        }
    }

    /// Appends a put.
    ///
    /// ```
    /// use percolator::hbase::{Mutation, Put, RowMutations};
    /// let put = Put::new("r").add("f", "q", "v");
    /// assert_eq!(RowMutations::new("r").put(put.clone()).mutations, [Mutation::Put(put)]);
    /// ```
    pub fn put(mut self, put: Put) -> Self {
        self.mutations.push(Mutation::Put(put));
        self
    }

    /// Appends a delete.
    ///
    /// ```
    /// use percolator::hbase::{Delete, Mutation, RowMutations};
    /// let del = Delete::new("r").column("f", "q");
    /// assert_eq!(RowMutations::new("r").delete(del.clone()).mutations, [Mutation::Delete(del)]);
    /// ```
    pub fn delete(mut self, delete: Delete) -> Self {
        self.mutations.push(Mutation::Delete(delete));
        self
    }
}

/// Apply `mutations` iff `value OP cell(family:qualifier)` holds, atomically under the row lock.
/// An empty `value` matches an absent or empty cell.
///
/// ```
/// use percolator::hbase::{CheckAndMutate, CompareOp, Put};
/// let cam = CheckAndMutate::new("r", "f", "lock", CompareOp::Equal, "")
///     .put(Put::new("r").add("f", "lock", "me"));
/// assert_eq!((cam.row.as_slice(), cam.family.as_slice()), (&b"r"[..], &b"f"[..]));
/// assert_eq!((cam.qualifier.as_slice(), cam.value.as_slice()), (&b"lock"[..], &b""[..]));
/// assert_eq!((cam.op, cam.mutations.mutations.len()), (CompareOp::Equal, 1));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckAndMutate {
    pub row: Vec<u8>,
    pub family: Vec<u8>,
    pub qualifier: Vec<u8>,
    pub op: CompareOp,
    pub value: Vec<u8>,
    pub mutations: RowMutations,
}

impl CheckAndMutate {
    /// The condition, with no mutations yet.
    ///
    /// ```
    /// use percolator::hbase::{CheckAndMutate, CompareOp};
    /// let cam = CheckAndMutate::new("r", "f", "q", CompareOp::NotEqual, "v");
    /// assert_eq!(cam.mutations.row, b"r");
    /// assert!(cam.mutations.mutations.is_empty());
    /// ```
    pub fn new(
        row: impl Into<Vec<u8>>,
        family: impl Into<Vec<u8>>,
        qualifier: impl Into<Vec<u8>>,
        op: CompareOp,
        value: impl Into<Vec<u8>>,
    ) -> Self {
        let row = row.into();
        CheckAndMutate {
            mutations: RowMutations::new(row.clone()),
            row,
            family: family.into(),
            qualifier: qualifier.into(),
            op,
            value: value.into(),
        }
    }

    /// Adds a put to apply when the condition holds.
    ///
    /// ```
    /// use percolator::hbase::{CheckAndMutate, CompareOp, Mutation, Put};
    /// let put = Put::new("r").add("f", "q", "v");
    /// let cam = CheckAndMutate::new("r", "f", "q", CompareOp::Equal, "").put(put.clone());
    /// assert_eq!(cam.mutations.mutations, [Mutation::Put(put)]);
    /// ```
    pub fn put(mut self, put: Put) -> Self {
        self.mutations.mutations.push(Mutation::Put(put));
        self
    }

    /// Adds a delete to apply when the condition holds.
    ///
    /// ```
    /// use percolator::hbase::{CheckAndMutate, CompareOp, Delete, Mutation};
    /// let del = Delete::new("r").column("f", "q");
    /// let cam = CheckAndMutate::new("r", "f", "q", CompareOp::Equal, "v").delete(del.clone());
    /// assert_eq!(cam.mutations.mutations, [Mutation::Delete(del)]);
    /// ```
    pub fn delete(mut self, delete: Delete) -> Self {
        self.mutations.mutations.push(Mutation::Delete(delete));
        self
    }
}

/// Atomic additions to 8-byte big-endian counters of one row.
///
/// ```
/// use percolator::hbase::Increment;
/// let inc = Increment::new("r").add("f", "hits", 2);
/// assert_eq!(inc.row, b"r");
/// assert_eq!(inc.columns, [(b"f".to_vec(), b"hits".to_vec(), 2)]);
/// assert!(inc.return_results);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Increment {
    pub row: Vec<u8>,
    /// (family, qualifier, amount)
    pub columns: Vec<(Vec<u8>, Vec<u8>, i64)>,
    pub return_results: bool,
}

impl Increment {
    /// No columns yet; the new values are returned by default.
    ///
    /// ```
    /// use percolator::hbase::Increment;
    /// let inc = Increment::new("r");
    /// assert!(inc.columns.is_empty() && inc.return_results);
    /// ```
    pub fn new(row: impl Into<Vec<u8>>) -> Self {
        Increment {
            row: row.into(),
            columns: Vec::new(),
            return_results: true,
        }
    }

    /// Adds `amount` (may be negative) to one column.
    ///
    /// ```
    /// use percolator::hbase::Increment;
    /// assert_eq!(Increment::new("r").add("f", "q", -1).columns[0].2, -1);
    /// ```
    pub fn add(
        mut self,
        family: impl Into<Vec<u8>>,
        qualifier: impl Into<Vec<u8>>,
        amount: i64,
    ) -> Self {
        self.columns.push((family.into(), qualifier.into(), amount));
        self
    }
}

/// Atomic byte-suffix appends to columns of one row.
///
/// ```
/// use percolator::hbase::Append;
/// let app = Append::new("r").add("f", "log", "x");
/// assert_eq!(app.row, b"r");
/// assert_eq!(app.columns, [(b"f".to_vec(), b"log".to_vec(), b"x".to_vec())]);
/// assert!(app.return_results);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Append {
    pub row: Vec<u8>,
    /// (family, qualifier, suffix)
    pub columns: Vec<(Vec<u8>, Vec<u8>, Vec<u8>)>,
    pub return_results: bool,
}

impl Append {
    /// No columns yet; the new values are returned by default.
    ///
    /// ```
    /// use percolator::hbase::Append;
    /// let app = Append::new("r");
    /// assert!(app.columns.is_empty() && app.return_results);
    /// ```
    pub fn new(row: impl Into<Vec<u8>>) -> Self {
        Append {
            row: row.into(),
            columns: Vec::new(),
            return_results: true,
        }
    }

    /// Appends `suffix` to one column's value.
    ///
    /// ```
    /// use percolator::hbase::Append;
    /// assert_eq!(Append::new("r").add("f", "q", "!").columns[0].2, b"!");
    /// ```
    pub fn add(
        mut self,
        family: impl Into<Vec<u8>>,
        qualifier: impl Into<Vec<u8>>,
        suffix: impl Into<Vec<u8>>,
    ) -> Self {
        self.columns
            .push((family.into(), qualifier.into(), suffix.into()));
        self
    }
}

/// A read of a range of rows, for [`HBaseClient::scan`](crate::HBaseClient::scan) and friends.
///
/// ```
/// use percolator::hbase::{Scan, TimeRange};
/// let scan = Scan::range("a", "m").family("f").caching(50).max_versions(2)
///     .time_range(TimeRange::up_to(9)).filter("KeyOnlyFilter()").batch_size(10)
///     .reversed(false).limit(5);
/// assert_eq!((scan.start_row.as_slice(), scan.stop_row.as_slice()), (&b"a"[..], &b"m"[..]));
/// assert_eq!((scan.columns.len(), scan.caching, scan.max_versions), (1, Some(50), Some(2)));
/// assert_eq!(scan.time_range, Some(TimeRange::new(0, 10)));
/// assert_eq!(scan.filter.as_deref(), Some("KeyOnlyFilter()"));
/// assert_eq!((scan.batch_size, scan.reversed, scan.limit), (Some(10), false, Some(5)));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scan {
    /// Inclusive; empty = from the first row.
    pub start_row: Vec<u8>,
    /// Exclusive; empty = to the last row.
    pub stop_row: Vec<u8>,
    pub columns: Vec<Column>,
    /// Rows per round trip (getScannerRows page size).
    pub caching: Option<i32>,
    pub max_versions: Option<i32>,
    pub time_range: Option<TimeRange>,
    pub filter: Option<String>,
    /// Split wide rows into partial results of at most this many cells.
    pub batch_size: Option<i32>,
    pub reversed: bool,
    /// At most this many rows in all.
    pub limit: Option<i32>,
}

impl Scan {
    /// A scan of the whole table.
    ///
    /// ```
    /// use percolator::hbase::Scan;
    /// let scan = Scan::new();
    /// assert!(scan.start_row.is_empty() && scan.stop_row.is_empty());
    /// ```
    pub fn new() -> Self {
        Scan::default()
    }

    /// Rows from `start` (inclusive) to `stop` (exclusive).
    ///
    /// ```
    /// use percolator::hbase::Scan;
    /// assert_eq!(Scan::range("a", "b").stop_row, b"b");
    /// ```
    pub fn range(start: impl Into<Vec<u8>>, stop: impl Into<Vec<u8>>) -> Self {
        Scan {
            start_row: start.into(),
            stop_row: stop.into(),
            ..Scan::default()
        }
    }

    /// Adds a whole family to the columns read.
    ///
    /// ```
    /// use percolator::hbase::{Column, Scan};
    /// assert_eq!(Scan::new().family("f").columns, [Column::family("f")]);
    /// ```
    pub fn family(mut self, family: impl Into<Vec<u8>>) -> Self {
        self.columns.push(Column::family(family));
        self
    }

    /// Adds one column to the columns read.
    ///
    /// ```
    /// use percolator::hbase::{Column, Scan};
    /// assert_eq!(Scan::new().column("f", "q").columns, [Column::new("f", "q")]);
    /// ```
    pub fn column(mut self, family: impl Into<Vec<u8>>, qualifier: impl Into<Vec<u8>>) -> Self {
        self.columns.push(Column::new(family, qualifier));
        self
    }

    /// Rows fetched per round trip.
    ///
    /// ```
    /// use percolator::hbase::Scan;
    /// assert_eq!(Scan::new().caching(500).caching, Some(500));
    /// ```
    pub fn caching(mut self, rows: i32) -> Self {
        self.caching = Some(rows);
        self
    }

    /// Up to `n` versions per column.
    ///
    /// ```
    /// use percolator::hbase::Scan;
    /// assert_eq!(Scan::new().max_versions(3).max_versions, Some(3));
    /// ```
    pub fn max_versions(mut self, n: i32) -> Self {
        self.max_versions = Some(n);
        self
    }

    /// Only versions inside `range`.
    ///
    /// ```
    /// use percolator::hbase::{Scan, TimeRange};
    /// assert_eq!(Scan::new().time_range(TimeRange::new(1, 2)).time_range, Some(TimeRange::new(1, 2)));
    /// ```
    pub fn time_range(mut self, range: TimeRange) -> Self {
        self.time_range = Some(range);
        self
    }

    /// An HBase filter-language expression, e.g. `PrefixFilter('user')`.
    ///
    /// ```
    /// use percolator::hbase::Scan;
    /// assert_eq!(Scan::new().filter("FirstKeyOnlyFilter()").filter.as_deref(), Some("FirstKeyOnlyFilter()"));
    /// ```
    pub fn filter(mut self, expr: impl Into<String>) -> Self {
        self.filter = Some(expr.into());
        self
    }

    /// At most `cells` cells per result; wider rows come back as partial results.
    ///
    /// ```
    /// use percolator::hbase::Scan;
    /// assert_eq!(Scan::new().batch_size(100).batch_size, Some(100));
    /// ```
    pub fn batch_size(mut self, cells: i32) -> Self {
        self.batch_size = Some(cells);
        self
    }

    /// Scan from the highest row down; `start` is then the high end.
    ///
    /// ```
    /// use percolator::hbase::Scan;
    /// assert!(Scan::new().reversed(true).reversed);
    /// ```
    pub fn reversed(mut self, reversed: bool) -> Self {
        self.reversed = reversed;
        self
    }

    /// Stop after `rows` complete rows.
    ///
    /// ```
    /// use percolator::hbase::Scan;
    /// assert_eq!(Scan::new().limit(10).limit, Some(10));
    /// ```
    pub fn limit(mut self, rows: i32) -> Self {
        self.limit = Some(rows);
        self
    }
}

/// Column family settings; `None` leaves HBase's default (note: VERSIONS defaults to 1).
///
/// ```
/// use percolator::hbase::FamilyDescriptor;
/// let family = FamilyDescriptor::new("f").max_versions(3).min_versions(1).ttl_secs(60).in_memory(true);
/// assert_eq!(family.name, b"f");
/// assert_eq!((family.max_versions, family.min_versions), (Some(3), Some(1)));
/// assert_eq!((family.ttl_secs, family.in_memory), (Some(60), Some(true)));
/// assert_eq!(family.keep_deleted_cells, None);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FamilyDescriptor {
    pub name: Vec<u8>,
    pub max_versions: Option<i32>,
    pub min_versions: Option<i32>,
    /// Seconds, measured against cell timestamps read as epoch milliseconds.
    pub ttl_secs: Option<i32>,
    pub in_memory: Option<bool>,
    pub keep_deleted_cells: Option<bool>,
}

impl FamilyDescriptor {
    /// A family with every setting left to HBase.
    ///
    /// ```
    /// use percolator::hbase::FamilyDescriptor;
    /// assert_eq!(FamilyDescriptor::new("f").max_versions, None);
    /// ```
    pub fn new(name: impl Into<Vec<u8>>) -> Self {
        FamilyDescriptor {
            name: name.into(),
            ..FamilyDescriptor::default()
        }
    }

    /// Versions kept per column.
    ///
    /// ```
    /// use percolator::hbase::FamilyDescriptor;
    /// assert_eq!(FamilyDescriptor::new("f").max_versions(5).max_versions, Some(5));
    /// ```
    pub fn max_versions(mut self, n: i32) -> Self {
        self.max_versions = Some(n);
        self
    }

    /// Versions kept even past the TTL.
    ///
    /// ```
    /// use percolator::hbase::FamilyDescriptor;
    /// assert_eq!(FamilyDescriptor::new("f").min_versions(1).min_versions, Some(1));
    /// ```
    pub fn min_versions(mut self, n: i32) -> Self {
        self.min_versions = Some(n);
        self
    }

    /// Cells older than `secs` expire.
    ///
    /// ```
    /// use percolator::hbase::FamilyDescriptor;
    /// assert_eq!(FamilyDescriptor::new("f").ttl_secs(3600).ttl_secs, Some(3600));
    /// ```
    pub fn ttl_secs(mut self, secs: i32) -> Self {
        self.ttl_secs = Some(secs);
        self
    }

    /// Whether the region server favours this family in its block cache.
    ///
    /// ```
    /// use percolator::hbase::FamilyDescriptor;
    /// assert_eq!(FamilyDescriptor::new("f").in_memory(true).in_memory, Some(true));
    /// ```
    pub fn in_memory(mut self, yes: bool) -> Self {
        self.in_memory = Some(yes);
        self
    }
}

/// A table: `name` is `"ns:qualifier"` or a bare qualifier in the `default` namespace.
///
/// ```
/// use percolator::hbase::{FamilyDescriptor, TableDescriptor};
/// let table = TableDescriptor::new("ns:t").family(FamilyDescriptor::new("f"));
/// assert_eq!(table.name, "ns:t");
/// assert_eq!(table.families, [FamilyDescriptor::new("f")]);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableDescriptor {
    pub name: String,
    pub families: Vec<FamilyDescriptor>,
}

impl TableDescriptor {
    /// A table with no families yet (HBase needs at least one).
    ///
    /// ```
    /// use percolator::hbase::TableDescriptor;
    /// assert!(TableDescriptor::new("t").families.is_empty());
    /// ```
    pub fn new(name: impl Into<String>) -> Self {
        TableDescriptor {
            name: name.into(),
            families: Vec::new(),
        }
    }

    /// Adds a column family.
    ///
    /// ```
    /// use percolator::hbase::{FamilyDescriptor, TableDescriptor};
    /// let table = TableDescriptor::new("t").family(FamilyDescriptor::new("a")).family(FamilyDescriptor::new("b"));
    /// assert_eq!(table.families.len(), 2);
    /// ```
    pub fn family(mut self, family: FamilyDescriptor) -> Self {
        self.families.push(family);
        self
    }
}
