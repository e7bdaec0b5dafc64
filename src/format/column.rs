//! How a user column is named inside the percolator families (lock, write, notify, ack):
//! `family length u8 || family || qualifier`, so that distinct (family, qualifier) pairs never
//! collide, and the empty qualifier names no column.

use super::bytes::{CodecError, Decoded};

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
