//! Typed HBase operations: what callers build, before any Thrift struct exists.
//!
//! Builders take `impl Into<Vec<u8>>` so callers can pass `&str`, `&[u8]` or owned bytes.
//! Conversions to and from the generated Thrift structs live in `convert.rs`.

/// One stored cell version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cell {
    pub family: Vec<u8>,
    pub qualifier: Vec<u8>,
    pub timestamp: i64,
    pub value: Vec<u8>,
}

/// The cells of one row, sorted by family, qualifier, then timestamp descending (HBase order).
/// A missing row is an empty result with an empty `row`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RowResult {
    pub row: Vec<u8>,
    pub cells: Vec<Cell>,
    /// Set when a scan's batch size split a wide row into several results.
    pub partial: bool,
}

impl RowResult {
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// All versions of one column, newest first.
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
    pub fn latest(&self, family: &[u8], qualifier: &[u8]) -> Option<&Cell> {
        self.cells
            .iter()
            .find(|c| c.family == family && c.qualifier == qualifier)
    }

    /// The newest value of one column.
    pub fn value(&self, family: &[u8], qualifier: &[u8]) -> Option<&[u8]> {
        self.latest(family, qualifier).map(|c| c.value.as_slice())
    }
}

/// A column selector: a whole family (`qualifier == None`) or one column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    pub family: Vec<u8>,
    pub qualifier: Option<Vec<u8>>,
    pub timestamp: Option<i64>,
}

impl Column {
    pub fn family(family: impl Into<Vec<u8>>) -> Self {
        Column {
            family: family.into(),
            qualifier: None,
            timestamp: None,
        }
    }

    pub fn new(family: impl Into<Vec<u8>>, qualifier: impl Into<Vec<u8>>) -> Self {
        Column {
            family: family.into(),
            qualifier: Some(qualifier.into()),
            timestamp: None,
        }
    }

    pub fn at(mut self, timestamp: i64) -> Self {
        self.timestamp = Some(timestamp);
        self
    }
}

/// `[min, max)`: the max is exclusive, as in HBase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeRange {
    pub min: i64,
    pub max: i64,
}

impl TimeRange {
    pub fn new(min: i64, max: i64) -> Self {
        TimeRange { min, max }
    }

    /// Everything at or below `ts`: `[0, ts + 1)`.
    pub fn up_to(ts: i64) -> Self {
        TimeRange {
            min: 0,
            max: ts.saturating_add(1),
        }
    }
}

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

    pub fn family(mut self, family: impl Into<Vec<u8>>) -> Self {
        self.columns.push(Column::family(family));
        self
    }

    pub fn column(mut self, family: impl Into<Vec<u8>>, qualifier: impl Into<Vec<u8>>) -> Self {
        self.columns.push(Column::new(family, qualifier));
        self
    }

    /// Only the version at exactly `ts` (overrides any time range, as in HBase).
    pub fn timestamp(mut self, ts: i64) -> Self {
        self.timestamp = Some(ts);
        self
    }

    pub fn time_range(mut self, range: TimeRange) -> Self {
        self.time_range = Some(range);
        self
    }

    pub fn max_versions(mut self, n: i32) -> Self {
        self.max_versions = Some(n);
        self
    }

    /// An HBase filter-language expression, e.g. `KeyOnlyFilter()`.
    pub fn filter(mut self, expr: impl Into<String>) -> Self {
        self.filter = Some(expr.into());
        self
    }
}

/// One cell of a put; `timestamp: None` falls back to the put's timestamp, then server time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PutCell {
    pub family: Vec<u8>,
    pub qualifier: Vec<u8>,
    pub value: Vec<u8>,
    pub timestamp: Option<i64>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Durability {
    #[default]
    UseDefault,
    SkipWal,
    AsyncWal,
    SyncWal,
    FsyncWal,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Put {
    pub row: Vec<u8>,
    pub cells: Vec<PutCell>,
    pub timestamp: Option<i64>,
    pub durability: Durability,
}

impl Put {
    pub fn new(row: impl Into<Vec<u8>>) -> Self {
        Put {
            row: row.into(),
            cells: Vec::new(),
            timestamp: None,
            durability: Durability::UseDefault,
        }
    }

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

    pub fn timestamp(mut self, ts: i64) -> Self {
        self.timestamp = Some(ts);
        self
    }

    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }
}

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
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delete {
    pub row: Vec<u8>,
    pub columns: Vec<Column>,
    pub timestamp: Option<i64>,
    pub delete_type: DeleteType,
    pub durability: Durability,
}

impl Delete {
    pub fn new(row: impl Into<Vec<u8>>) -> Self {
        Delete {
            row: row.into(),
            columns: Vec::new(),
            timestamp: None,
            delete_type: DeleteType::Columns,
            durability: Durability::UseDefault,
        }
    }

    pub fn column(mut self, family: impl Into<Vec<u8>>, qualifier: impl Into<Vec<u8>>) -> Self {
        self.columns.push(Column::new(family, qualifier));
        self
    }

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
    pub fn family(mut self, family: impl Into<Vec<u8>>) -> Self {
        self.columns.push(Column::family(family));
        self
    }

    /// A whole family at `timestamp`: what `DeleteType::FamilyVersion` needs (the gateway
    /// reads that type's timestamp from the column, not from the delete).
    pub fn family_at(mut self, family: impl Into<Vec<u8>>, timestamp: i64) -> Self {
        self.columns.push(Column::family(family).at(timestamp));
        self
    }

    pub fn timestamp(mut self, ts: i64) -> Self {
        self.timestamp = Some(ts);
        self
    }

    pub fn delete_type(mut self, delete_type: DeleteType) -> Self {
        self.delete_type = delete_type;
        self
    }
}

/// Comparison for check-and-mutate. HBase evaluates `value OP cell` (reversed from filters).
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

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mutation {
    Put(Put),
    Delete(Delete),
}

/// Several mutations applied atomically to one row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowMutations {
    pub row: Vec<u8>,
    pub mutations: Vec<Mutation>,
}

impl RowMutations {
    pub fn new(row: impl Into<Vec<u8>>) -> Self {
        RowMutations {
            row: row.into(),
            mutations: Vec::new(),
        }
    }

    pub fn put(mut self, put: Put) -> Self {
        self.mutations.push(Mutation::Put(put));
        self
    }

    pub fn delete(mut self, delete: Delete) -> Self {
        self.mutations.push(Mutation::Delete(delete));
        self
    }
}

/// Apply `mutations` iff `value OP cell(family:qualifier)` holds, atomically under the row lock.
/// An empty `value` matches an absent or empty cell.
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

    pub fn put(mut self, put: Put) -> Self {
        self.mutations.mutations.push(Mutation::Put(put));
        self
    }

    pub fn delete(mut self, delete: Delete) -> Self {
        self.mutations.mutations.push(Mutation::Delete(delete));
        self
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Increment {
    pub row: Vec<u8>,
    /// (family, qualifier, amount)
    pub columns: Vec<(Vec<u8>, Vec<u8>, i64)>,
    pub return_results: bool,
}

impl Increment {
    pub fn new(row: impl Into<Vec<u8>>) -> Self {
        Increment {
            row: row.into(),
            columns: Vec::new(),
            return_results: true,
        }
    }

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

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Append {
    pub row: Vec<u8>,
    /// (family, qualifier, suffix)
    pub columns: Vec<(Vec<u8>, Vec<u8>, Vec<u8>)>,
    pub return_results: bool,
}

impl Append {
    pub fn new(row: impl Into<Vec<u8>>) -> Self {
        Append {
            row: row.into(),
            columns: Vec::new(),
            return_results: true,
        }
    }

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
    pub fn new() -> Self {
        Scan::default()
    }

    pub fn range(start: impl Into<Vec<u8>>, stop: impl Into<Vec<u8>>) -> Self {
        Scan {
            start_row: start.into(),
            stop_row: stop.into(),
            ..Scan::default()
        }
    }

    pub fn family(mut self, family: impl Into<Vec<u8>>) -> Self {
        self.columns.push(Column::family(family));
        self
    }

    pub fn column(mut self, family: impl Into<Vec<u8>>, qualifier: impl Into<Vec<u8>>) -> Self {
        self.columns.push(Column::new(family, qualifier));
        self
    }

    pub fn caching(mut self, rows: i32) -> Self {
        self.caching = Some(rows);
        self
    }

    pub fn max_versions(mut self, n: i32) -> Self {
        self.max_versions = Some(n);
        self
    }

    pub fn time_range(mut self, range: TimeRange) -> Self {
        self.time_range = Some(range);
        self
    }

    pub fn filter(mut self, expr: impl Into<String>) -> Self {
        self.filter = Some(expr.into());
        self
    }

    pub fn batch_size(mut self, cells: i32) -> Self {
        self.batch_size = Some(cells);
        self
    }

    pub fn reversed(mut self, reversed: bool) -> Self {
        self.reversed = reversed;
        self
    }

    pub fn limit(mut self, rows: i32) -> Self {
        self.limit = Some(rows);
        self
    }
}

/// Column family settings; `None` leaves HBase's default (note: VERSIONS defaults to 1).
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
    pub fn new(name: impl Into<Vec<u8>>) -> Self {
        FamilyDescriptor {
            name: name.into(),
            ..FamilyDescriptor::default()
        }
    }

    pub fn max_versions(mut self, n: i32) -> Self {
        self.max_versions = Some(n);
        self
    }

    pub fn min_versions(mut self, n: i32) -> Self {
        self.min_versions = Some(n);
        self
    }

    pub fn ttl_secs(mut self, secs: i32) -> Self {
        self.ttl_secs = Some(secs);
        self
    }

    pub fn in_memory(mut self, yes: bool) -> Self {
        self.in_memory = Some(yes);
        self
    }
}

/// A table: `name` is `"ns:qualifier"` or a bare qualifier in the `default` namespace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableDescriptor {
    pub name: String,
    pub families: Vec<FamilyDescriptor>,
}

impl TableDescriptor {
    pub fn new(name: impl Into<String>) -> Self {
        TableDescriptor {
            name: name.into(),
            families: Vec::new(),
        }
    }

    pub fn family(mut self, family: FamilyDescriptor) -> Self {
        self.families.push(family);
        self
    }
}
