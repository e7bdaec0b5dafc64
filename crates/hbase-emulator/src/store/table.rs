//! One table: its schema and state, and its rows.
//!
//! Rows live in a `RwLock<BTreeMap<row key, Arc<Mutex<Row>>>>`. The map lock is held only to
//! find or insert a row (or to copy out a batch of row handles for a scan); all reads and
//! writes of a row's cells happen under that row's own mutex, which is HBase's row lock. So
//! writers to different rows never wait on each other for longer than a map lookup.
//!
//! Each family also lists the rows that store a version in it, as a region server keeps a
//! store per family: a scan of one family walks only those rows, however many rows the table
//! has (observers scan a sparse notification family this way). Writers update the list under
//! the row lock, after the row's own change, so a scan never misses a row that has the family.

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::ops::Bound;
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use super::row::Row;
use super::schema::{TableName, TableSchema};
use crate::error::{ServerError, ServerResult};

pub type RowHandle = Arc<Mutex<Row>>;
/// Rows by key, in key order.
type Rows = BTreeMap<Vec<u8>, RowHandle>;

#[derive(Debug)]
struct TableState {
    schema: Arc<TableSchema>,
    enabled: bool,
}

#[derive(Debug)]
pub struct Table {
    name: TableName,
    /// Creation time in ms: the region id of every region of the table.
    region_id: i64,
    /// The keys that start the regions after the first, sorted: where `createTable` split it.
    /// Regions only bound what the locations report; the rows live in one map.
    split_keys: Vec<Vec<u8>>,
    state: RwLock<TableState>,
    rows: RwLock<Rows>,
    /// Per family, the rows storing at least one version in it (see the module docs).
    family_rows: RwLock<HashMap<Vec<u8>, Rows>>,
}

impl Table {
    #[cfg(test)]
    pub fn new(name: TableName, schema: TableSchema, created_ms: i64) -> Self {
        Table::split(name, schema, created_ms, Vec::new())
    }

    /// A table of `split_keys.len() + 1` regions (`split_keys` sorted, unique, none empty).
    pub fn split(
        name: TableName,
        schema: TableSchema,
        created_ms: i64,
        split_keys: Vec<Vec<u8>>,
    ) -> Self {
        Table {
            name,
            region_id: created_ms,
            split_keys,
            state: RwLock::new(TableState {
                schema: Arc::new(schema),
                enabled: true,
            }),
            rows: RwLock::new(BTreeMap::new()),
            family_rows: RwLock::new(HashMap::new()),
        }
    }

    pub fn name(&self) -> &TableName {
        &self.name
    }

    pub fn region_id(&self) -> i64 {
        self.region_id
    }

    /// Every region's `[start, end)`, in key order; an empty end is the table's end.
    pub fn regions(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        let starts = std::iter::once(Vec::new()).chain(self.split_keys.iter().cloned());
        let ends = self
            .split_keys
            .iter()
            .cloned()
            .chain(std::iter::once(Vec::new()));
        starts.zip(ends).collect()
    }

    pub fn schema(&self) -> Arc<TableSchema> {
        self.state.read().schema.clone()
    }

    pub fn is_enabled(&self) -> bool {
        self.state.read().enabled
    }

    /// Flips the enabled flag; `false` if it already had that value.
    pub fn set_enabled(&self, enabled: bool) -> bool {
        let mut state = self.state.write();
        let changed = state.enabled != enabled;
        state.enabled = enabled;
        changed
    }

    /// The schema for a data operation: fails like a region server when the table is disabled.
    pub fn schema_for_data(&self) -> ServerResult<Arc<TableSchema>> {
        let state = self.state.read();
        if !state.enabled {
            return Err(ServerError::table_disabled(&self.name));
        }
        Ok(state.schema.clone())
    }

    /// Replaces the schema with what `change` makes of the current one (serialised against
    /// other schema changes); data of families the new schema no longer has is dropped.
    pub fn update_schema(
        &self,
        change: impl FnOnce(&TableSchema) -> ServerResult<TableSchema>,
    ) -> ServerResult<()> {
        let dropped: Vec<Vec<u8>> = {
            let mut state = self.state.write();
            let new = change(&state.schema)?;
            let old = std::mem::replace(&mut state.schema, Arc::new(new));
            old.families
                .keys()
                .filter(|f| !state.schema.families.contains_key(*f))
                .cloned()
                .collect()
        };
        if !dropped.is_empty() {
            let mut family_rows = self.family_rows.write();
            for family in &dropped {
                family_rows.remove(family);
            }
            drop(family_rows);
            for handle in self.all_rows() {
                let mut row = handle.lock();
                for family in &dropped {
                    row.drop_family(family);
                }
            }
        }
        Ok(())
    }

    /// `NoSuchColumnFamilyException` with the region and descriptor text HBase prints.
    pub fn no_such_family(&self, schema: &TableSchema, family: &[u8]) -> ServerError {
        ServerError::no_such_family(format!(
            "Column family {} does not exist in region {} in table {}",
            String::from_utf8_lossy(family),
            self.region_name(),
            schema.describe(&self.name)
        ))
    }

    /// `table,,regionId.encoded.` like HBase's region names (the encoded part is a hash).
    pub fn region_name(&self) -> String {
        let mut hex = String::new();
        for seed in 0u8..2 {
            let mut h = DefaultHasher::new();
            (seed, &self.name, self.region_id).hash(&mut h);
            hex.push_str(&format!("{:016x}", h.finish()));
        }
        format!("{},,{}.{}.", self.name, self.region_id, hex)
    }

    pub fn row(&self, key: &[u8]) -> Option<RowHandle> {
        self.rows.read().get(key).cloned()
    }

    pub fn row_or_insert(&self, key: &[u8]) -> RowHandle {
        if let Some(row) = self.row(key) {
            return row;
        }
        self.rows.write().entry(key.to_vec()).or_default().clone()
    }

    /// Up to `max` rows within the bounds, ascending (or descending when `reversed`): every
    /// row, or with `family` only the rows storing a version in that family.
    pub fn rows_in_range(
        &self,
        family: Option<&[u8]>,
        lower: Bound<&[u8]>,
        upper: Bound<&[u8]>,
        reversed: bool,
        max: usize,
    ) -> Vec<(Vec<u8>, RowHandle)> {
        if range_is_empty(lower, upper) {
            return Vec::new();
        }
        let pick = |rows: &Rows| {
            let range = rows.range::<[u8], _>((lower, upper));
            let pick = |(k, v): (&Vec<u8>, &RowHandle)| (k.clone(), v.clone());
            if reversed {
                range.rev().take(max).map(pick).collect()
            } else {
                range.take(max).map(pick).collect()
            }
        };
        match family {
            None => pick(&self.rows.read()),
            Some(family) => self
                .family_rows
                .read()
                .get(family)
                .map_or_else(Vec::new, pick),
        }
    }

    /// Brings the lists of `families` in step with the row `key`, locked by the caller, which
    /// has just changed them: each with whether the change deleted anything there (puts only
    /// add versions, so a listed family that was only put to needs no look). The row records
    /// whether it is listed, so the table's lock is taken only when that changes.
    pub fn index_families<'f>(
        &self,
        key: &[u8],
        handle: &RowHandle,
        row: &mut Row,
        families: impl IntoIterator<Item = (&'f [u8], bool)>,
    ) {
        for (family, deleted) in families {
            let Some(data) = row.families.get_mut(family) else {
                continue;
            };
            if data.listed && !deleted {
                continue;
            }
            let stored = data.stores_versions();
            if stored == data.listed {
                continue;
            }
            data.listed = stored;
            // A write that took its handle before a truncate must not list a row the table
            // no longer has.
            if stored && !self.holds(key, handle) {
                continue;
            }
            let mut family_rows = self.family_rows.write();
            if stored {
                family_rows
                    .entry(family.to_vec())
                    .or_default()
                    .insert(key.to_vec(), Arc::clone(handle));
            } else if let Some(rows) = family_rows.get_mut(family) {
                rows.remove(key);
            }
        }
    }

    /// Whether `handle` is the table's row `key` (not one a truncate has dropped).
    fn holds(&self, key: &[u8], handle: &RowHandle) -> bool {
        self.rows
            .read()
            .get(key)
            .is_some_and(|h| Arc::ptr_eq(h, handle))
    }

    fn all_rows(&self) -> Vec<RowHandle> {
        self.rows.read().values().cloned().collect()
    }

    /// Drops every row (truncate).
    pub fn clear(&self) {
        self.rows.write().clear();
        self.family_rows.write().clear();
    }
}

/// BTreeMap::range panics on an inverted range or `(Excluded(x), Excluded(x))`.
fn range_is_empty(lower: Bound<&[u8]>, upper: Bound<&[u8]>) -> bool {
    match (lower, upper) {
        (Bound::Unbounded, _) | (_, Bound::Unbounded) => false,
        (Bound::Included(l), Bound::Included(u)) => l > u,
        (Bound::Included(l), Bound::Excluded(u))
        | (Bound::Excluded(l), Bound::Included(u))
        | (Bound::Excluded(l), Bound::Excluded(u)) => l >= u,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use percolator_thrift::hbase::TDurability;

    fn table() -> Table {
        let schema = TableSchema {
            families: BTreeMap::new(),
            attributes: BTreeMap::new(),
            durability: TDurability::USE_DEFAULT,
        };
        Table::new(TableName::parse(b"t").unwrap(), schema, 1)
    }

    fn keys(rows: Vec<(Vec<u8>, RowHandle)>) -> Vec<Vec<u8>> {
        rows.into_iter().map(|(k, _)| k).collect()
    }

    #[test]
    fn range_listing_handles_every_bound_shape_without_panicking() {
        let t = table();
        for k in [&b"a"[..], b"b", b"c"] {
            t.row_or_insert(k);
        }
        let b = |s: &'static [u8]| Bound::Included(s);
        let x = |s: &'static [u8]| Bound::Excluded(s);
        assert_eq!(
            keys(t.rows_in_range(None, b(b"a"), x(b"c"), false, 10)),
            vec![b"a".to_vec(), b"b".to_vec()]
        );
        assert_eq!(
            keys(t.rows_in_range(None, x(b"a"), b(b"c"), true, 10)),
            vec![b"c".to_vec(), b"b".to_vec()]
        );
        assert!(t
            .rows_in_range(None, x(b"b"), x(b"b"), false, 10)
            .is_empty());
        assert!(t
            .rows_in_range(None, b(b"c"), x(b"a"), false, 10)
            .is_empty());
        assert_eq!(
            t.rows_in_range(None, Bound::Unbounded, Bound::Unbounded, false, 2)
                .len(),
            2
        );
    }

    #[test]
    fn disabled_tables_refuse_data_operations() {
        let t = table();
        assert!(t.set_enabled(false));
        assert!(!t.set_enabled(false));
        let err = t.schema_for_data().unwrap_err();
        assert!(err.to_string().contains("TableNotEnabledException"));
    }
}
