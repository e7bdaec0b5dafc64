//! Addresses of transactional cells. A leaf: the error type refers to keys, so keys must not
//! refer to it (their own validation error converts into `Error::IllegalArgument`).

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

impl std::fmt::Display for CellKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}/{}/{}:{}",
            self.table,
            String::from_utf8_lossy(&self.row),
            String::from_utf8_lossy(&self.family),
            String::from_utf8_lossy(&self.qualifier)
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

impl std::fmt::Display for InvalidKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InvalidKey {}
