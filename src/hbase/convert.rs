//! Conversions between the typed operations (`types/`) and the generated Thrift structs.
//!
//! Optional Thrift fields are left unset whenever the typed value is the HBase default, so the
//! gateway applies its own defaults exactly as it would for a Java client.

use std::collections::BTreeMap;

use super::types::*;
use crate::thrift::hbase::{
    TAppend, TColumn, TColumnFamilyDescriptor, TColumnIncrement, TColumnValue, TCompareOp, TDelete,
    TDeleteType, TDurability, TGet, TIncrement, TKeepDeletedCells, TMutation, TPut, TResult,
    TRowMutations, TScan, TTableDescriptor, TTableName, TTimeRange,
};
use crate::{Binary, Error, Peer, Result};

/// HBase's "forever" TTL (`HConstants.FOREVER`), reported by real gateways for unset TTLs.
pub(crate) const TTL_FOREVER: i32 = i32::MAX;
const DEFAULT_NAMESPACE: &str = "default";

/// `"ns:name"` or a bare name (the `default` namespace).
pub(crate) fn table_name(name: &str) -> TTableName {
    match name.split_once(':') {
        Some((ns, qualifier)) => {
            TTableName::new(ns.as_bytes().to_vec(), qualifier.as_bytes().to_vec())
        }
        None => TTableName::new(
            DEFAULT_NAMESPACE.as_bytes().to_vec(),
            name.as_bytes().to_vec(),
        ),
    }
}

pub(crate) fn table_name_string(name: &TTableName) -> String {
    let qualifier = String::from_utf8_lossy(&name.qualifier);
    match name.ns.as_deref() {
        None | Some(b"") => qualifier.into_owned(),
        Some(ns) if ns == DEFAULT_NAMESPACE.as_bytes() => qualifier.into_owned(),
        Some(ns) => format!("{}:{qualifier}", String::from_utf8_lossy(ns)),
    }
}

fn column(c: &Column) -> TColumn {
    TColumn::new(c.family.clone(), c.qualifier.clone(), c.timestamp)
}

fn columns(cs: &[Column]) -> Option<Vec<TColumn>> {
    (!cs.is_empty()).then(|| cs.iter().map(column).collect())
}

fn time_range(r: TimeRange) -> TTimeRange {
    TTimeRange::new(r.min, r.max)
}

fn durability(d: Durability) -> Option<TDurability> {
    match d {
        Durability::UseDefault => None,
        Durability::SkipWal => Some(TDurability::SKIP_WAL),
        Durability::AsyncWal => Some(TDurability::ASYNC_WAL),
        Durability::SyncWal => Some(TDurability::SYNC_WAL),
        Durability::FsyncWal => Some(TDurability::FSYNC_WAL),
    }
}

pub(crate) fn get(g: &Get) -> TGet {
    TGet {
        row: g.row.clone(),
        columns: columns(&g.columns),
        timestamp: g.timestamp,
        time_range: g.time_range.map(time_range),
        max_versions: g.max_versions,
        filter_string: g.filter.as_ref().map(|f| f.as_bytes().to_vec()),
        attributes: None,
        authorizations: None,
        consistency: None,
        target_replica_id: None,
        cache_blocks: None,
        store_limit: None,
        store_offset: None,
        existence_only: None,
        filter_bytes: None,
    }
}

pub(crate) fn put(p: &Put) -> TPut {
    let values = p
        .cells
        .iter()
        .map(|c| {
            TColumnValue::new(
                c.family.clone(),
                c.qualifier.clone(),
                c.value.clone(),
                c.timestamp,
                None,
                None,
            )
        })
        .collect();
    TPut::new(
        p.row.clone(),
        values,
        p.timestamp,
        None,
        durability(p.durability),
        None,
    )
}

pub(crate) fn delete(d: &Delete) -> TDelete {
    let delete_type = match d.delete_type {
        DeleteType::Column => TDeleteType::DELETE_COLUMN,
        DeleteType::Columns => TDeleteType::DELETE_COLUMNS,
        DeleteType::Family => TDeleteType::DELETE_FAMILY,
        DeleteType::FamilyVersion => TDeleteType::DELETE_FAMILY_VERSION,
    };
    TDelete::new(
        d.row.clone(),
        columns(&d.columns),
        d.timestamp,
        delete_type,
        None,
        durability(d.durability),
    )
}

pub(crate) fn row_mutations(m: &RowMutations) -> TRowMutations {
    let mutations = m
        .mutations
        .iter()
        .map(|m| match m {
            Mutation::Put(p) => TMutation::Put(put(p)),
            Mutation::Delete(d) => TMutation::DeleteSingle(delete(d)),
        })
        .collect();
    TRowMutations::new(m.row.clone(), mutations)
}

pub(crate) fn compare_op(op: CompareOp) -> TCompareOp {
    match op {
        CompareOp::Less => TCompareOp::LESS,
        CompareOp::LessOrEqual => TCompareOp::LESS_OR_EQUAL,
        CompareOp::Equal => TCompareOp::EQUAL,
        CompareOp::NotEqual => TCompareOp::NOT_EQUAL,
        CompareOp::GreaterOrEqual => TCompareOp::GREATER_OR_EQUAL,
        CompareOp::Greater => TCompareOp::GREATER,
        CompareOp::NoOp => TCompareOp::NO_OP,
    }
}

pub(crate) fn increment(i: &Increment) -> TIncrement {
    let columns = i
        .columns
        .iter()
        .map(|(f, q, amount)| TColumnIncrement::new(f.clone(), q.clone(), *amount))
        .collect();
    TIncrement::new(i.row.clone(), columns, None, None, None, i.return_results)
}

pub(crate) fn append(a: &Append) -> TAppend {
    let columns = a
        .columns
        .iter()
        .map(|(f, q, v)| TColumnValue::new(f.clone(), q.clone(), v.clone(), None, None, None))
        .collect();
    TAppend::new(a.row.clone(), columns, None, None, None, a.return_results)
}

pub(crate) fn scan(s: &Scan) -> TScan {
    let non_empty = |row: &Vec<u8>| (!row.is_empty()).then(|| row.clone());
    TScan {
        start_row: non_empty(&s.start_row),
        stop_row: non_empty(&s.stop_row),
        columns: columns(&s.columns),
        caching: s.caching,
        max_versions: s.max_versions,
        time_range: s.time_range.map(time_range),
        filter_string: s.filter.as_ref().map(|f| f.as_bytes().to_vec()),
        batch_size: s.batch_size,
        attributes: None,
        authorizations: None,
        reversed: s.reversed.then_some(true),
        cache_blocks: None,
        col_fam_time_range_map: None,
        read_type: None,
        limit: s.limit,
        consistency: None,
        target_replica_id: None,
        filter_bytes: None,
    }
}

pub(crate) fn row_result(r: TResult) -> Result<RowResult> {
    let row = r.row.unwrap_or_default();
    let cells = r
        .column_values
        .into_iter()
        .map(|cv| {
            let timestamp = cv.timestamp.ok_or_else(|| Error::Protocol {
                peer: Peer::HBase,
                message: format!(
                    "cell {} of row {} came back without a timestamp",
                    Binary(&cv.qualifier),
                    Binary(&row)
                ),
            })?;
            Ok(Cell {
                family: cv.family,
                qualifier: cv.qualifier,
                timestamp,
                value: cv.value,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(RowResult {
        row,
        cells,
        partial: r.partial.unwrap_or(false),
    })
}

pub(crate) fn row_results(rs: Vec<TResult>) -> Result<Vec<RowResult>> {
    rs.into_iter().map(row_result).collect()
}

pub(crate) fn family_descriptor(f: &FamilyDescriptor) -> TColumnFamilyDescriptor {
    TColumnFamilyDescriptor {
        name: f.name.clone(),
        attributes: None,
        configuration: None,
        block_size: None,
        bloomn_filter_type: None,
        compression_type: None,
        dfs_replication: None,
        data_block_encoding: None,
        keep_deleted_cells: f.keep_deleted_cells.map(|keep| {
            if keep {
                TKeepDeletedCells::TRUE
            } else {
                TKeepDeletedCells::FALSE
            }
        }),
        max_versions: f.max_versions,
        min_versions: f.min_versions,
        scope: None,
        time_to_live: f.ttl_secs,
        block_cache_enabled: None,
        cache_blooms_on_write: None,
        cache_data_on_write: None,
        cache_indexes_on_write: None,
        compress_tags: None,
        evict_blocks_on_close: None,
        in_memory: f.in_memory,
    }
}

/// Sets on `column` (a family as the gateway reported it) the settings `family` gives: in
/// the typed fields, and in the attributes where HBase lists the same setting there too, so
/// that the two never disagree whichever HBase reads last. Whether anything changed.
pub(crate) fn merge_family(
    column: &mut TColumnFamilyDescriptor,
    family: &FamilyDescriptor,
) -> bool {
    let before = column.clone();
    let mut attribute = |key: &str, value: String| {
        if let Some(attributes) = column.attributes.as_mut()
            && let Some(stored) = attributes.get_mut(key.as_bytes())
        {
            *stored = value.into_bytes();
        }
    };
    if let Some(v) = family.max_versions {
        attribute("VERSIONS", v.to_string());
        column.max_versions = Some(v);
    }
    if let Some(v) = family.min_versions {
        attribute("MIN_VERSIONS", v.to_string());
        column.min_versions = Some(v);
    }
    if let Some(v) = family.ttl_secs {
        attribute("TTL", v.to_string());
        column.time_to_live = Some(v);
    }
    if let Some(v) = family.in_memory {
        attribute("IN_MEMORY", v.to_string());
        column.in_memory = Some(v);
    }
    if let Some(keep) = family.keep_deleted_cells {
        attribute(
            "KEEP_DELETED_CELLS",
            if keep { "TRUE" } else { "FALSE" }.into(),
        );
        column.keep_deleted_cells = Some(if keep {
            TKeepDeletedCells::TRUE
        } else {
            TKeepDeletedCells::FALSE
        });
    }
    *column != before
}

pub(crate) fn family_from_thrift(f: TColumnFamilyDescriptor) -> FamilyDescriptor {
    FamilyDescriptor {
        name: f.name,
        max_versions: f.max_versions,
        min_versions: f.min_versions,
        ttl_secs: f.time_to_live.filter(|ttl| *ttl != TTL_FOREVER),
        in_memory: f.in_memory,
        // KEEP_DELETED_CELLS=TTL keeps deleted cells too (until their TTL): closest is `true`.
        keep_deleted_cells: f.keep_deleted_cells.map(|k| k != TKeepDeletedCells::FALSE),
    }
}

pub(crate) fn table_descriptor(t: &TableDescriptor) -> TTableDescriptor {
    TTableDescriptor::new(
        table_name(&t.name),
        t.families.iter().map(family_descriptor).collect::<Vec<_>>(),
        None::<BTreeMap<Vec<u8>, Vec<u8>>>,
        None,
    )
}

pub(crate) fn table_from_thrift(t: TTableDescriptor) -> TableDescriptor {
    TableDescriptor {
        name: table_name_string(&t.table_name),
        families: t
            .columns
            .unwrap_or_default()
            .into_iter()
            .map(family_from_thrift)
            .collect(),
    }
}

#[cfg(test)]
#[path = "convert_tests.rs"]
mod tests;
