//! Conversions between the Thrift structs and the store's operations, with the validation the
//! Java client classes (`Get`, `Put`, `Delete`, `Scan`) do inside a real gateway: their
//! failures are runtime exceptions, so they come back as INTERNAL_ERROR.

use std::sync::Arc;

use crate::error::{ServerError, ServerResult};
use crate::filter::{CompareOp, Filter};
use crate::scanner::{RowChunk, ScanSpec};
use crate::store::{
    Cell, ColumnSelection, DeleteEntry, DeleteKind, Mutation, PutCell, ReadSpec, TimeRange,
};
use percolator_thrift::hbase::{
    TColumn, TColumnValue, TCompareOp, TDelete, TDeleteType, TGet, TMutation, TPut, TResult,
    TRowMutations, TScan,
};

/// `KeyValue.Type.Put`, the type byte a real gateway reports for every returned cell.
const PUT_TYPE: i8 = 4;
const MAX_ROW_LENGTH: usize = i16::MAX as usize;

/// `Mutation.checkRow`: rows must be non-empty and at most 32767 bytes.
pub fn check_row(row: &[u8]) -> ServerResult<()> {
    if row.is_empty() {
        return Err(ServerError::internal("Row length is 0"));
    }
    if row.len() > MAX_ROW_LENGTH {
        return Err(ServerError::internal(format!(
            "Row length {} is > {MAX_ROW_LENGTH}",
            row.len()
        )));
    }
    Ok(())
}

fn check_timestamp(ts: Option<i64>) -> ServerResult<()> {
    match ts {
        Some(ts) if ts < 0 => Err(ServerError::internal(format!(
            "Timestamp cannot be negative. ts={ts}"
        ))),
        _ => Ok(()),
    }
}

/// `Bytes.toStringBinary`: printable ASCII as is, everything else as `\xHH`.
pub fn to_string_binary(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for b in bytes {
        if b.is_ascii_graphic() && *b != b'\\' || *b == b' ' {
            out.push(*b as char);
        } else {
            out.push_str(&format!("\\x{b:02X}"));
        }
    }
    out
}

fn selection(columns: &Option<Vec<TColumn>>) -> ColumnSelection {
    let mut sel = ColumnSelection::default();
    for c in columns.iter().flatten() {
        match &c.qualifier {
            Some(q) => sel.add_column(c.family.clone(), q.clone()),
            None => sel.add_family(c.family.clone()),
        }
    }
    sel
}

fn filter(
    filter_string: &Option<Vec<u8>>,
    filter_bytes: &Option<Vec<u8>>,
) -> ServerResult<Option<Arc<Filter>>> {
    if filter_bytes.is_some() {
        return Err(ServerError::unsupported(
            "filterBytes (serialized protobuf filters)",
        ));
    }
    filter_string
        .as_deref()
        .map(|s| Filter::parse(s).map(Arc::new))
        .transpose()
}

fn time_range(range: &Option<percolator_thrift::hbase::TTimeRange>) -> ServerResult<TimeRange> {
    match range {
        Some(r) => TimeRange::new(r.min_stamp, r.max_stamp),
        None => Ok(TimeRange::ALL),
    }
}

/// `ThriftUtilities.getFromThrift`: the row and what to read from it.
pub fn get(tget: &TGet) -> ServerResult<ReadSpec> {
    check_row(&tget.row)?;
    let time_range = match tget.timestamp {
        Some(ts) => TimeRange::at(ts)?,
        None => time_range(&tget.time_range)?,
    };
    let max_versions = match tget.max_versions {
        None => 1,
        Some(v) if v > 0 => v as u32,
        // Get.readVersions throws a plain IOException here, before any RPC.
        Some(_) => return Err(ServerError::plain_io("versions must be positive")),
    };
    Ok(ReadSpec {
        columns: selection(&tget.columns),
        time_range,
        family_time_ranges: Default::default(),
        max_versions,
        filter: filter(&tget.filter_string, &tget.filter_bytes)?,
        per_family_limit: tget.store_limit.filter(|l| *l >= 0).map(|l| l as usize),
        per_family_offset: tget
            .store_offset
            .filter(|o| *o > 0)
            .map_or(0, |o| o as usize),
    })
}

/// `ThriftUtilities.scanFromThrift`.
pub fn scan(tscan: &TScan) -> ServerResult<ScanSpec> {
    let mut family_time_ranges = std::collections::BTreeMap::new();
    for (family, r) in tscan.col_fam_time_range_map.iter().flatten() {
        family_time_ranges.insert(family.clone(), TimeRange::new(r.min_stamp, r.max_stamp)?);
    }
    let read = ReadSpec {
        columns: selection(&tscan.columns),
        time_range: time_range(&tscan.time_range)?,
        family_time_ranges,
        // Scan.readVersions does not validate: zero or less simply returns no cells.
        max_versions: tscan.max_versions.unwrap_or(1).max(0) as u32,
        filter: filter(&tscan.filter_string, &tscan.filter_bytes)?,
        per_family_limit: None,
        per_family_offset: 0,
    };
    Ok(ScanSpec {
        start: tscan.start_row.clone().unwrap_or_default(),
        stop: tscan.stop_row.clone().unwrap_or_default(),
        reversed: tscan.reversed.unwrap_or(false),
        read,
        batch: tscan.batch_size.filter(|b| *b > 0).map(|b| b as usize),
        limit: tscan.limit.filter(|l| *l > 0).map(|l| l as u64),
    })
}

/// `putFromThrift` plus `HTable.validatePut`: a put needs at least one column.
pub fn put(tput: &TPut) -> ServerResult<Mutation> {
    let m = put_unvalidated(tput)?;
    if tput.column_values.is_empty() {
        return Err(ServerError::internal("No columns to insert"));
    }
    Ok(m)
}

fn put_unvalidated(tput: &TPut) -> ServerResult<Mutation> {
    check_row(&tput.row)?;
    check_timestamp(tput.timestamp)?;
    let cells = tput
        .column_values
        .iter()
        .map(|cv: &TColumnValue| {
            check_timestamp(cv.timestamp)?;
            Ok(PutCell {
                family: cv.family.clone(),
                qualifier: cv.qualifier.clone(),
                timestamp: cv.timestamp.or(tput.timestamp),
                value: cv.value.clone(),
            })
        })
        .collect::<ServerResult<_>>()?;
    Ok(Mutation::Put(cells))
}

/// `deleteFromThrift`. With columns, the TDelete's own timestamp is ignored (as in Java); a
/// family-only TColumn under DELETE_COLUMN(S) targets the empty qualifier.
pub fn delete(tdelete: &TDelete) -> ServerResult<Mutation> {
    check_row(&tdelete.row)?;
    let Some(columns) = &tdelete.columns else {
        check_timestamp(tdelete.timestamp)?;
        return Ok(Mutation::Delete {
            entries: Vec::new(),
            row_timestamp: tdelete.timestamp,
        });
    };
    let kind = match tdelete.delete_type.unwrap_or(TDeleteType::DELETE_COLUMNS) {
        TDeleteType::DELETE_COLUMN => DeleteKind::Version,
        TDeleteType::DELETE_COLUMNS => DeleteKind::Columns,
        TDeleteType::DELETE_FAMILY => DeleteKind::Family,
        TDeleteType::DELETE_FAMILY_VERSION => DeleteKind::FamilyVersion,
        _ => return Err(ServerError::internal("DeleteType is required for TDelete")),
    };
    let entries = columns
        .iter()
        .map(|c| {
            check_timestamp(c.timestamp)?;
            if kind == DeleteKind::FamilyVersion && c.timestamp.is_none() {
                return Err(ServerError::internal(
                    "Timestamp is required for TDelete with DeleteFamilyVersion type",
                ));
            }
            Ok(DeleteEntry {
                kind,
                family: c.family.clone(),
                qualifier: c.qualifier.clone().unwrap_or_default(),
                timestamp: c.timestamp,
            })
        })
        .collect::<ServerResult<_>>()?;
    Ok(Mutation::Delete {
        entries,
        row_timestamp: None,
    })
}

/// `rowMutationsFromThrift`: every mutation must be on the TRowMutations' row.
pub fn row_mutations(trm: &TRowMutations) -> ServerResult<Vec<Mutation>> {
    check_row(&trm.row)?;
    trm.mutations
        .iter()
        .map(|m| {
            let (row, converted) = match m {
                TMutation::Put(p) => (&p.row, put_unvalidated(p)?),
                TMutation::DeleteSingle(d) => (&d.row, delete(d)?),
            };
            if *row != trm.row {
                return Err(ServerError::wrong_row(format!(
                    "The row in the recently added Put/Delete <{}> doesn't match the original \
                     one <{}>",
                    to_string_binary(row),
                    to_string_binary(&trm.row)
                )));
            }
            Ok(converted)
        })
        .collect()
}

/// The check-and-mutate operator; NO_OP has no meaning for a value comparison.
pub fn compare_op(op: TCompareOp) -> ServerResult<CompareOp> {
    Ok(match op {
        TCompareOp::LESS => CompareOp::Less,
        TCompareOp::LESS_OR_EQUAL => CompareOp::LessOrEqual,
        TCompareOp::EQUAL => CompareOp::Equal,
        TCompareOp::NOT_EQUAL => CompareOp::NotEqual,
        TCompareOp::GREATER_OR_EQUAL => CompareOp::GreaterOrEqual,
        TCompareOp::GREATER => CompareOp::Greater,
        TCompareOp::NO_OP => return Err(ServerError::do_not_retry("Unknown Compare op NO_OP")),
        other => {
            return Err(ServerError::internal(format!(
                "Unknown compare operator {}",
                other.0
            )))
        }
    })
}

fn column_value(c: Cell) -> TColumnValue {
    TColumnValue {
        family: c.family,
        qualifier: c.qualifier,
        value: c.value,
        timestamp: Some(c.timestamp),
        tags: None,
        type_: Some(PUT_TYPE),
    }
}

/// `resultFromHBase`: an empty result has no row.
pub fn result(row: &[u8], cells: Vec<Cell>, partial: bool) -> TResult {
    TResult {
        row: (!cells.is_empty()).then(|| row.to_vec()),
        column_values: cells.into_iter().map(column_value).collect(),
        stale: Some(false),
        partial: Some(partial),
    }
}

pub fn chunk_result(chunk: RowChunk) -> TResult {
    result(&chunk.row, chunk.cells, chunk.partial)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tdelete(columns: Option<Vec<TColumn>>, kind: Option<TDeleteType>) -> TDelete {
        TDelete {
            row: b"r".to_vec(),
            columns,
            timestamp: Some(99),
            delete_type: kind,
            attributes: None,
            durability: None,
        }
    }

    fn family_only(f: &str) -> TColumn {
        TColumn {
            family: f.into(),
            qualifier: None,
            timestamp: None,
        }
    }

    #[test]
    fn family_only_column_under_delete_columns_targets_the_empty_qualifier() {
        let Mutation::Delete { entries, .. } =
            delete(&tdelete(Some(vec![family_only("f")]), None)).unwrap()
        else {
            panic!("expected delete")
        };
        assert_eq!(
            entries,
            vec![DeleteEntry {
                kind: DeleteKind::Columns,
                family: b"f".to_vec(),
                qualifier: Vec::new(),
                timestamp: None,
            }]
        );
    }

    #[test]
    fn delete_without_columns_is_a_whole_row_delete_at_its_timestamp() {
        assert_eq!(
            delete(&tdelete(None, None)).unwrap(),
            Mutation::Delete {
                entries: vec![],
                row_timestamp: Some(99)
            }
        );
    }

    #[test]
    fn family_version_delete_needs_a_timestamp() {
        let d = tdelete(
            Some(vec![family_only("f")]),
            Some(TDeleteType::DELETE_FAMILY_VERSION),
        );
        assert!(matches!(delete(&d), Err(ServerError::Internal(_))));
    }

    #[test]
    fn get_validation_errors() {
        let mut g = crate::testutil::tget(b"r");
        g.max_versions = Some(0);
        assert!(matches!(get(&g), Err(ServerError::Io { .. })));
        g.max_versions = None;
        g.row.clear();
        assert!(matches!(get(&g), Err(ServerError::Internal(_))));
    }

    #[test]
    fn empty_results_have_no_row() {
        let r = result(b"r", vec![], false);
        assert_eq!(r.row, None);
        assert!(r.column_values.is_empty());
    }

    #[test]
    fn string_binary_escapes_like_java() {
        assert_eq!(to_string_binary(b"ab \x00\\"), "ab \\x00\\x5C");
    }
}
