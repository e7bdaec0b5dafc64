//! The lock cell of a column, in the lock family under the column's qualifier (a row's one
//! lock, in a table that locks rows, under the empty qualifier).
//!
//! Its byte order carries the prewrite rule (docs/design.md invariant 2):
//! - released: `0x00 || BE u64 M`, M the highest commit_ts or rolled-back start_ts ever
//!   recorded on the cell;
//! - locked: `0x01 || format u8 || start_ts u64 || kind u8 || wall_ms u64 || ttl_ms u64 ||
//!   owner (u16 len) || primary table (u16 len) || primary row (u32 len) || primary family
//!   (u16 len) || primary qualifier (u16 len) || short value (flag u8, then u32 len)`, and in
//!   format 2 then `primary_row u8 || has_columns u8 [|| count u32 || per column: family (u16
//!   len) || qualifier (u16 len) || kind u8 || short value (flag, u32 len)]`. Kinds: 1 put,
//!   2 delete, 3 lock only.
//!
//! A prewrite at `start_ts` is then one `checkAndMutate(lock, GREATER, 0x00 || BE(start_ts))`,
//! which HBase evaluates as `value > cell`: true exactly when the cell is released with
//! M < start_ts.

use std::borrow::Cow;

use crate::key::CellKey;

use super::bytes::{CodecError, Decoded, Reader, Writer};
use super::column::{column_qualifier, split_column_qualifier};

const RELEASED: u8 = 0x00;
const LOCKED: u8 = 0x01;
pub(super) const LOCK_FORMAT: u8 = 1;
/// A lock of a row-granularity transaction (a row's one lock, or a cell lock whose primary is
/// a row lock): the format 1 fields, then the row part. Format 1 stays for everything else, so
/// cell-granularity tables keep the bytes they always had.
pub(super) const LOCK_FORMAT_ROW: u8 = 2;

/// The lock-family qualifier of a row's one lock in a table that locks rows (docs/design.md
/// invariant 14). Every column's qualifier starts with its family's length, at least 1, so the
/// empty qualifier never names a column.
pub const ROW_LOCK_QUALIFIER: &[u8] = b"";

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
