//! One row's cells and delete markers.
//!
//! HBase never removes data on delete: it writes markers that hide every put at or below their
//! timestamp, including puts written later, until a major compaction (which never happens
//! here). So markers are kept forever and consulted on every read. Versions that a marker hides,
//! and versions beyond the family's VERSIONS, can never be returned again; they are dropped at
//! write time, which is the state a real region reaches after its next flush.

use std::collections::{BTreeMap, BTreeSet};

use super::schema::FamilySchema;
use super::versions::Versions;

#[derive(Debug, Default)]
pub struct Row {
    pub(super) families: BTreeMap<Vec<u8>, FamilyData>,
}

#[derive(Debug, Default)]
pub(super) struct FamilyData {
    /// Highest DeleteFamily marker: hides every column's versions at or below it.
    family_delete: Option<i64>,
    /// DeleteFamilyVersion markers: hide every column's version at exactly that timestamp.
    family_version_deletes: BTreeSet<i64>,
    pub(super) columns: BTreeMap<Vec<u8>, ColumnData>,
    /// Whether the table's list of this family's rows has this row (`Table::index_families`).
    pub(super) listed: bool,
}

#[derive(Debug, Default)]
pub(super) struct ColumnData {
    pub(super) versions: Versions,
    /// Highest DeleteColumn(s) marker: hides versions at or below it.
    columns_delete: Option<i64>,
    /// Single-version Delete markers: hide the version at exactly that timestamp.
    version_deletes: BTreeSet<i64>,
}

impl FamilyData {
    /// Whether any column stores a version (markers alone do not count: they return nothing).
    pub(super) fn stores_versions(&self) -> bool {
        self.columns.values().any(|c| !c.versions.is_empty())
    }

    fn hides(&self, ts: i64) -> bool {
        self.family_delete.is_some_and(|d| ts <= d) || self.family_version_deletes.contains(&ts)
    }

    /// Versions of `column` below `max` (exclusive) not hidden by any marker, newest first.
    /// Seeks to `max` as HBase's scanners do, so a read in the past costs no more than one of
    /// the present.
    pub(super) fn live_versions<'a>(
        &'a self,
        column: &'a ColumnData,
        max: i64,
    ) -> impl Iterator<Item = (i64, &'a Vec<u8>)> + 'a {
        column
            .versions
            .newest_below(max)
            .filter(move |(ts, _)| !self.hides(*ts) && !column.hides(*ts))
    }

    /// Drops what can never be read again: hidden versions, and versions past VERSIONS.
    fn prune_column(&mut self, qualifier: &[u8], schema: &FamilySchema) {
        let Some(column) = self.columns.get(qualifier) else {
            return;
        };
        let dead: Vec<i64> = column
            .versions
            .timestamps()
            .filter(|ts| self.hides(*ts) || column.hides(*ts))
            .collect();
        let column = self.columns.get_mut(qualifier).expect("looked up above");
        // `dead` is in the versions' order, oldest first.
        column
            .versions
            .retain(|ts| dead.binary_search(&ts).is_err());
        trim(column, schema);
    }

    fn prune_all(&mut self, schema: &FamilySchema) {
        let qualifiers: Vec<Vec<u8>> = self.columns.keys().cloned().collect();
        for q in qualifiers {
            self.prune_column(&q, schema);
        }
    }
}

/// Drops the oldest versions past the family's VERSIONS.
fn trim(column: &mut ColumnData, schema: &FamilySchema) {
    while column.versions.len() > schema.max_versions as usize {
        column.versions.pop_oldest();
    }
}

impl ColumnData {
    fn hides(&self, ts: i64) -> bool {
        self.columns_delete.is_some_and(|d| ts <= d) || self.version_deletes.contains(&ts)
    }
}

impl Row {
    /// Writes one version; a version at the same timestamp is replaced (the later write wins).
    pub fn put(&mut self, schema: &FamilySchema, qualifier: &[u8], ts: i64, value: Vec<u8>) {
        let family = self.families.entry(schema.name.clone()).or_default();
        let hidden_by_family = family.hides(ts);
        let column = family.columns.entry(qualifier.to_vec()).or_default();
        // What was stored is already pruned, so only the new version can be hidden, and
        // only the oldest can fall past VERSIONS: no walk over a long history per put.
        if hidden_by_family || column.hides(ts) {
            return;
        }
        column.versions.insert(ts, value);
        trim(column, schema);
    }

    /// A single-version Delete marker at exactly `ts`.
    pub fn delete_version(&mut self, schema: &FamilySchema, qualifier: &[u8], ts: i64) {
        let family = self.families.entry(schema.name.clone()).or_default();
        let column = family.columns.entry(qualifier.to_vec()).or_default();
        column.version_deletes.insert(ts);
        column.versions.remove(ts);
    }

    /// A DeleteColumn marker: every version of the column at or below `ts`.
    pub fn delete_columns(&mut self, schema: &FamilySchema, qualifier: &[u8], ts: i64) {
        let family = self.families.entry(schema.name.clone()).or_default();
        let column = family.columns.entry(qualifier.to_vec()).or_default();
        column.columns_delete = Some(column.columns_delete.map_or(ts, |d| d.max(ts)));
        family.prune_column(qualifier, schema);
    }

    /// A DeleteFamily marker: every column of the family at or below `ts`.
    pub fn delete_family(&mut self, schema: &FamilySchema, ts: i64) {
        let family = self.families.entry(schema.name.clone()).or_default();
        family.family_delete = Some(family.family_delete.map_or(ts, |d| d.max(ts)));
        family.prune_all(schema);
    }

    /// A DeleteFamilyVersion marker: every column of the family at exactly `ts`.
    pub fn delete_family_version(&mut self, schema: &FamilySchema, ts: i64) {
        let family = self.families.entry(schema.name.clone()).or_default();
        family.family_version_deletes.insert(ts);
        family.prune_all(schema);
    }

    /// Readable versions of one column, newest first: not deleted, and not expired unless
    /// MIN_VERSIONS keeps them. This is what checkAndMutate, increment and "delete the
    /// latest version" look at.
    pub fn readable_versions<'a>(
        &'a self,
        schema: &'a FamilySchema,
        qualifier: &[u8],
        now_ms: i64,
    ) -> impl Iterator<Item = (i64, &'a Vec<u8>)> + use<'a> {
        let found = self
            .families
            .get(&schema.name)
            .and_then(|family| Some((family, family.columns.get(qualifier)?)));
        found
            .into_iter()
            .flat_map(|(family, column)| family.live_versions(column, i64::MAX))
            .enumerate()
            .take_while(move |&(n, (ts, _))| {
                schema.keeps(n, ts, now_ms, schema.max_versions as usize)
            })
            .map(|(_, version)| version)
    }

    /// Removes a family's data and markers (the family was dropped from the table).
    pub fn drop_family(&mut self, family: &[u8]) {
        self.families.remove(family);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fam(versions: u32) -> FamilySchema {
        let mut f = FamilySchema::with_defaults(b"f");
        f.max_versions = versions;
        f
    }

    fn stamps(row: &Row, f: &FamilySchema, q: &[u8]) -> Vec<i64> {
        row.readable_versions(f, q, 1_000)
            .map(|(ts, _)| ts)
            .collect()
    }

    #[test]
    fn same_timestamp_put_replaces_the_value() {
        let f = fam(3);
        let mut row = Row::default();
        row.put(&f, b"q", 5, b"a".to_vec());
        row.put(&f, b"q", 5, b"b".to_vec());
        assert_eq!(
            row.readable_versions(&f, b"q", 0).collect::<Vec<_>>(),
            vec![(5, &b"b".to_vec())]
        );
    }

    #[test]
    fn versions_beyond_the_family_limit_are_dropped_newest_kept() {
        let f = fam(2);
        let mut row = Row::default();
        for ts in [1, 4, 3, 2] {
            row.put(&f, b"q", ts, vec![ts as u8]);
        }
        assert_eq!(stamps(&row, &f, b"q"), vec![4, 3]);
    }

    #[test]
    fn markers_hide_puts_written_after_them() {
        let f = fam(5);
        let mut row = Row::default();
        row.delete_columns(&f, b"q", 10);
        row.put(&f, b"q", 10, b"x".to_vec());
        row.put(&f, b"q", 9, b"x".to_vec());
        row.put(&f, b"q", 11, b"y".to_vec());
        assert_eq!(stamps(&row, &f, b"q"), vec![11]);
    }

    #[test]
    fn a_hidden_put_does_not_push_a_live_version_past_versions() {
        let f = fam(1);
        let mut row = Row::default();
        row.put(&f, b"q", 20, b"live".to_vec());
        row.delete_version(&f, b"q", 25);
        row.put(&f, b"q", 25, b"hidden".to_vec());
        assert_eq!(stamps(&row, &f, b"q"), vec![20]);
    }

    #[test]
    fn single_version_delete_reveals_the_older_version() {
        let f = fam(3);
        let mut row = Row::default();
        row.put(&f, b"q", 5, b"old".to_vec());
        row.put(&f, b"q", 10, b"new".to_vec());
        row.delete_version(&f, b"q", 10);
        assert_eq!(stamps(&row, &f, b"q"), vec![5]);
        // A later put at the deleted timestamp stays hidden.
        row.put(&f, b"q", 10, b"again".to_vec());
        assert_eq!(stamps(&row, &f, b"q"), vec![5]);
    }

    #[test]
    fn family_markers_cover_every_column() {
        let f = fam(3);
        let mut row = Row::default();
        row.put(&f, b"a", 5, b"1".to_vec());
        row.put(&f, b"b", 7, b"1".to_vec());
        row.put(&f, b"b", 8, b"1".to_vec());
        row.delete_family(&f, 7);
        assert!(stamps(&row, &f, b"a").is_empty());
        assert_eq!(stamps(&row, &f, b"b"), vec![8]);
        row.delete_family_version(&f, 8);
        assert!(stamps(&row, &f, b"b").is_empty());
        row.put(&f, b"c", 8, b"1".to_vec());
        assert!(stamps(&row, &f, b"c").is_empty());
    }

    #[test]
    fn expired_versions_are_unreadable_unless_min_versions_keeps_them() {
        let mut f = fam(3);
        f.ttl_seconds = 1;
        let mut row = Row::default();
        row.put(&f, b"q", 100, b"a".to_vec());
        row.put(&f, b"q", 200, b"b".to_vec());
        assert_eq!(row.readable_versions(&f, b"q", 5_000).count(), 0);
        f.min_versions = 1;
        assert_eq!(
            row.readable_versions(&f, b"q", 5_000).collect::<Vec<_>>(),
            vec![(200, &b"b".to_vec())]
        );
    }
}
