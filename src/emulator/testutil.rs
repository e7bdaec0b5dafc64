//! Builders for the generated Thrift structs that have no `Default`, for unit tests.

use crate::thrift::hbase::{TGet, TScan};

pub fn tget(row: &[u8]) -> TGet {
    TGet {
        row: row.to_vec(),
        columns: None,
        timestamp: None,
        time_range: None,
        max_versions: None,
        filter_string: None,
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

/// A TScan with every field unset (the generated `Default` sets most of them).
pub fn tscan() -> TScan {
    TScan {
        start_row: None,
        stop_row: None,
        columns: None,
        caching: None,
        max_versions: None,
        time_range: None,
        filter_string: None,
        batch_size: None,
        attributes: None,
        authorizations: None,
        reversed: None,
        cache_blocks: None,
        col_fam_time_range_map: None,
        read_type: None,
        limit: None,
        consistency: None,
        target_replica_id: None,
        filter_bytes: None,
    }
}
