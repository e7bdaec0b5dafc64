//! The meta table: transactional state that must live in HBase, so every client and tool
//! sees the same (a table's migration marker, its observed columns, the GC safe point).
//!
//! Its rows' layout is `format::meta`'s; this module creates the table, reads and caches
//! rows, and does not interpret them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::RwLock;

use crate::error::{Error, Result};
use crate::format::meta::META_FAMILY;
use crate::hbase::{FamilyDescriptor, Get, RowResult, TableDescriptor};
use crate::txn::refresh::Refreshed;
use crate::txn::store::HBaseAccess;
use crate::txn::FastMap;

/// How long a client trusts a cached meta row before it reads it again. Whoever changes meta
/// state that clients act on (a migration marker, the observed columns) waits this long
/// before relying on every client having seen it.
pub(crate) const META_REFRESH: Duration = Duration::from_secs(5);

/// The meta table's descriptor: one family, one version, kept forever.
///
/// ```
/// let d = percolator::txn::meta_table_descriptor("percolator_meta");
/// assert_eq!(d.families[0].max_versions, Some(1));
/// ```
pub fn meta_table_descriptor(name: &str) -> TableDescriptor {
    TableDescriptor::new(name).family(FamilyDescriptor::new(META_FAMILY).max_versions(1))
}

/// One meta row as this client knows it.
pub(crate) type RowCell = Arc<Refreshed<Arc<RowResult>>>;

/// Meta rows read by this client, each trusted for [`META_REFRESH`] (see `refresh`).
#[derive(Default)]
pub(crate) struct MetaCache {
    rows: RwLock<FastMap<Vec<u8>, RowCell>>,
}

impl MetaCache {
    /// `row` of the meta table `meta_table`, read again once past half of [`META_REFRESH`]
    /// by one caller at a time. A missing meta table reads as empty rows: tables made
    /// transactional before it existed have no meta state.
    pub async fn row(
        &self,
        store: &dyn HBaseAccess,
        meta_table: &str,
        row: &[u8],
    ) -> Result<Arc<RowResult>> {
        // Every transaction comes here: the common case clones nothing but the row's `Arc`.
        if let Some(young) = self.young(row) {
            return Ok(young);
        }
        self.cell(row)
            .get(Instant::now, || async {
                Ok(Arc::new(read_row(store, meta_table, row).await?))
            })
            .await
    }

    /// `row` as cached, if it is young: what [`row`](Self::row) returns without a read or a
    /// wait.
    fn young(&self, row: &[u8]) -> Option<Arc<RowResult>> {
        self.rows
            .read()
            .get(row)
            .and_then(|c| c.young(Instant::now()))
    }

    /// Reads `row` now, whatever the cache holds.
    pub async fn refresh(
        &self,
        store: &dyn HBaseAccess,
        meta_table: &str,
        row: &[u8],
    ) -> Result<Arc<RowResult>> {
        let asked = Instant::now();
        let fresh = Arc::new(read_row(store, meta_table, row).await?);
        self.cell(row).put(fresh.clone(), asked);
        Ok(fresh)
    }

    /// `row`'s place in the cache, for good: a cell is never dropped once made.
    pub fn cell(&self, row: &[u8]) -> RowCell {
        if let Some(cell) = self.rows.read().get(row) {
            return cell.clone();
        }
        let mut rows = self.rows.write();
        rows.entry(row.to_vec())
            .or_insert_with(|| Arc::new(Refreshed::new(META_REFRESH)))
            .clone()
    }
}

/// One meta row, uncached (tools that change meta state read it this way).
pub(crate) async fn read_row(
    store: &dyn HBaseAccess,
    meta_table: &str,
    row: &[u8],
) -> Result<RowResult> {
    let get = Get::new(row.to_vec()).family(META_FAMILY);
    match store.get_many(meta_table, std::slice::from_ref(&get)).await {
        Ok(mut rows) => Ok(rows.pop().unwrap_or_default()),
        Err(Error::TableNotFound { .. }) => Ok(RowResult::default()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
#[path = "meta_tests.rs"]
mod tests;
