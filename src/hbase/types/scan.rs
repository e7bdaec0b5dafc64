//! The Scan builder.

use super::read::{Column, TimeRange};

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

    /// Every row whose key starts with `prefix` (HBase's `setRowPrefixFilter`).
    ///
    /// ```
    /// use percolator::hbase::Scan;
    /// let scan = Scan::prefix("ab");
    /// assert_eq!((scan.start_row, scan.stop_row), (b"ab".to_vec(), b"ac".to_vec()));
    /// assert_eq!(Scan::prefix([0x61, 0xff]).stop_row, b"b");
    /// assert!(Scan::prefix("").stop_row.is_empty());
    /// ```
    pub fn prefix(prefix: impl Into<Vec<u8>>) -> Self {
        let start = prefix.into();
        let stop = prefix_end(&start);
        Scan::range(start, stop)
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

/// The first row after every row that starts with `prefix` (empty: the end of the table).
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut stop = prefix.to_vec();
    while stop.last() == Some(&0xff) {
        stop.pop();
    }
    if let Some(last) = stop.last_mut() {
        *last += 1;
    }
    stop
}
