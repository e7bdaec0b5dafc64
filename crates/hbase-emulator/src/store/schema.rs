//! Table names and the per-family settings the read and write paths obey.

use std::collections::BTreeMap;
use std::fmt;

use crate::error::{ServerError, ServerResult};
use percolator_thrift::hbase::{TColumnFamilyDescriptor, TDurability};

pub const DEFAULT_NAMESPACE: &str = "default";
pub const SYSTEM_NAMESPACE: &str = "hbase";
/// HBase's `HConstants.FOREVER` TTL.
pub const TTL_FOREVER: i32 = i32::MAX;

/// A table's namespace and qualifier, validated the way `TableName.valueOf` does.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TableName {
    namespace: String,
    qualifier: String,
}

impl TableName {
    /// Parses the data methods' `"ns:name"` (or `"name"` in the default namespace).
    pub fn parse(full: &[u8]) -> ServerResult<Self> {
        let full = utf8(full, "table name")?;
        match full.split_once(':') {
            Some((ns, q)) => Self::from_parts(ns, q),
            None => Self::from_parts(DEFAULT_NAMESPACE, full),
        }
    }

    /// From a `TTableName` (an absent or empty namespace means `default`).
    pub fn from_thrift(ns: Option<&[u8]>, qualifier: &[u8]) -> ServerResult<Self> {
        let ns = match ns {
            Some(ns) if !ns.is_empty() => utf8(ns, "namespace")?,
            _ => DEFAULT_NAMESPACE,
        };
        Self::from_parts(ns, utf8(qualifier, "table qualifier")?)
    }

    fn from_parts(ns: &str, qualifier: &str) -> ServerResult<Self> {
        validate_namespace(ns)?;
        validate_qualifier(qualifier)?;
        Ok(TableName {
            namespace: ns.to_owned(),
            qualifier: qualifier.to_owned(),
        })
    }

    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    pub fn qualifier(&self) -> &str {
        &self.qualifier
    }
}

/// `TableName.getNameAsString()`: the default namespace is left out.
impl fmt::Display for TableName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.namespace == DEFAULT_NAMESPACE {
            f.write_str(&self.qualifier)
        } else {
            write!(f, "{}:{}", self.namespace, self.qualifier)
        }
    }
}

fn utf8<'a>(bytes: &'a [u8], what: &str) -> ServerResult<&'a str> {
    std::str::from_utf8(bytes)
        .map_err(|_| ServerError::internal(format!("{what} is not valid UTF-8: {bytes:?}")))
}

pub fn validate_namespace(ns: &str) -> ServerResult<()> {
    if ns.is_empty() {
        return Err(ServerError::internal("Namespace name must not be empty"));
    }
    if let Some((i, c)) = ns
        .char_indices()
        .find(|(_, c)| !(c.is_alphanumeric() || *c == '_'))
    {
        return Err(ServerError::internal(format!(
            "Illegal character <{c}> at {i}. Namespaces may only contain 'alphanumeric \
             characters' from any language and digits: {ns}"
        )));
    }
    Ok(())
}

fn validate_qualifier(q: &str) -> ServerResult<()> {
    if q.is_empty() {
        return Err(ServerError::internal("Table qualifier must not be empty"));
    }
    if q.starts_with('.') || q.starts_with('-') {
        return Err(ServerError::internal(format!(
            "Illegal first character <{}> at 0. User-space table qualifiers can only start \
             with 'alphanumeric characters' from any language: {q}",
            &q[..1]
        )));
    }
    if let Some((i, c)) = q
        .char_indices()
        .find(|(_, c)| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.')))
    {
        return Err(ServerError::internal(format!(
            "Illegal character code:{}, <{c}> at {i}. User-space table qualifiers may only \
             contain 'alphanumeric characters' and digits: {q}",
            c as u32
        )));
    }
    Ok(())
}

/// The settings of one column family that change what reads return.
#[derive(Clone, Debug, PartialEq)]
pub struct FamilySchema {
    pub name: Vec<u8>,
    /// VERSIONS: at most this many versions of a column are kept and returned.
    pub max_versions: u32,
    /// MIN_VERSIONS: the newest versions kept even when their TTL has passed.
    pub min_versions: u32,
    /// TTL in seconds against the cell timestamp read as epoch ms; `TTL_FOREVER` = no expiry.
    pub ttl_seconds: i32,
    /// The full descriptor with defaults filled in, reported back by the admin calls.
    pub descriptor: TColumnFamilyDescriptor,
}

impl FamilySchema {
    /// A cell is hidden once `ts < now_ms - ttl * 1000`.
    pub fn expired(&self, ts: i64, now_ms: i64) -> bool {
        if self.ttl_seconds == TTL_FOREVER {
            return false;
        }
        let oldest_alive = i128::from(now_ms) - i128::from(self.ttl_seconds) * 1000;
        i128::from(ts) < oldest_alive
    }

    /// HBase's column tracker: whether the `n`th readable version (newest first, from 0) at
    /// `ts` is kept when at most `limit` are wanted. Expired versions count only while
    /// MIN_VERSIONS still wants them; once one stops, so do all older ones.
    pub fn keeps(&self, n: usize, ts: i64, now_ms: i64, limit: usize) -> bool {
        n < limit && (n < self.min_versions as usize || !self.expired(ts, now_ms))
    }

    /// The family with HBase 2.x defaults (VERSIONS 1, no TTL).
    #[cfg(test)]
    pub fn with_defaults(name: &[u8]) -> Self {
        FamilySchema {
            name: name.to_vec(),
            max_versions: 1,
            min_versions: 0,
            ttl_seconds: TTL_FOREVER,
            descriptor: bare_descriptor(name),
        }
    }
}

/// A descriptor with nothing but a name, as a client may send it.
#[cfg(test)]
pub fn bare_descriptor(name: &[u8]) -> TColumnFamilyDescriptor {
    TColumnFamilyDescriptor {
        name: name.to_vec(),
        attributes: None,
        configuration: None,
        block_size: None,
        bloomn_filter_type: None,
        compression_type: None,
        dfs_replication: None,
        data_block_encoding: None,
        keep_deleted_cells: None,
        max_versions: None,
        min_versions: None,
        scope: None,
        time_to_live: None,
        block_cache_enabled: None,
        cache_blooms_on_write: None,
        cache_data_on_write: None,
        cache_indexes_on_write: None,
        compress_tags: None,
        evict_blocks_on_close: None,
        in_memory: None,
    }
}

/// A table's families and table-level attributes.
#[derive(Clone, Debug, PartialEq)]
pub struct TableSchema {
    pub families: BTreeMap<Vec<u8>, FamilySchema>,
    pub attributes: BTreeMap<Vec<u8>, Vec<u8>>,
    pub durability: TDurability,
}

impl TableSchema {
    pub fn family(&self, name: &[u8]) -> Option<&FamilySchema> {
        self.families.get(name)
    }

    /// The descriptor text HBase puts in exception messages, e.g.
    /// `'t1', {NAME => 'f', VERSIONS => '1', TTL => 'FOREVER'}`.
    pub fn describe(&self, table: &TableName) -> String {
        let mut out = format!("'{table}'");
        for f in self.families.values() {
            let ttl = if f.ttl_seconds == TTL_FOREVER {
                "FOREVER".to_owned()
            } else {
                format!("{} SECONDS", f.ttl_seconds)
            };
            out.push_str(&format!(
                ", {{NAME => '{}', VERSIONS => '{}', MIN_VERSIONS => '{}', TTL => '{}'}}",
                String::from_utf8_lossy(&f.name),
                f.max_versions,
                f.min_versions,
                ttl
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_names_parse_like_java() {
        let t = TableName::parse(b"ns:t1").unwrap();
        assert_eq!((t.namespace(), t.qualifier()), ("ns", "t1"));
        assert_eq!(t.to_string(), "ns:t1");
        let d = TableName::parse(b"t1").unwrap();
        assert_eq!(d.namespace(), "default");
        assert_eq!(d.to_string(), "t1");
        assert_eq!(TableName::from_thrift(None, b"t1").unwrap(), d);
        assert_eq!(TableName::from_thrift(Some(b""), b"t1").unwrap(), d);
    }

    #[test]
    fn illegal_table_names_are_runtime_errors() {
        for bad in [
            &b""[..],
            b"a b",
            b".x",
            b"-x",
            b"ns:",
            b"n-s:t",
            b"a:b:c",
            b"\xff",
        ] {
            assert!(
                matches!(TableName::parse(bad), Err(ServerError::Internal(_))),
                "{bad:?} should be rejected"
            );
        }
    }

    #[test]
    fn ttl_is_measured_against_the_cell_timestamp_in_ms() {
        let mut f = FamilySchema::with_defaults(b"f");
        f.ttl_seconds = 10;
        let now = 100_000;
        assert!(!f.expired(90_000, now));
        assert!(f.expired(89_999, now));
        f.ttl_seconds = TTL_FOREVER;
        assert!(!f.expired(i64::MIN, now));
    }
}
