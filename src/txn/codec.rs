//! Byte encodings of the percolator columns: lock cells, write records and column keys.
//!
//! The lock cell's byte order carries the prewrite rule (docs/design.md invariant 2):
//! released = `0x00 || BE(M)` where M is the highest commit_ts or rolled-back start_ts ever
//! recorded on the cell; locked = `0x01 || lock record`. A prewrite at `start_ts` is then one
//! `checkAndMutate(lock, GREATER, 0x00 || BE(start_ts))`, which HBase evaluates as
//! `value > cell`: true exactly when the cell is released with M < start_ts.
//!
//! Every decoder is strict (exact lengths, no trailing bytes) so that a damaged cell is reported
//! as corrupted instead of being misread.

use std::borrow::Cow;

use crate::key::CellKey;

const RELEASED: u8 = 0x00;
const LOCKED: u8 = 0x01;
const LOCK_FORMAT: u8 = 1;
/// A lock of a row-granularity transaction (a row's one lock, or a cell lock whose primary is
/// a row lock): the format 1 fields, then the row part. Format 1 stays for everything else, so
/// cell-granularity tables keep the bytes they always had.
const LOCK_FORMAT_ROW: u8 = 2;

/// The lock-family qualifier of a row's one lock in a table that locks rows (docs/design.md
/// invariant 14). Every column's qualifier starts with its family's length, at least 1, so the
/// empty qualifier never names a column.
pub const ROW_LOCK_QUALIFIER: &[u8] = b"";

/// What went wrong decoding a stored record; the caller adds table, row and column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodecError(pub String);

type Decoded<T> = Result<T, CodecError>;

/// Whether a transaction writes, deletes or only locks the cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MutationKind {
    Put,
    Delete,
    /// Locked for write-skew protection (`get_for_update`, `lock_keys`): the value stays.
    Lock,
}

impl MutationKind {
    /// The kind of a buffered write: a value is a Put, none a Delete.
    #[cfg(feature = "testing")]
    pub fn of<T>(value: Option<T>) -> MutationKind {
        match value {
            Some(_) => MutationKind::Put,
            None => MutationKind::Delete,
        }
    }
}

/// A prewrite lock as stored in the lock family.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lock {
    pub start_ts: u64,
    pub kind: MutationKind,
    pub primary: CellKey,
    /// Liveness id of the client that holds the lock.
    pub owner: String,
    /// The owner's wall clock (ms) when the lock was written or last refreshed.
    pub wall_ms: u64,
    /// How long after `wall_ms` the lock counts as stale even if the owner looks alive.
    pub ttl_ms: u64,
    /// The value itself when small, so a roll-forward can write it into the write record.
    pub short_value: Option<Vec<u8>>,
    /// Set on a row's one lock (a table that locks rows): every column the transaction writes
    /// in the row, so whoever rolls it forward or back knows them. `kind` and `short_value`
    /// above are then unused (`Lock` and `None`).
    pub row: Option<Vec<RowColumn>>,
    /// The primary's lock is its row's lock (the primary's table locks rows).
    pub primary_row: bool,
}

/// One column of a row lock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowColumn {
    pub family: Vec<u8>,
    pub qualifier: Vec<u8>,
    pub kind: MutationKind,
    pub short_value: Option<Vec<u8>>,
}

impl Lock {
    /// The lock-family qualifier this lock is stored under on `key`'s row.
    pub fn qualifier(&self, key: &CellKey) -> Vec<u8> {
        match self.row {
            Some(_) => ROW_LOCK_QUALIFIER.to_vec(),
            None => column_qualifier(&key.family, &key.qualifier),
        }
    }

    /// Whether this lock, found on `key`, is the transaction's primary lock: the cell itself,
    /// or for a row lock any column of the primary's row.
    pub fn is_primary_lock(&self, key: &CellKey) -> bool {
        match self.row {
            Some(_) => {
                self.primary_row && key.table == self.primary.table && key.row == self.primary.row
            }
            None => *key == self.primary,
        }
    }

    /// Whether a read of `family:qualifier` in the lock's row must reckon with this lock. A
    /// row lock only holds back the columns it lists: the others cannot change with it.
    pub fn covers(&self, family: &[u8], qualifier: &[u8]) -> bool {
        match &self.row {
            Some(columns) => columns
                .iter()
                .any(|c| c.family == family && c.qualifier == qualifier),
            None => true,
        }
    }

    /// The columns this lock writes on `key`'s row: the row lock's list (borrowed, not
    /// copied, in every commit and rollback), or the cell itself.
    pub fn columns(&self, key: &CellKey) -> Cow<'_, [RowColumn]> {
        match &self.row {
            Some(columns) => Cow::Borrowed(columns),
            None => Cow::Owned(vec![RowColumn {
                family: key.family.clone(),
                qualifier: key.qualifier.clone(),
                kind: self.kind,
                short_value: self.short_value.clone(),
            }]),
        }
    }
}

/// The state of a cell's lock column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LockState {
    /// No lock cell: the cell was never written transactionally.
    Absent,
    /// Unlocked; `max_ts` is the highest commit or rollback timestamp recorded on the cell.
    Released {
        max_ts: u64,
    },
    Locked(Lock),
}

/// The kind of a write record in the write family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteKind {
    Put,
    Delete,
    /// The transaction that started at this version was rolled back (kept on primaries).
    Rollback,
    /// The transaction committed, having only locked this cell: readers look past it, and
    /// its commit timestamp is a conflict for writers that started before it.
    Lock,
}

/// A write record, stored at version commit_ts (or start_ts for a rollback).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteRecord {
    pub kind: WriteKind,
    pub start_ts: u64,
    pub short_value: Option<Vec<u8>>,
}

pub fn encode_released(max_ts: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(9);
    out.push(RELEASED);
    out.extend_from_slice(&max_ts.to_be_bytes());
    out
}

pub fn encode_lock(lock: &Lock) -> Vec<u8> {
    let mut w = Writer(Vec::with_capacity(96));
    let row_format = lock.row.is_some() || lock.primary_row;
    w.u8(LOCKED);
    w.u8(if row_format {
        LOCK_FORMAT_ROW
    } else {
        LOCK_FORMAT
    });
    w.u64(lock.start_ts);
    w.u8(kind_byte(lock.kind));
    w.u64(lock.wall_ms);
    w.u64(lock.ttl_ms);
    w.bytes16(lock.owner.as_bytes());
    w.bytes16(lock.primary.table.as_bytes());
    w.bytes32(&lock.primary.row);
    w.bytes16(&lock.primary.family);
    w.bytes16(&lock.primary.qualifier);
    w.opt_bytes(lock.short_value.as_deref());
    if row_format {
        w.u8(u8::from(lock.primary_row));
        match &lock.row {
            None => w.u8(0),
            Some(columns) => {
                w.u8(1);
                w.u32(columns.len() as u32);
                for c in columns {
                    w.bytes16(&c.family);
                    w.bytes16(&c.qualifier);
                    w.u8(kind_byte(c.kind));
                    w.opt_bytes(c.short_value.as_deref());
                }
            }
        }
    }
    w.0
}

fn kind_byte(kind: MutationKind) -> u8 {
    match kind {
        MutationKind::Put => 1,
        MutationKind::Delete => 2,
        MutationKind::Lock => 3,
    }
}

fn kind_of(byte: u8) -> Decoded<MutationKind> {
    match byte {
        1 => Ok(MutationKind::Put),
        2 => Ok(MutationKind::Delete),
        3 => Ok(MutationKind::Lock),
        k => Err(CodecError(format!("unknown lock kind {k}"))),
    }
}

/// The row part of a format 2 lock: whether the primary is a row lock, and the row's columns.
fn decode_row_part(r: &mut Reader<'_>) -> Decoded<(bool, Option<Vec<RowColumn>>)> {
    let primary_row = match r.u8()? {
        0 => false,
        1 => true,
        f => return Err(CodecError(format!("bad primary flag {f}"))),
    };
    let row = match r.u8()? {
        0 => None,
        1 => {
            let n = r.u32()? as usize;
            // Each column takes at least 6 bytes: a count beyond what is left is damage, and
            // must not reserve memory for it.
            let mut columns = Vec::with_capacity(n.min(r.buf.len() / 6));
            for _ in 0..n {
                columns.push(RowColumn {
                    family: r.bytes16()?,
                    qualifier: r.bytes16()?,
                    kind: kind_of(r.u8()?)?,
                    short_value: r.opt_bytes()?,
                });
            }
            if columns.is_empty() {
                return Err(CodecError("a row lock with no column".into()));
            }
            Some(columns)
        }
        f => return Err(CodecError(format!("bad row flag {f}"))),
    };
    Ok((primary_row, row))
}

pub fn decode_lock_state(cell: Option<&[u8]>) -> Decoded<LockState> {
    let Some(bytes) = cell else {
        return Ok(LockState::Absent);
    };
    let mut r = Reader::new(bytes);
    match r.u8()? {
        RELEASED => {
            let max_ts = r.u64()?;
            r.end()?;
            Ok(LockState::Released { max_ts })
        }
        LOCKED => {
            let format = r.u8()?;
            if format != LOCK_FORMAT && format != LOCK_FORMAT_ROW {
                return Err(CodecError(format!("unknown lock format {format}")));
            }
            let start_ts = r.u64()?;
            let kind = kind_of(r.u8()?)?;
            let wall_ms = r.u64()?;
            let ttl_ms = r.u64()?;
            let owner = r.string16()?;
            let table = r.string16()?;
            let row = r.bytes32()?;
            let family = r.bytes16()?;
            let qualifier = r.bytes16()?;
            let short_value = r.opt_bytes()?;
            let (primary_row, row_columns) = if format == LOCK_FORMAT_ROW {
                decode_row_part(&mut r)?
            } else {
                (false, None)
            };
            r.end()?;
            Ok(LockState::Locked(Lock {
                start_ts,
                kind,
                primary: CellKey {
                    table,
                    row,
                    family,
                    qualifier,
                },
                owner,
                wall_ms,
                ttl_ms,
                short_value,
                row: row_columns,
                primary_row,
            }))
        }
        tag => Err(CodecError(format!("unknown lock state tag {tag:#04x}"))),
    }
}

pub fn encode_write(record: &WriteRecord) -> Vec<u8> {
    let mut w = Writer(Vec::with_capacity(16));
    w.u8(match record.kind {
        WriteKind::Put => 1,
        WriteKind::Delete => 2,
        WriteKind::Rollback => 3,
        WriteKind::Lock => 4,
    });
    w.u64(record.start_ts);
    w.opt_bytes(record.short_value.as_deref());
    w.0
}

pub fn decode_write(bytes: &[u8]) -> Decoded<WriteRecord> {
    let mut r = Reader::new(bytes);
    let kind = match r.u8()? {
        1 => WriteKind::Put,
        2 => WriteKind::Delete,
        3 => WriteKind::Rollback,
        4 => WriteKind::Lock,
        k => return Err(CodecError(format!("unknown write kind {k}"))),
    };
    let start_ts = r.u64()?;
    let short_value = r.opt_bytes()?;
    r.end()?;
    if short_value.is_some() && kind != WriteKind::Put {
        return Err(CodecError("only a put record may carry a value".into()));
    }
    Ok(WriteRecord {
        kind,
        start_ts,
        short_value,
    })
}

/// The qualifier that names user column `family:qualifier` inside the lock and write families.
/// The family is length-prefixed so that distinct (family, qualifier) pairs never collide.
pub fn column_qualifier(family: &[u8], qualifier: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + family.len() + qualifier.len());
    // CellKey::new rejects families over 255 bytes, so this cannot truncate.
    out.push(family.len() as u8);
    out.extend_from_slice(family);
    out.extend_from_slice(qualifier);
    out
}

/// The column a lock stored under lock-family qualifier `qualifier` stands for: the column
/// the qualifier names, or a row lock's first column (any of them resolves the whole row).
pub fn lock_column(qualifier: &[u8], lock: &Lock) -> Decoded<(Vec<u8>, Vec<u8>)> {
    if qualifier != ROW_LOCK_QUALIFIER {
        return split_column_qualifier(qualifier);
    }
    match lock.row.as_deref() {
        Some([first, ..]) => Ok((first.family.clone(), first.qualifier.clone())),
        _ => Err(CodecError("a cell lock stored as a row lock".into())),
    }
}

/// Inverse of [`column_qualifier`].
pub fn split_column_qualifier(encoded: &[u8]) -> Decoded<(Vec<u8>, Vec<u8>)> {
    let (&len, rest) = encoded
        .split_first()
        .ok_or_else(|| CodecError("empty column key".into()))?;
    let len = usize::from(len);
    if rest.len() < len {
        return Err(CodecError("column key shorter than its family".into()));
    }
    Ok((rest[..len].to_vec(), rest[len..].to_vec()))
}

struct Writer(Vec<u8>);

impl Writer {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    fn bytes16(&mut self, b: &[u8]) {
        // Lengths are validated where keys are built (families <= 255, tables and owners short).
        self.0.extend_from_slice(&(b.len() as u16).to_be_bytes());
        self.0.extend_from_slice(b);
    }
    fn bytes32(&mut self, b: &[u8]) {
        self.0.extend_from_slice(&(b.len() as u32).to_be_bytes());
        self.0.extend_from_slice(b);
    }
    fn opt_bytes(&mut self, b: Option<&[u8]>) {
        match b {
            None => self.u8(0),
            Some(b) => {
                self.u8(1);
                self.bytes32(b);
            }
        }
    }
}

struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Reader { buf }
    }

    fn take(&mut self, n: usize) -> Decoded<&'a [u8]> {
        if self.buf.len() < n {
            return Err(CodecError(format!(
                "truncated: wanted {n} more bytes, {} left",
                self.buf.len()
            )));
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }

    fn u8(&mut self) -> Decoded<u8> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> Decoded<u16> {
        Ok(u16::from_be_bytes(
            self.take(2)?.try_into().expect("2 bytes"),
        ))
    }

    fn u32(&mut self) -> Decoded<u32> {
        Ok(u32::from_be_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }

    fn u64(&mut self) -> Decoded<u64> {
        Ok(u64::from_be_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    fn bytes16(&mut self) -> Decoded<Vec<u8>> {
        let n = usize::from(self.u16()?);
        Ok(self.take(n)?.to_vec())
    }

    fn bytes32(&mut self) -> Decoded<Vec<u8>> {
        let n = self.u32()? as usize;
        Ok(self.take(n)?.to_vec())
    }

    fn string16(&mut self) -> Decoded<String> {
        String::from_utf8(self.bytes16()?).map_err(|_| CodecError("name is not UTF-8".into()))
    }

    fn opt_bytes(&mut self) -> Decoded<Option<Vec<u8>>> {
        match self.u8()? {
            0 => Ok(None),
            1 => Ok(Some(self.bytes32()?)),
            f => Err(CodecError(format!("bad option flag {f}"))),
        }
    }

    fn end(&self) -> Decoded<()> {
        if self.buf.is_empty() {
            Ok(())
        } else {
            Err(CodecError(format!("{} trailing bytes", self.buf.len())))
        }
    }
}

/// Stored cells and locks as the tests of the steps that read and write them build them.
#[cfg(test)]
pub(crate) mod fixtures {
    use super::{encode_write, Lock, MutationKind, RowColumn, WriteKind, WriteRecord};
    use crate::hbase::Cell;
    use crate::key::CellKey;

    /// A write-record cell as HBase returns it, at version `at`.
    pub fn write_cell(at: i64, kind: WriteKind, start_ts: u64, value: Option<&[u8]>) -> Cell {
        Cell {
            family: b"_pw".to_vec(),
            qualifier: b"\x01fq".to_vec(),
            timestamp: at,
            value: encode_write(&WriteRecord {
                kind,
                start_ts,
                short_value: value.map(<[u8]>::to_vec),
            }),
        }
    }

    pub fn key(row: &str) -> CellKey {
        CellKey::new("t", row.as_bytes().to_vec(), b"f".to_vec(), b"q".to_vec()).unwrap()
    }

    pub fn lock(start_ts: u64, primary: &str) -> Lock {
        Lock {
            start_ts,
            kind: MutationKind::Put,
            primary: key(primary),
            owner: "o1".into(),
            wall_ms: 1000,
            ttl_ms: 3000,
            short_value: Some(b"v".to_vec()),
            row: None,
            primary_row: false,
        }
    }

    /// A row lock on row `row` of table `t`, listing `f:a` (a put of "1") and `f:b` (a
    /// delete), whose primary is the row lock of `primary`.
    pub fn row_lock(start_ts: u64, primary: &str) -> Lock {
        Lock {
            kind: MutationKind::Lock,
            short_value: None,
            row: Some(vec![
                RowColumn {
                    family: b"f".to_vec(),
                    qualifier: b"a".to_vec(),
                    kind: MutationKind::Put,
                    short_value: Some(b"1".to_vec()),
                },
                RowColumn {
                    family: b"f".to_vec(),
                    qualifier: b"b".to_vec(),
                    kind: MutationKind::Delete,
                    short_value: None,
                },
            ]),
            primary_row: true,
            ..lock(start_ts, primary)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::row_lock;
    use super::*;

    fn lock(start_ts: u64) -> Lock {
        Lock {
            start_ts,
            kind: MutationKind::Put,
            primary: CellKey::new("t", b"r1".to_vec(), b"f".to_vec(), b"q".to_vec()).unwrap(),
            owner: "owner-1".into(),
            wall_ms: 1_700_000_000_000,
            ttl_ms: 3000,
            short_value: Some(b"v".to_vec()),
            row: None,
            primary_row: false,
        }
    }

    #[test]
    fn row_locks_round_trip_and_cell_locks_keep_format_1() {
        for l in [
            row_lock(42, "r1"),
            Lock {
                primary_row: true,
                ..lock(43)
            },
        ] {
            let bytes = encode_lock(&l);
            assert_eq!(bytes[1], LOCK_FORMAT_ROW);
            assert_eq!(
                decode_lock_state(Some(&bytes)).unwrap(),
                LockState::Locked(l)
            );
        }
        assert_eq!(encode_lock(&lock(44))[1], LOCK_FORMAT);
    }

    #[test]
    fn a_row_lock_is_stored_apart_from_every_column_and_covers_only_its_own() {
        let l = row_lock(42, "r1");
        let key = CellKey::new("t", b"r1".to_vec(), b"f".to_vec(), b"a".to_vec()).unwrap();
        assert_eq!(l.qualifier(&key), ROW_LOCK_QUALIFIER);
        assert_ne!(column_qualifier(b"f", b""), ROW_LOCK_QUALIFIER);
        assert!(l.covers(b"f", b"a") && l.covers(b"f", b"b"));
        assert!(!l.covers(b"f", b"") && !l.covers(b"f", b"c") && !l.covers(b"g", b"a"));
        let other_row = CellKey::new("t", b"r2".to_vec(), b"f".to_vec(), b"a".to_vec()).unwrap();
        let other_column = CellKey::new("t", b"r1".to_vec(), b"g".to_vec(), b"z".to_vec()).unwrap();
        assert!(l.is_primary_lock(&other_column) && !l.is_primary_lock(&other_row));
        assert!(!lock(42).is_primary_lock(&other_column));
    }

    #[test]
    fn damaged_row_locks_are_errors_not_panics() {
        let good = encode_lock(&row_lock(9, "r1"));
        for cut in 0..good.len() {
            assert!(
                decode_lock_state(Some(&good[..cut])).is_err(),
                "cut at {cut}"
            );
        }
        let mut huge_count = encode_lock(&Lock {
            row: Some(Vec::new()),
            ..row_lock(9, "r1")
        });
        let n = huge_count.len();
        huge_count[n - 4..].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(decode_lock_state(Some(&huge_count)).is_err());
        let empty = encode_lock(&Lock {
            row: Some(Vec::new()),
            ..row_lock(9, "r1")
        });
        assert!(decode_lock_state(Some(&empty)).is_err());
    }

    #[test]
    fn lock_round_trips() {
        let l = lock(42);
        assert_eq!(
            decode_lock_state(Some(&encode_lock(&l))).unwrap(),
            LockState::Locked(l)
        );
    }

    #[test]
    fn released_round_trips_and_absent_is_absent() {
        assert_eq!(
            decode_lock_state(Some(&encode_released(7))).unwrap(),
            LockState::Released { max_ts: 7 }
        );
        assert_eq!(decode_lock_state(None).unwrap(), LockState::Absent);
    }

    /// The byte order that makes a prewrite one CAS: `0x00||BE(s) > cell` iff released with M < s.
    #[test]
    fn prewrite_condition_is_carried_by_byte_order() {
        let probe = encode_released(100);
        assert!(probe.as_slice() > encode_released(99).as_slice());
        assert!(probe.as_slice() <= encode_released(100).as_slice());
        assert!(probe.as_slice() <= encode_released(101).as_slice());
        assert!(probe.as_slice() < encode_lock(&lock(1)).as_slice());
        assert!(probe.as_slice() < encode_lock(&lock(500)).as_slice());
    }

    /// The mark is stored big-endian, so that byte order is numeric order for every value, not
    /// only for values under 256 (where both byte orders sort alike). Real oracle timestamps
    /// (`ms << 18 | logical`) that differ in a high byte and go the other way in the low byte
    /// must compare as numbers: a prewrite's probe `0x00||BE(start_ts)` sorts above the stored
    /// mark exactly when the mark is below start_ts (invariant 2). A little-endian mark that
    /// decodes back to the same number round-trips but fails here.
    #[test]
    fn released_marks_sort_as_their_timestamps_in_every_byte() {
        assert_eq!(
            encode_released(0x0102_0304_0506_0708),
            [0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08],
            "tag, then the mark big-endian"
        );
        assert_eq!(
            decode_lock_state(Some(&[
                0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08
            ]))
            .unwrap(),
            LockState::Released {
                max_ts: 0x0102_0304_0506_0708
            },
            "a mark stored big-endian decodes as such"
        );
        let ts = |ms: u64, logical: u64| ms << 18 | logical;
        let ms = 1_764_000_000_123;
        let marks = [
            0,
            1,
            255,
            256,
            257,
            0x00ff_ffff,
            0x0100_0000,
            0x0100_0000_0000_0000,
            0x00ff_ffff_ffff_ffff,
            ts(ms, 0),
            ts(ms, 1),
            ts(ms, 255),
            ts(ms, 256),
            ts(ms, (1 << 18) - 1),
            ts(ms + 1, 0),
            ts(ms + 1, 254),
            ts(ms + 255, 3),
            ts(ms + 256, 0),
            ts(ms + 1_000, 7),
            ts(ms + 86_400_000, 0),
            u64::MAX,
        ];
        for &start_ts in &marks {
            let probe = encode_released(start_ts);
            for &max_ts in &marks {
                let stored = encode_released(max_ts);
                assert_eq!(
                    probe.as_slice().cmp(stored.as_slice()),
                    start_ts.cmp(&max_ts),
                    "probe {start_ts:#x} against mark {max_ts:#x}"
                );
                assert_eq!(
                    probe.as_slice() > stored.as_slice(),
                    max_ts < start_ts,
                    "a prewrite at {start_ts:#x} passes iff the mark {max_ts:#x} is below it"
                );
            }
            assert!(probe.as_slice() < encode_lock(&lock(start_ts)).as_slice());
        }
    }

    #[test]
    fn corrupted_cells_are_errors_not_panics() {
        let good = encode_lock(&lock(9));
        for cut in 0..good.len() {
            assert!(
                decode_lock_state(Some(&good[..cut])).is_err(),
                "cut at {cut}"
            );
        }
        let mut trailing = good.clone();
        trailing.push(0);
        assert!(decode_lock_state(Some(&trailing)).is_err());
        assert!(decode_lock_state(Some(&[0xff, 1, 2])).is_err());
        assert!(decode_lock_state(Some(&[0x00, 1])).is_err());
        assert!(decode_write(&[9, 0, 0]).is_err());
        assert!(decode_write(&[]).is_err());
    }

    #[test]
    fn write_records_round_trip() {
        for rec in [
            WriteRecord {
                kind: WriteKind::Put,
                start_ts: 5,
                short_value: Some(b"abc".to_vec()),
            },
            WriteRecord {
                kind: WriteKind::Put,
                start_ts: 5,
                short_value: None,
            },
            WriteRecord {
                kind: WriteKind::Delete,
                start_ts: 6,
                short_value: None,
            },
            WriteRecord {
                kind: WriteKind::Rollback,
                start_ts: 7,
                short_value: None,
            },
            WriteRecord {
                kind: WriteKind::Lock,
                start_ts: 8,
                short_value: None,
            },
        ] {
            assert_eq!(decode_write(&encode_write(&rec)).unwrap(), rec);
        }
    }

    #[test]
    fn lock_only_locks_round_trip_and_may_not_carry_a_value_into_their_record() {
        let mut l = lock(9);
        l.kind = MutationKind::Lock;
        l.short_value = None;
        assert_eq!(
            decode_lock_state(Some(&encode_lock(&l))).unwrap(),
            LockState::Locked(l)
        );
        let mut bad = encode_write(&WriteRecord {
            kind: WriteKind::Lock,
            start_ts: 8,
            short_value: None,
        });
        bad.truncate(9);
        bad.extend_from_slice(&[1, 0, 0, 0, 1, b'v']);
        assert!(decode_write(&bad).is_err(), "a lock record with a value");
    }

    #[test]
    fn column_qualifiers_do_not_collide() {
        assert_ne!(column_qualifier(b"ab", b"c"), column_qualifier(b"a", b"bc"));
        assert_eq!(
            split_column_qualifier(&column_qualifier(b"fam", b"q")).unwrap(),
            (b"fam".to_vec(), b"q".to_vec())
        );
        assert!(split_column_qualifier(&[5, b'a']).is_err());
    }

    /// HBase allows an empty qualifier, and so does `CellKey`: such a column's key is the
    /// family alone, and it splits back whole (scans and GC name columns from these keys).
    #[test]
    fn a_column_with_an_empty_qualifier_splits_back() {
        let encoded = column_qualifier(b"fam", b"");
        assert_eq!(encoded, b"\x03fam");
        assert_eq!(
            split_column_qualifier(&encoded).unwrap(),
            (b"fam".to_vec(), Vec::new())
        );
        assert!(split_column_qualifier(b"\x04fam").is_err());
    }
}
