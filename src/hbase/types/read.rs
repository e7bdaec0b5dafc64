//! What reads build and return: cells, rows, column picks, time ranges and Gets.

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
