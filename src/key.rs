//! Addresses of transactional cells, and how keys are printed. A leaf: the error type refers
//! to keys, so keys must not refer to it (their own validation error converts into
//! `Error::IllegalArgument`).

use std::fmt;

/// Bytes printed as HBase's `Bytes.toStringBinary` prints them: printable ASCII (space to `~`)
/// as is, except the backslash, and every other byte as `\xNN` in upper-case hex. Row keys,
/// columns and table names in errors and logs are printed this way, so that they read as in
/// the HBase shell and HBase's own logs, and a binary key stays unambiguous.
///
/// ```
/// use percolator::Binary;
/// assert_eq!(Binary(b"acct00").to_string(), "acct00");
/// assert_eq!(Binary(b"user\x00\xff\\").to_string(), r"user\x00\xFF\x5C");
/// assert_eq!(Binary(&7u32.to_be_bytes()).to_string(), r"\x00\x00\x00\x07");
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Binary<'a>(pub &'a [u8]);

impl fmt::Display for Binary<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const HEX: &[u8; 16] = b"0123456789ABCDEF";
        let mut rest = self.0;
        loop {
            let run = rest
                .iter()
                .position(|&b| !is_printable(b))
                .unwrap_or(rest.len());
            let (printable, tail) = rest.split_at(run);
            // Printable bytes are ASCII, hence UTF-8.
            f.write_str(std::str::from_utf8(printable).unwrap_or_default())?;
            let Some((&b, tail)) = tail.split_first() else {
                break;
            };
            let escape = [
                b'\\',
                b'x',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 0xf)],
            ];
            f.write_str(std::str::from_utf8(&escape).unwrap_or_default())?;
            rest = tail;
        }
        Ok(())
    }
}

/// Quoted, so that `{:?}` of a struct holding one still reads as a key.
impl fmt::Debug for Binary<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{self}\"")
    }
}

fn is_printable(b: u8) -> bool {
    (b' '..=b'~').contains(&b) && b != b'\\'
}

/// One transactional cell: table, row and user column `family:qualifier`.
///
/// ```
/// let key = percolator::CellKey::new("accounts", "alice", "f", "balance")?;
/// assert_eq!(key.to_string(), "accounts/alice/f:balance");
/// # Ok::<(), percolator::txn::InvalidKey>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CellKey {
    pub table: String,
    pub row: Vec<u8>,
    pub family: Vec<u8>,
    pub qualifier: Vec<u8>,
}

impl CellKey {
    /// Validates what the encodings rely on: a non-empty row and family (HBase rejects empty
    /// rows), a family of at most 255 bytes, and a table name of at most 1024 bytes.
    ///
    /// ```
    /// let key = percolator::CellKey::new("accounts", "alice", "f", "balance")?;
    /// assert_eq!(key.row, b"alice");
    /// assert!(percolator::CellKey::new("accounts", "", "f", "q").is_err(), "HBase rejects empty rows");
    /// # Ok::<(), percolator::txn::InvalidKey>(())
    /// ```
    pub fn new(
        table: impl Into<String>,
        row: impl Into<Vec<u8>>,
        family: impl Into<Vec<u8>>,
        qualifier: impl Into<Vec<u8>>,
    ) -> Result<CellKey, InvalidKey> {
        let key = CellKey {
            table: table.into(),
            row: row.into(),
            family: family.into(),
            qualifier: qualifier.into(),
        };
        let problem = if key.table.is_empty() || key.table.len() > 1024 {
            Some("table name must be 1 to 1024 bytes")
        } else if key.row.is_empty() {
            Some("row key must not be empty")
        } else if key.family.is_empty() || key.family.len() > 255 {
            Some("column family must be 1 to 255 bytes")
        } else if key.qualifier.len() > u16::MAX as usize {
            Some("qualifier must be at most 65535 bytes")
        } else {
            None
        };
        match problem {
            Some(why) => Err(InvalidKey(format!("{why}: {key}"))),
            None => Ok(key),
        }
    }
}

impl CellKey {
    /// `family:qualifier`, for error fields.
    ///
    /// ```
    /// let key = percolator::CellKey::new("t", "r", "f", "q")?;
    /// assert_eq!(key.column(), b"f:q");
    /// # Ok::<(), percolator::txn::InvalidKey>(())
    /// ```
    pub fn column(&self) -> Vec<u8> {
        [self.family.as_slice(), b":", self.qualifier.as_slice()].concat()
    }
}

/// `table/row/family:qualifier`, each part printed as [`Binary`] does.
///
/// ```
/// let key = percolator::CellKey::new("t", b"r\x01".to_vec(), "f", "q")?;
/// assert_eq!(key.to_string(), r"t/r\x01/f:q");
/// # Ok::<(), percolator::txn::InvalidKey>(())
/// ```
impl fmt::Display for CellKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{}/{}:{}",
            Binary(self.table.as_bytes()),
            Binary(&self.row),
            Binary(&self.family),
            Binary(&self.qualifier)
        )
    }
}

/// Why a [`CellKey`] was refused; becomes `Error::IllegalArgument` through `?`.
///
/// ```
/// let err = percolator::CellKey::new("t", "", "f", "q").unwrap_err();
/// let as_error: percolator::Error = err.into();
/// assert!(matches!(as_error, percolator::Error::IllegalArgument { .. }));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidKey(pub String);

impl fmt::Display for InvalidKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InvalidKey {}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Bytes.toStringBinary`: `ch >= ' ' && ch <= '~' && ch != '\\'` as is, else `\xNN`.
    #[test]
    fn binary_prints_every_byte_as_hbase_does() {
        for b in 0..=u8::MAX {
            let expected = if (0x20..=0x7e).contains(&b) && b != b'\\' {
                char::from(b).to_string()
            } else {
                format!("\\x{b:02X}")
            };
            assert_eq!(Binary(&[b]).to_string(), expected, "byte {b:#x}");
        }
        assert_eq!(Binary(b"").to_string(), "");
        assert_eq!(Binary(b"a b~").to_string(), "a b~");
        assert_eq!(
            Binary(b"\\x00").to_string(),
            r"\x5Cx00",
            "a literal escape stays apart"
        );
        assert_eq!(format!("{:?}", Binary(b"r\x01")), r#""r\x01""#);
    }
}
