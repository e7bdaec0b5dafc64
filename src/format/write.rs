//! The write record of a column, in the write family under the column's qualifier, at
//! version commit_ts (a rollback's at start_ts): `kind u8 || start_ts u64 || short value (flag
//! u8, then u32 len)`. Kinds: 1 put, 2 delete, 3 rollback, 4 lock only; only a put carries a
//! value, and only when it is short (the value is otherwise the data cell at start_ts).

use super::bytes::{CodecError, Decoded, Reader, Writer};

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
