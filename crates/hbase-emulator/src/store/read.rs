//! The read path shared by Get and Scan: column selection, time ranges, delete markers, TTL and
//! MIN_VERSIONS, filters, then the version limit, in the order HBase's query matcher applies them.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::row::Row;
use super::schema::TableSchema;
use crate::cell::Cell;
use crate::error::{ServerError, ServerResult};
use crate::filter::{Filter, FilterState};

/// `[min, max)`: the maximum is exclusive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeRange {
    pub min: i64,
    pub max: i64,
}

impl TimeRange {
    pub const ALL: TimeRange = TimeRange {
        min: 0,
        max: i64::MAX,
    };

    /// Java's `new TimeRange(min, max)`: negative or inverted ranges are runtime errors.
    pub fn new(min: i64, max: i64) -> ServerResult<Self> {
        if min < 0 || max < 0 {
            return Err(ServerError::internal(format!(
                "Timestamp cannot be negative. minStamp:{min}, maxStamp:{max}"
            )));
        }
        if max < min {
            return Err(ServerError::internal("maxStamp is smaller than minStamp"));
        }
        Ok(TimeRange { min, max })
    }

    /// `TimeRange.at(ts)`: exactly one timestamp.
    pub fn at(ts: i64) -> ServerResult<Self> {
        if ts < 0 || ts == i64::MAX {
            return Err(ServerError::internal(format!("invalid ts:{ts}")));
        }
        Ok(TimeRange {
            min: ts,
            max: ts + 1,
        })
    }

    pub fn contains(&self, ts: i64) -> bool {
        self.min <= ts && ts < self.max
    }
}

/// Which columns a read returns: empty means every family.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ColumnSelection(BTreeMap<Vec<u8>, Option<BTreeSet<Vec<u8>>>>);

impl ColumnSelection {
    /// `Get.addFamily`: the whole family (replacing columns picked before).
    pub fn add_family(&mut self, family: Vec<u8>) {
        self.0.insert(family, None);
    }

    /// `Get.addColumn`: one column (narrowing a whole-family pick made before, as Java does).
    pub fn add_column(&mut self, family: Vec<u8>, qualifier: Vec<u8>) {
        self.0
            .entry(family)
            .or_insert(None)
            .get_or_insert_with(BTreeSet::new)
            .insert(qualifier);
    }

    pub fn families(&self) -> impl Iterator<Item = &Vec<u8>> {
        self.0.keys()
    }

    /// `None`: the family is not read; `Some(None)`: all its columns; else those columns.
    fn of_family(&self, family: &[u8]) -> Option<Option<&BTreeSet<Vec<u8>>>> {
        if self.0.is_empty() {
            return Some(None);
        }
        self.0.get(family).map(Option::as_ref)
    }
}

/// Everything a Get or a Scan says about which cells of a row to return.
#[derive(Clone, Debug)]
pub struct ReadSpec {
    pub columns: ColumnSelection,
    pub time_range: TimeRange,
    /// Per-family overrides of `time_range` (TScan.colFamTimeRangeMap).
    pub family_time_ranges: BTreeMap<Vec<u8>, TimeRange>,
    /// Requested versions per column, further capped by each family's VERSIONS (0 returns
    /// nothing, as a Scan with maxVersions 0 does).
    pub max_versions: u32,
    pub filter: Option<Arc<Filter>>,
    /// TGet.storeLimit / storeOffset: cells per family after filtering.
    pub per_family_limit: Option<usize>,
    pub per_family_offset: usize,
}

impl Default for ReadSpec {
    fn default() -> Self {
        ReadSpec {
            columns: ColumnSelection::default(),
            time_range: TimeRange::ALL,
            family_time_ranges: BTreeMap::new(),
            max_versions: 1,
            filter: None,
            per_family_limit: None,
            per_family_offset: 0,
        }
    }
}

/// The cells of `row` that `spec` selects, sorted by family, qualifier, then timestamp
/// descending. Families no longer in `schema` are ignored.
pub fn read_row(
    row: &Row,
    key: &[u8],
    schema: &TableSchema,
    spec: &ReadSpec,
    now_ms: i64,
    filter_state: &mut FilterState,
) -> Vec<Cell> {
    let mut cells = Vec::new();
    for (name, family) in &row.families {
        let (Some(fschema), Some(selected)) = (schema.family(name), spec.columns.of_family(name))
        else {
            continue;
        };
        let range = spec
            .family_time_ranges
            .get(name)
            .unwrap_or(&spec.time_range);
        let columns: Vec<_> = match selected {
            None => family.columns.iter().collect(),
            Some(qualifiers) => qualifiers
                .iter()
                .filter_map(|q| family.columns.get_key_value(q))
                .collect(),
        };
        // At most VERSIONS; without a filter the requested count is final too (filters see
        // versions before they are counted).
        let wanted = match spec.filter {
            None => fschema.max_versions.min(spec.max_versions),
            Some(_) => fschema.max_versions,
        } as usize;
        for (qualifier, column) in columns {
            let in_range = family
                .live_versions(column, range.max)
                .filter(|(ts, _)| range.contains(*ts));
            for (n, (ts, value)) in in_range.enumerate() {
                if !fschema.keeps(n, ts, now_ms, wanted) {
                    break;
                }
                cells.push(Cell {
                    family: name.clone(),
                    qualifier: qualifier.clone(),
                    timestamp: ts,
                    value: value.clone(),
                });
            }
        }
    }
    // A row with no cells in the families read never reaches a region server's filters.
    if cells.is_empty() {
        return cells;
    }
    if let Some(filter) = &spec.filter {
        cells = filter.apply(key, cells, filter_state);
    }
    cap_versions(&mut cells, schema, spec.max_versions);
    if spec.per_family_limit.is_some() || spec.per_family_offset > 0 {
        limit_per_family(&mut cells, spec.per_family_offset, spec.per_family_limit);
    }
    cells
}

/// Keeps the newest min(requested, VERSIONS) versions of each column, counted after filtering.
fn cap_versions(cells: &mut Vec<Cell>, schema: &TableSchema, requested: u32) {
    let mut seen = 0u32;
    let mut prev: Option<(Vec<u8>, Vec<u8>)> = None;
    cells.retain(|c| {
        let same = prev
            .as_ref()
            .is_some_and(|(f, q)| *f == c.family && *q == c.qualifier);
        if !same {
            prev = Some((c.family.clone(), c.qualifier.clone()));
            seen = 0;
        }
        seen += 1;
        let family_max = schema.family(&c.family).map_or(1, |f| f.max_versions);
        seen <= requested.min(family_max)
    });
}

fn limit_per_family(cells: &mut Vec<Cell>, offset: usize, limit: Option<usize>) {
    let mut index = 0usize;
    let mut prev: Option<Vec<u8>> = None;
    cells.retain(|c| {
        if prev.as_deref() != Some(c.family.as_slice()) {
            prev = Some(c.family.clone());
            index = 0;
        }
        index += 1;
        index > offset && limit.is_none_or(|l| index - offset <= l)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::schema::FamilySchema;
    use percolator_thrift::hbase::TDurability;

    fn schema(families: &[(&[u8], u32)]) -> TableSchema {
        TableSchema {
            families: families
                .iter()
                .map(|(name, versions)| {
                    let mut f = FamilySchema::with_defaults(name);
                    f.max_versions = *versions;
                    (name.to_vec(), f)
                })
                .collect(),
            attributes: BTreeMap::new(),
            durability: TDurability::USE_DEFAULT,
        }
    }

    fn read(row: &Row, schema: &TableSchema, spec: &ReadSpec) -> Vec<(String, i64)> {
        read_row(row, b"r", schema, spec, 0, &mut FilterState::default())
            .into_iter()
            .map(|c| {
                (
                    format!(
                        "{}:{}",
                        String::from_utf8_lossy(&c.family),
                        String::from_utf8_lossy(&c.qualifier)
                    ),
                    c.timestamp,
                )
            })
            .collect()
    }

    fn sample() -> (Row, TableSchema) {
        let s = schema(&[(b"a", 3), (b"b", 1)]);
        let mut row = Row::default();
        for ts in [1, 2, 3] {
            row.put(&s.families[&b"a".to_vec()], b"y", ts, b"v".to_vec());
            row.put(&s.families[&b"a".to_vec()], b"x", ts, b"v".to_vec());
        }
        row.put(&s.families[&b"b".to_vec()], b"z", 7, b"v".to_vec());
        (row, s)
    }

    #[test]
    fn cells_sorted_by_family_qualifier_then_newest_first() {
        let (row, s) = sample();
        let spec = ReadSpec {
            max_versions: 10,
            ..Default::default()
        };
        let expect: Vec<(String, i64)> = [
            ("a:x", 3),
            ("a:x", 2),
            ("a:x", 1),
            ("a:y", 3),
            ("a:y", 2),
            ("a:y", 1),
            ("b:z", 7),
        ]
        .iter()
        .map(|(c, t)| (c.to_string(), *t))
        .collect();
        assert_eq!(read(&row, &s, &spec), expect);
    }

    #[test]
    fn default_read_returns_only_the_newest_version() {
        let (row, s) = sample();
        let got = read(&row, &s, &ReadSpec::default());
        assert_eq!(got.len(), 3);
        assert!(got.iter().all(|(_, ts)| *ts == 3 || *ts == 7));
    }

    #[test]
    fn time_range_max_is_exclusive_and_versions_count_within_it() {
        let (row, s) = sample();
        let mut spec = ReadSpec {
            time_range: TimeRange::new(1, 3).unwrap(),
            ..Default::default()
        };
        spec.columns.add_column(b"a".to_vec(), b"x".to_vec());
        assert_eq!(read(&row, &s, &spec), vec![("a:x".to_string(), 2)]);
        spec.time_range = TimeRange::at(1).unwrap();
        assert_eq!(read(&row, &s, &spec), vec![("a:x".to_string(), 1)]);
    }

    #[test]
    fn a_read_in_the_past_starts_below_the_range_and_stops_at_the_versions_asked() {
        let s = schema(&[(b"a", u32::MAX)]);
        let mut row = Row::default();
        for ts in 1..=50 {
            row.put(&s.families[&b"a".to_vec()], b"x", ts, b"v".to_vec());
        }
        let spec = ReadSpec {
            time_range: TimeRange::new(0, 41).unwrap(),
            max_versions: 2,
            ..Default::default()
        };
        let a = |ts| ("a:x".to_string(), ts);
        assert_eq!(read(&row, &s, &spec), vec![a(40), a(39)]);
    }

    #[test]
    fn versions_are_counted_after_the_filter() {
        let (row, s) = sample();
        let mut spec = ReadSpec {
            filter: Some(Arc::new(Filter::parse(b"TimestampsFilter (1, 2)").unwrap())),
            ..Default::default()
        };
        spec.columns.add_column(b"a".to_vec(), b"x".to_vec());
        // Counting first would keep version 3, which the filter then drops.
        assert_eq!(read(&row, &s, &spec), vec![("a:x".to_string(), 2)]);
    }

    #[test]
    fn column_selection_by_family_or_qualifier() {
        let (row, s) = sample();
        let mut spec = ReadSpec::default();
        spec.columns.add_family(b"b".to_vec());
        spec.columns.add_column(b"a".to_vec(), b"y".to_vec());
        assert_eq!(
            read(&row, &s, &spec),
            vec![("a:y".to_string(), 3), ("b:z".to_string(), 7)]
        );
    }

    #[test]
    fn invalid_time_ranges_are_rejected() {
        assert!(TimeRange::new(5, 4).is_err());
        assert!(TimeRange::new(-1, 4).is_err());
        assert!(TimeRange::at(-1).is_err());
        assert!(TimeRange::new(4, 4).is_ok());
    }

    #[test]
    fn per_family_offset_and_limit() {
        let (row, s) = sample();
        let spec = ReadSpec {
            max_versions: 10,
            per_family_offset: 1,
            per_family_limit: Some(2),
            ..Default::default()
        };
        assert_eq!(
            read(&row, &s, &spec),
            vec![("a:x".to_string(), 2), ("a:x".to_string(), 1)]
        );
    }
}
