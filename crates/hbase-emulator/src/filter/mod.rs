//! Server-side filters from TGet/TScan `filterString`.
//!
//! Each filter is evaluated on a whole row at a time: it keeps a subset of the row's cells and
//! may reject the row. AND passes to each operand only what the operands before it kept; OR
//! keeps the union of what its passing operands keep. Comparisons follow `CompareFilter`: a
//! cell passes when `cell OP value` (the natural direction, unlike checkAndMutate).

mod parse;
#[cfg(test)]
mod tests;

use std::cmp::Ordering;
use std::collections::BTreeSet;

use crate::cell::Cell;
use crate::error::{ServerError, ServerResult};

/// Scan-wide filter state carried from row to row.
#[derive(Debug, Default)]
pub struct FilterState {
    /// The scan runs in descending row order (InclusiveStopFilter looks the other way).
    pub reversed: bool,
    /// A WHILE or InclusiveStopFilter ended the scan.
    pub done: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompareOp {
    Less,
    LessOrEqual,
    Equal,
    NotEqual,
    GreaterOrEqual,
    Greater,
}

impl CompareOp {
    /// Whether `left OP right` holds, given `left.cmp(right)`.
    pub fn holds(self, ord: Ordering) -> bool {
        match self {
            CompareOp::Less => ord == Ordering::Less,
            CompareOp::LessOrEqual => ord != Ordering::Greater,
            CompareOp::Equal => ord == Ordering::Equal,
            CompareOp::NotEqual => ord != Ordering::Equal,
            CompareOp::GreaterOrEqual => ord != Ordering::Less,
            CompareOp::Greater => ord == Ordering::Greater,
        }
    }
}

#[derive(Clone, Debug)]
pub enum Comparator {
    Binary(Vec<u8>),
    /// Compares only the first `len(value)` bytes of the cell.
    BinaryPrefix(Vec<u8>),
    /// Case-insensitive containment; the stored needle is lower-cased.
    Substring(String),
    /// Java-style `find()` with DOTALL.
    Regex(regex::bytes::Regex),
}

impl Comparator {
    fn substring(needle: &[u8]) -> Self {
        Comparator::Substring(String::from_utf8_lossy(needle).to_lowercase())
    }

    fn regex(pattern: &[u8]) -> ServerResult<Self> {
        let pattern = std::str::from_utf8(pattern)
            .map_err(|_| ServerError::internal("regexstring pattern is not valid UTF-8"))?;
        // Byte-wise matching first (Java decodes cells as ISO-8859-1); patterns with non-ASCII
        // literals need Unicode mode.
        let built = regex::bytes::RegexBuilder::new(pattern)
            .unicode(false)
            .dot_matches_new_line(true)
            .build()
            .or_else(|_| {
                regex::bytes::RegexBuilder::new(pattern)
                    .dot_matches_new_line(true)
                    .build()
            })
            .map_err(|e| ServerError::internal(format!("Invalid regexstring pattern: {e}")))?;
        Ok(Comparator::Regex(built))
    }

    /// Whether `cell OP comparator-value` holds.
    fn matches(&self, op: CompareOp, cell: &[u8]) -> bool {
        let ord = match self {
            Comparator::Binary(v) => cell.cmp(v.as_slice()),
            Comparator::BinaryPrefix(v) => cell[..cell.len().min(v.len())].cmp(v.as_slice()),
            Comparator::Substring(needle) => found(
                String::from_utf8_lossy(cell)
                    .to_lowercase()
                    .contains(needle.as_str()),
            ),
            Comparator::Regex(re) => found(re.is_match(cell)),
        };
        op.holds(ord)
    }
}

/// Substring and regex comparators report a match as "equal" and a miss as "not equal".
fn found(hit: bool) -> Ordering {
    if hit {
        Ordering::Equal
    } else {
        Ordering::Greater
    }
}

#[derive(Clone, Debug)]
enum Leaf {
    KeyOnly {
        len_as_value: bool,
    },
    FirstKeyOnly,
    Prefix(Vec<u8>),
    ColumnPrefix(Vec<u8>),
    MultipleColumnPrefix(Vec<Vec<u8>>),
    InclusiveStop(Vec<u8>),
    Timestamps(BTreeSet<i64>),
    Row(CompareOp, Comparator),
    Family(CompareOp, Comparator),
    Qualifier(CompareOp, Comparator),
    Value(CompareOp, Comparator),
    SingleColumnValue {
        family: Vec<u8>,
        qualifier: Vec<u8>,
        op: CompareOp,
        comparator: Comparator,
        filter_if_missing: bool,
        latest_only: bool,
        /// SingleColumnValueExcludeFilter: the tested column is not returned.
        exclude: bool,
    },
    ColumnRange {
        min: Option<(Vec<u8>, bool)>,
        max: Option<(Vec<u8>, bool)>,
    },
}

#[derive(Clone, Debug)]
enum Node {
    And(Vec<Node>),
    Or(Vec<Node>),
    /// Rejects the row if the operand drops any of its cells.
    Skip(Box<Node>),
    /// Like SKIP, and the first rejected row ends the scan.
    While(Box<Node>),
    Leaf(Leaf),
}

/// What one node decided for a row: which cells it keeps, and whether the row survives.
struct Verdict {
    keep: Vec<bool>,
    row_ok: bool,
}

impl Verdict {
    fn reject(len: usize) -> Self {
        Verdict {
            keep: vec![false; len],
            row_ok: false,
        }
    }
}

/// A parsed filter string.
#[derive(Clone, Debug)]
pub struct Filter {
    root: Node,
    /// KeyOnlyFilter anywhere strips values from what is returned.
    key_only: Option<bool>,
}

impl Filter {
    pub fn parse(input: &[u8]) -> ServerResult<Filter> {
        let root = parse::parse(input)?;
        let key_only = find_key_only(&root);
        Ok(Filter { root, key_only })
    }

    /// The cells of row `key` that pass, in their original order.
    pub fn apply(&self, key: &[u8], cells: Vec<Cell>, state: &mut FilterState) -> Vec<Cell> {
        if state.done {
            return Vec::new();
        }
        let verdict = self.root.eval(key, &cells, &vec![true; cells.len()], state);
        if !verdict.row_ok {
            return Vec::new();
        }
        cells
            .into_iter()
            .zip(verdict.keep)
            .filter_map(|(c, keep)| keep.then_some(c))
            .map(|mut c| {
                if let Some(len_as_value) = self.key_only {
                    c.value = if len_as_value {
                        (c.value.len() as i32).to_be_bytes().to_vec()
                    } else {
                        Vec::new()
                    };
                }
                c
            })
            .collect()
    }
}

fn find_key_only(node: &Node) -> Option<bool> {
    match node {
        Node::Leaf(Leaf::KeyOnly { len_as_value }) => Some(*len_as_value),
        Node::Leaf(_) => None,
        Node::And(parts) | Node::Or(parts) => parts.iter().find_map(find_key_only),
        Node::Skip(inner) | Node::While(inner) => find_key_only(inner),
    }
}

impl Node {
    fn eval(&self, key: &[u8], cells: &[Cell], input: &[bool], st: &mut FilterState) -> Verdict {
        match self {
            Node::And(parts) => {
                let mut keep = input.to_vec();
                for part in parts {
                    let v = part.eval(key, cells, &keep, st);
                    if !v.row_ok {
                        return Verdict::reject(cells.len());
                    }
                    keep = v.keep;
                }
                Verdict { keep, row_ok: true }
            }
            Node::Or(parts) => {
                let mut keep = vec![false; cells.len()];
                let mut row_ok = false;
                for part in parts {
                    let v = part.eval(key, cells, input, st);
                    if v.row_ok {
                        row_ok = true;
                        keep.iter_mut().zip(v.keep).for_each(|(k, p)| *k |= p);
                    }
                }
                Verdict { keep, row_ok }
            }
            Node::Skip(inner) | Node::While(inner) => {
                let v = inner.eval(key, cells, input, st);
                if v.row_ok && v.keep == input {
                    v
                } else {
                    if matches!(self, Node::While(_)) {
                        st.done = true;
                    }
                    Verdict::reject(cells.len())
                }
            }
            Node::Leaf(leaf) => leaf.eval(key, cells, input, st),
        }
    }
}

impl Leaf {
    fn eval(&self, key: &[u8], cells: &[Cell], input: &[bool], st: &mut FilterState) -> Verdict {
        let per_cell = |pred: &dyn Fn(&Cell) -> bool| Verdict {
            keep: cells
                .iter()
                .zip(input)
                .map(|(c, k)| *k && pred(c))
                .collect(),
            row_ok: true,
        };
        let per_row = |ok: bool| {
            if ok {
                Verdict {
                    keep: input.to_vec(),
                    row_ok: true,
                }
            } else {
                Verdict::reject(cells.len())
            }
        };
        match self {
            Leaf::KeyOnly { .. } => per_row(true),
            Leaf::FirstKeyOnly => {
                let first = input.iter().position(|k| *k);
                Verdict {
                    keep: (0..cells.len()).map(|i| Some(i) == first).collect(),
                    row_ok: true,
                }
            }
            Leaf::Prefix(p) => per_row(key.starts_with(p)),
            Leaf::InclusiveStop(stop) => {
                let past = if st.reversed {
                    key < stop.as_slice()
                } else {
                    key > stop.as_slice()
                };
                if past {
                    st.done = true;
                }
                per_row(!past)
            }
            Leaf::Row(op, cmp) => per_row(cmp.matches(*op, key)),
            Leaf::ColumnPrefix(p) => per_cell(&|c| c.qualifier.starts_with(p)),
            Leaf::MultipleColumnPrefix(ps) => {
                per_cell(&|c| ps.iter().any(|p| c.qualifier.starts_with(p)))
            }
            Leaf::Timestamps(set) => per_cell(&|c| set.contains(&c.timestamp)),
            Leaf::Family(op, cmp) => per_cell(&|c| cmp.matches(*op, &c.family)),
            Leaf::Qualifier(op, cmp) => per_cell(&|c| cmp.matches(*op, &c.qualifier)),
            Leaf::Value(op, cmp) => per_cell(&|c| cmp.matches(*op, &c.value)),
            Leaf::ColumnRange { min, max } => per_cell(&|c| {
                let q = c.qualifier.as_slice();
                let above_min = min
                    .as_ref()
                    .is_none_or(|(m, incl)| q > m.as_slice() || (*incl && q == m.as_slice()));
                let below_max = max
                    .as_ref()
                    .is_none_or(|(m, incl)| q < m.as_slice() || (*incl && q == m.as_slice()));
                above_min && below_max
            }),
            Leaf::SingleColumnValue {
                family,
                qualifier,
                op,
                comparator,
                filter_if_missing,
                latest_only,
                exclude,
            } => {
                let is_tested = |c: &Cell| c.family == *family && c.qualifier == *qualifier;
                let mut tested = cells
                    .iter()
                    .zip(input)
                    .filter(|(c, k)| **k && is_tested(c))
                    .map(|(c, _)| c);
                let row_ok = if *latest_only {
                    match tested.next() {
                        Some(c) => comparator.matches(*op, &c.value),
                        None => !filter_if_missing,
                    }
                } else {
                    let mut seen = false;
                    let mut matched = false;
                    for c in tested {
                        seen = true;
                        matched |= comparator.matches(*op, &c.value);
                    }
                    if seen {
                        matched
                    } else {
                        !filter_if_missing
                    }
                };
                if !row_ok {
                    return Verdict::reject(cells.len());
                }
                if *exclude {
                    per_cell(&|c| !is_tested(c))
                } else {
                    per_row(true)
                }
            }
        }
    }
}
