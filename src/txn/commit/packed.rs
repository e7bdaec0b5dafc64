//! A transaction's buffered writes, packed: each cell is one allocation holding its row,
//! family, qualifier, what is written and the value, with its table as an index into the
//! buffer's few table names. A `CellKey` and a `Write` per cell cost four more allocations and
//! 128 bytes of fixed size; in an ordered map at 100,000 cells of 100-byte values they took
//! 4.4 times the values themselves (docs/benchmarks.md, "Large transactions").

use std::cmp::Ordering;
use std::collections::BTreeSet;

use smallvec::SmallVec;

use super::mutation::Write;
use crate::key::CellKey;

/// `[kind u8][table][row length][family length u8][qualifier length]`, the table index and
/// the two other lengths as LEB128 varints (one byte each below 128), then the row, family,
/// qualifier and value. `CellKey::new` caps the family at 255 bytes. A 17-byte row, a 1-byte
/// family, a 2-byte qualifier and a 100-byte value fit the allocator's 128-byte class.
const PUT: u8 = 0;
const DELETE: u8 = 1;
const LOCK: u8 = 2;

/// One buffered cell. Ordered and compared by table index, row, family and qualifier only.
pub(crate) struct Packed(Box<[u8]>);

/// What is written to a packed cell, borrowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Written<'a> {
    Put(&'a [u8]),
    Delete,
    Lock,
}

fn put_varint(out: &mut Vec<u8>, mut n: usize) {
    while n >= 0x80 {
        out.push(n as u8 | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// The bytes `put_varint` takes for `n`.
fn varint_len(n: usize) -> usize {
    (usize::BITS - (n | 1).leading_zeros()).div_ceil(7) as usize
}

/// The varint at `*at`, moving `*at` past it.
fn varint(b: &[u8], at: &mut usize) -> usize {
    let (mut n, mut shift) = (0usize, 0);
    loop {
        let byte = b[*at];
        *at += 1;
        n |= usize::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return n;
        }
        shift += 7;
    }
}

/// Where a packed cell's parts are.
struct Layout {
    table: usize,
    row: usize,
    family: usize,
    qualifier: usize,
    value: usize,
}

impl Packed {
    fn new(table: u32, key: &CellKey, kind: u8, value: &[u8]) -> Packed {
        let (row, family, qualifier) = (&key.row, &key.family, &key.qualifier);
        // The exact length (the kind and the family's length take a byte each), so that the
        // boxed slice takes the buffer as it is: a spare byte makes `into_boxed_slice`
        // reallocate.
        let head =
            2 + varint_len(table as usize) + varint_len(row.len()) + varint_len(qualifier.len());
        let mut b =
            Vec::with_capacity(head + row.len() + family.len() + qualifier.len() + value.len());
        b.push(kind);
        put_varint(&mut b, table as usize);
        put_varint(&mut b, row.len());
        b.push(family.len() as u8);
        put_varint(&mut b, qualifier.len());
        b.extend_from_slice(row);
        b.extend_from_slice(family);
        b.extend_from_slice(qualifier);
        b.extend_from_slice(value);
        Packed(b.into_boxed_slice())
    }

    fn of(table: u32, key: &CellKey, write: &Write) -> Packed {
        match write {
            Write::Put(v) => Packed::new(table, key, PUT, v),
            Write::Delete => Packed::new(table, key, DELETE, &[]),
            Write::Lock => Packed::new(table, key, LOCK, &[]),
        }
    }

    fn layout(&self) -> Layout {
        let b = &self.0;
        // Lengths below 128 (nearly every cell's) take one byte each: read straight off.
        if let [_, table @ 0..=0x7f, row @ 0..=0x7f, family, qualifier @ 0..=0x7f, ..] = **b {
            let row_at = 5;
            let family_at = row_at + usize::from(row);
            let qualifier_at = family_at + usize::from(family);
            return Layout {
                table: usize::from(table),
                row: row_at,
                family: family_at,
                qualifier: qualifier_at,
                value: qualifier_at + usize::from(qualifier),
            };
        }
        let mut at = 1;
        let table = varint(b, &mut at);
        let row_len = varint(b, &mut at);
        let family_len = usize::from(b[at]);
        at += 1;
        let qualifier_len = varint(b, &mut at);
        Layout {
            table,
            row: at,
            family: at + row_len,
            qualifier: at + row_len + family_len,
            value: at + row_len + family_len + qualifier_len,
        }
    }

    fn table(&self) -> u32 {
        self.layout().table as u32
    }

    pub fn row(&self) -> &[u8] {
        let l = self.layout();
        &self.0[l.row..l.family]
    }

    pub fn family(&self) -> &[u8] {
        let l = self.layout();
        &self.0[l.family..l.qualifier]
    }

    pub fn qualifier(&self) -> &[u8] {
        let l = self.layout();
        &self.0[l.qualifier..l.value]
    }

    pub fn written(&self) -> Written<'_> {
        match self.0[0] {
            PUT => Written::Put(&self.0[self.layout().value..]),
            DELETE => Written::Delete,
            _ => Written::Lock,
        }
    }

    /// The key's and value's bytes, as the size limit counts them.
    fn size(&self) -> usize {
        self.0.len() - self.layout().row
    }

    /// Whether this is the cell of `key`, whose table has index `table`.
    fn is_of(&self, table: u32, key: &CellKey) -> bool {
        self.key_parts() == (table as usize, &key.row, &key.family, &key.qualifier)
    }

    fn key_parts(&self) -> (usize, &[u8], &[u8], &[u8]) {
        let l = self.layout();
        let b = &self.0;
        (
            l.table,
            &b[l.row..l.family],
            &b[l.family..l.qualifier],
            &b[l.qualifier..l.value],
        )
    }
}

impl Ord for Packed {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key_parts().cmp(&other.key_parts())
    }
}

impl PartialOrd for Packed {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Packed {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Packed {}

impl Written<'_> {
    fn to_write(self) -> Write {
        match self {
            Written::Put(v) => Write::Put(v.to_vec()),
            Written::Delete => Write::Delete,
            Written::Lock => Write::Lock,
        }
    }
}

/// The writes a transaction buffered, one per cell, the last write of a cell replacing the
/// ones before. Iterated grouped by table, in the order tables were first written.
#[derive(Default)]
pub(crate) struct WriteBuffer {
    /// Most transactions write one table: its name sits in place.
    tables: Tables,
    /// The only cell, while there is one: most transactions write a single cell, and an
    /// ordered set of one costs a node of its own and its walks, for nothing to order. The
    /// second cell moves it into `cells`; at most one of the two holds anything.
    one: Option<Packed>,
    cells: BTreeSet<Packed>,
    /// Key and value bytes of every cell (see [`WriteBuffer::bytes`]).
    bytes: usize,
}

impl WriteBuffer {
    fn table_index(&self, table: &str) -> Option<u32> {
        self.tables
            .iter()
            .position(|t| t == table)
            .map(|i| i as u32)
    }

    fn probe(&self, key: &CellKey) -> Option<Packed> {
        Some(Packed::new(self.table_index(&key.table)?, key, LOCK, &[]))
    }

    /// Cells buffered.
    pub fn len(&self) -> usize {
        usize::from(self.one.is_some()) + self.cells.len()
    }

    /// The buffered cell of `probe`'s key.
    fn find(&self, probe: &Packed) -> Option<&Packed> {
        match &self.one {
            Some(one) => (one == probe).then_some(one),
            None => self.cells.get(probe),
        }
    }

    /// Buffers `packed`, replacing the cell of its key.
    fn put(&mut self, packed: Packed) {
        match &mut self.one {
            None if self.cells.is_empty() => self.one = Some(packed),
            Some(one) if *one == packed => *one = packed,
            _ => {
                self.cells.extend(self.one.take());
                self.cells.replace(packed);
            }
        }
    }

    /// The rows, families, qualifiers and values of every cell, in bytes.
    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.bytes
    }

    /// Buffers `write` to `key`, unless the buffer's bytes (see [`WriteBuffer::bytes`]) would
    /// then pass `limit`: `Err` with what they would have been, and nothing buffered. The cell
    /// is packed once and finds the write it replaces by itself (cells compare by key only).
    pub fn insert_within(
        &mut self,
        key: &CellKey,
        write: &Write,
        limit: usize,
    ) -> Result<(), usize> {
        let known = self.table_index(&key.table);
        let packed = Packed::of(known.unwrap_or(self.tables.len() as u32), key, write);
        let old = self.find(&packed).map_or(0, Packed::size);
        let bytes = self.bytes - old + packed.size();
        if bytes > limit {
            return Err(bytes);
        }
        if known.is_none() {
            self.tables.push(key.table.clone());
        }
        self.put(packed);
        self.bytes = bytes;
        Ok(())
    }

    #[cfg(test)]
    pub fn insert(&mut self, key: &CellKey, write: &Write) {
        self.insert_within(key, write, usize::MAX)
            .expect("no limit");
    }

    pub fn get(&self, key: &CellKey) -> Option<Written<'_>> {
        self.find(&self.probe(key)?).map(Packed::written)
    }

    pub fn contains(&self, key: &CellKey) -> bool {
        self.get(key).is_some()
    }

    /// Every cell with its table's name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Packed)> {
        self.one
            .iter()
            .chain(&self.cells)
            .map(|p| (self.tables[p.table() as usize].as_str(), p))
    }

    /// The cells in commit order: `primary` first (a lock-only write when it was not
    /// buffered), then the rest grouped by table.
    pub fn into_commit_order(mut self, primary: &CellKey) -> CommitCells {
        let table = self.table_index(&primary.table);
        let taken = match (&self.one, table) {
            // The only cell, as in most commits: compared in place, not through a probe.
            (Some(one), Some(t)) if one.is_of(t, primary) => self.one.take(),
            (Some(_), _) | (None, None) => None,
            (None, Some(_)) => self.probe(primary).and_then(|p| self.cells.take(&p)),
        };
        let primary = match taken {
            Some(p) => p,
            None => {
                let table = self.table_index(&primary.table).unwrap_or_else(|| {
                    self.tables.push(primary.table.clone());
                    (self.tables.len() - 1) as u32
                });
                Packed::of(table, primary, &Write::Lock)
            }
        };
        let mut cells = SmallVec::with_capacity(self.len() + 1);
        cells.push(primary);
        cells.extend(self.one);
        if !self.cells.is_empty() {
            cells.extend(self.cells);
        }
        CommitCells {
            tables: self.tables,
            cells,
        }
    }
}

/// The cells of one commit, the primary first; each cell's key and write are unpacked only
/// when its request is built.
pub(crate) struct CommitCells {
    tables: Tables,
    /// In place for the one or two cells most commits write.
    cells: SmallVec<[Packed; 2]>,
}

/// The names of the tables a transaction writes, in the order it first wrote them.
type Tables = SmallVec<[String; 1]>;

/// Each table and family a commit writes (see [`CommitCells::family_probes`]).
pub(crate) type FamilyProbes<'a> = SmallVec<[(&'a str, &'a [u8]); 2]>;

impl CommitCells {
    pub fn len(&self) -> usize {
        self.cells.len()
    }

    pub fn table(&self, i: usize) -> &str {
        &self.tables[self.cells[i].table() as usize]
    }

    pub fn cell(&self, i: usize) -> &Packed {
        &self.cells[i]
    }

    pub fn key(&self, i: usize) -> CellKey {
        // One reading of the cell's layout for all four parts.
        let (table, row, family, qualifier) = self.cells[i].key_parts();
        CellKey {
            table: self.tables[table].clone(),
            row: row.to_vec(),
            family: family.to_vec(),
            qualifier: qualifier.to_vec(),
        }
    }

    pub fn write(&self, i: usize) -> Write {
        self.cells[i].written().to_write()
    }

    /// Each table and family written, once, in commit order: what `Context::check_families`
    /// needs to see of the cells. A commit writes few families, so a look through those found
    /// so far (the last one first, as a row's cells sit together) beats a set.
    pub fn family_probes(&self) -> FamilyProbes<'_> {
        let mut probes = FamilyProbes::new();
        for i in 0..self.cells.len() {
            let probe = (self.table(i), self.cells[i].family());
            if probes.last() != Some(&probe) && !probes.contains(&probe) {
                probes.push(probe);
            }
        }
        probes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(table: &str, row: &str, q: &str) -> CellKey {
        CellKey::new(table, row, "f", q).unwrap()
    }

    #[test]
    fn a_packed_cell_gives_back_its_key_and_write() {
        // Lengths above 127 take varints of two bytes.
        let k = CellKey::new("t", vec![7u8; 200], "fam", vec![9u8; 300]).unwrap();
        let mut b = WriteBuffer::default();
        b.insert(&k, &Write::Put(b"value".to_vec()));
        assert_eq!(b.get(&k), Some(Written::Put(b"value")));
        let cells = b.into_commit_order(&k);
        assert_eq!(cells.key(0), k);
        assert_eq!(cells.write(0), Write::Put(b"value".to_vec()));
    }

    #[test]
    fn every_length_reads_back_on_either_side_of_one_varint_byte() {
        // 127 and 128 straddle the header read straight off and the one parsed varint by
        // varint; a family's length is one plain byte, so 255 is still a short header.
        for (row, family, qualifier) in [(1, 1, 1), (127, 255, 127), (128, 1, 1), (1, 1, 128)] {
            let k =
                CellKey::new("t", vec![1u8; row], vec![2u8; family], vec![3u8; qualifier]).unwrap();
            let mut b = WriteBuffer::default();
            b.insert(&k, &Write::Put(b"v".to_vec()));
            assert_eq!(
                b.get(&k),
                Some(Written::Put(b"v")),
                "{row}/{family}/{qualifier}"
            );
            let cells = b.into_commit_order(&k);
            assert_eq!(cells.key(0), k);
            assert_eq!(cells.family_probes()[..], [("t", &k.family[..])]);
        }
    }

    #[test]
    fn a_varint_takes_the_bytes_its_length_says() {
        for n in [0, 1, 127, 128, 300, 16_383, 16_384, 1 << 40, usize::MAX] {
            let mut out = Vec::new();
            put_varint(&mut out, n);
            assert_eq!(out.len(), varint_len(n), "{n}");
        }
    }

    #[test]
    fn the_last_write_of_a_cell_replaces_the_others_and_the_bytes_follow() {
        let mut b = WriteBuffer::default();
        let k = key("t", "r", "q");
        b.insert(&k, &Write::Put(vec![1; 10]));
        assert_eq!(b.bytes(), 1 + 1 + 1 + 10);
        // Past the limit: refused with the bytes it would have taken, the buffer as it was.
        assert_eq!(b.insert_within(&k, &Write::Put(vec![2; 20]), 22), Err(23));
        assert_eq!(b.get(&k), Some(Written::Put(&[1; 10])));
        let other = key("u", "r", "q");
        assert_eq!(b.insert_within(&other, &Write::Delete, 15), Err(16));
        assert_eq!((b.len(), b.bytes(), b.get(&other)), (1, 13, None));
        assert_eq!(b.insert_within(&k, &Write::Delete, 3), Ok(()));
        assert_eq!((b.len(), b.bytes()), (1, 3));
        assert_eq!(b.get(&k), Some(Written::Delete));
        assert_eq!(b.get(&key("t", "r", "other")), None);
        assert_eq!(b.get(&key("other", "r", "q")), None);
    }

    #[test]
    fn the_commit_order_puts_the_primary_first_and_groups_tables() {
        let mut b = WriteBuffer::default();
        for (t, r) in [("b", "2"), ("a", "1"), ("b", "1"), ("a", "2")] {
            b.insert(&key(t, r, "q"), &Write::Put(r.into()));
        }
        let cells = b.into_commit_order(&key("a", "2", "q"));
        let order: Vec<_> = (0..cells.len())
            .map(|i| {
                let k = cells.key(i);
                format!("{}/{}", k.table, String::from_utf8(k.row).unwrap())
            })
            .collect();
        assert_eq!(order, ["a/2", "b/1", "b/2", "a/1"]);
        assert_eq!(cells.family_probes().len(), 2);
    }

    #[test]
    fn a_primary_between_other_cells_moves_to_the_front_and_they_keep_their_order() {
        let mut b = WriteBuffer::default();
        for r in ["4", "1", "3", "2", "5"] {
            b.insert(&key("t", r, "q"), &Write::Put(r.into()));
        }
        let cells = b.into_commit_order(&key("t", "3", "q"));
        let rows: Vec<_> = (0..cells.len()).map(|i| cells.key(i).row).collect();
        assert_eq!(rows, [b"3", b"1", b"2", b"4", b"5"]);
        assert_eq!(cells.write(0), Write::Put(b"3".to_vec()));
    }

    #[test]
    fn the_only_cell_kept_apart_joins_the_others_in_key_order_once_a_second_comes() {
        let mut b = WriteBuffer::default();
        let (late, early) = (key("t", "9", "q"), key("t", "1", "q"));
        b.insert(&late, &Write::Put(b"a".to_vec()));
        b.insert(&late, &Write::Put(b"bb".to_vec()));
        assert_eq!(
            (b.len(), b.bytes(), b.get(&early)),
            (1, 1 + 1 + 1 + 2, None)
        );
        // A second cell, sorting before the first: both are found, in key order.
        b.insert(&early, &Write::Delete);
        assert_eq!((b.len(), b.get(&late)), (2, Some(Written::Put(b"bb"))));
        assert_eq!(b.get(&early), Some(Written::Delete));
        let rows: Vec<_> = b.iter().map(|(_, p)| p.row().to_vec()).collect();
        assert_eq!(rows, [b"1", b"9"]);
        // The only cell as the primary leaves nothing behind it; another primary takes the
        // front with the cell after it.
        let mut one = WriteBuffer::default();
        one.insert(&late, &Write::Put(b"v".to_vec()));
        let cells = one.into_commit_order(&late);
        assert_eq!((cells.len(), cells.key(0)), (1, late.clone()));
        let mut one = WriteBuffer::default();
        one.insert(&late, &Write::Put(b"v".to_vec()));
        let cells = one.into_commit_order(&early);
        assert_eq!((cells.len(), cells.write(0)), (2, Write::Lock));
        assert_eq!(cells.key(1), late);
    }

    #[test]
    fn a_primary_never_buffered_commits_as_a_lock() {
        let mut b = WriteBuffer::default();
        b.insert(&key("t", "r", "q"), &Write::Put(b"v".to_vec()));
        let cells = b.into_commit_order(&key("u", "p", "q"));
        assert_eq!((cells.len(), cells.write(0)), (2, Write::Lock));
        assert_eq!(cells.table(0), "u");
        // Of a table written already: the buffer's name for it serves.
        let mut b = WriteBuffer::default();
        b.insert(&key("t", "r", "q"), &Write::Put(b"v".to_vec()));
        let cells = b.into_commit_order(&key("t", "p", "q"));
        assert_eq!(
            (cells.len(), cells.write(0), cells.table(0)),
            (2, Write::Lock, "t")
        );
        assert_eq!(cells.write(1), Write::Put(b"v".to_vec()));
    }
}
