//! Single-row atomic operations: checkAndMutate, row mutations, increments and appends.

use super::write::{Delete, Put};

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
