//! A table split into key ranges, the unit bulk work (GC, and in time migration) is shared
//! out in. The ranges are the table's regions as the gateway reports them
//! (`getAllRegionLocations`), taken once when the work starts: they are key ranges, not region
//! names, so a region that splits or moves meanwhile changes nothing but which server serves a
//! range. A gateway that cannot list regions (an older one) gives the table as one range.

use crate::error::Result;
use crate::hbase::{HBaseClient, RegionLocation};

/// Rows from `start` (inclusive) to `end` (exclusive; empty: the end of the table).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct KeyRange {
    pub start: Vec<u8>,
    pub end: Vec<u8>,
}

impl KeyRange {
    /// The whole table.
    pub fn all() -> KeyRange {
        KeyRange::default()
    }
}

/// The ranges of `table`'s regions, in key order; the whole table as one range when the
/// gateway cannot list them.
pub(crate) fn table_ranges(hbase: &HBaseClient, table: &str) -> Result<Vec<KeyRange>> {
    match hbase.admin().region_locations(table) {
        Ok(locations) => Ok(of_regions(locations)),
        Err(e @ crate::Error::TableNotFound { .. }) => Err(e),
        Err(e) => {
            tracing::info!(table, error = %e, "the gateway lists no regions: the table is one range");
            Ok(vec![KeyRange::all()])
        }
    }
}

/// The regions' key ranges, sorted, each starting where the one before ended: a listing that
/// leaves a gap or overlaps (a region caught mid-split) is mended so that every row is in
/// exactly one range.
fn of_regions(mut locations: Vec<RegionLocation>) -> Vec<KeyRange> {
    locations.sort_by(|a, b| a.start_key.cmp(&b.start_key));
    let mut starts: Vec<Vec<u8>> = locations.into_iter().map(|l| l.start_key).collect();
    starts.dedup();
    if starts.first().is_none_or(|s| !s.is_empty()) {
        starts.insert(0, Vec::new());
    }
    let ends = starts.iter().skip(1).cloned().chain([Vec::new()]);
    starts
        .iter()
        .cloned()
        .zip(ends)
        .map(|(start, end)| KeyRange { start, end })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn region(start: &str, end: &str) -> RegionLocation {
        RegionLocation {
            host: "rs".into(),
            port: Some(16020),
            start_code: Some(1),
            region_id: 1,
            table: "t".into(),
            start_key: start.as_bytes().to_vec(),
            end_key: end.as_bytes().to_vec(),
        }
    }

    fn range(start: &str, end: &str) -> KeyRange {
        KeyRange {
            start: start.as_bytes().to_vec(),
            end: end.as_bytes().to_vec(),
        }
    }

    #[test]
    fn regions_become_ranges_that_cover_every_row_once() {
        let listed = vec![region("m", ""), region("", "f"), region("f", "m")];
        assert_eq!(
            of_regions(listed),
            [range("", "f"), range("f", "m"), range("m", "")]
        );
        assert_eq!(of_regions(vec![region("", "")]), [KeyRange::all()]);
        // A listing without the first region, or with a region twice (caught mid-split),
        // still covers the table, each row once.
        let odd = vec![region("k", ""), region("c", "k"), region("c", "e")];
        assert_eq!(
            of_regions(odd),
            [range("", "c"), range("c", "k"), range("k", "")]
        );
        assert_eq!(of_regions(Vec::new()), [KeyRange::all()]);
    }
}
