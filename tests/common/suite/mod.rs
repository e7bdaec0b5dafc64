//! HBase 2.x conformance cases. Each case is a plain function of a [`Gateway`], so the same
//! cases run against the in-process emulator (`tests/hbase_conformance.rs`), any gateway named
//! by `HBASE_THRIFT`, and a real HBase in Docker (`tests/hbase_docker.rs`).

pub mod admin;
pub mod cas;
pub mod counters;
pub mod data;
pub mod delete;
pub mod errors;
pub mod filter;
pub mod gateway_errors;
pub mod scan;

use percolator::hbase::{Cell, RowResult};

use super::Gateway;

pub struct Case {
    pub name: &'static str,
    pub run: fn(&Gateway),
}

macro_rules! cases {
    ($($module:ident::$case:ident),* $(,)?) => {
        /// Every conformance case, in a stable order.
        pub const CASES: &[Case] = &[$(Case { name: concat!(stringify!($module), "::", stringify!($case)), run: $module::$case }),*];
    };
}

/// Calls macro `$m` with every conformance case, in a stable order: the one list of cases,
/// expanded into `CASES` here and into one `#[test]` each by the test files.
macro_rules! with_cases {
    ($m:ident) => {
        $m![
            data::put_then_get_and_missing_rows,
            data::versions_come_newest_first_in_column_order,
            data::same_cell_and_timestamp_is_replaced,
            data::family_versions_cap_what_reads_return,
            data::ttl_hides_cells_by_their_timestamp,
            data::min_versions_keep_expired_versions,
            data::time_ranges_exclude_their_max,
            data::get_timestamp_selects_one_version,
            data::max_versions_must_be_positive,
            data::put_timestamp_precedence,
            data::family_and_column_selectors,
            data::get_many_keeps_request_order,
            data::put_without_columns_is_rejected,
            delete::delete_column_removes_one_version,
            delete::delete_columns_removes_versions_up_to_ts,
            delete::delete_family_and_family_version,
            delete::row_deletes,
            delete::markers_hide_later_puts_at_or_below_them,
            delete::family_only_column_deletes_the_empty_qualifier,
            delete::delete_many_applies_all,
            cas::comparison_is_value_op_cell_for_every_operator,
            cas::empty_value_matches_absent_or_empty_cells,
            cas::check_and_put_and_delete_with_absent_value,
            cas::mutations_on_another_row_are_rejected,
            cas::check_and_mutate_applies_all_mutations_atomically,
            cas::concurrent_cas_increments_lose_no_update,
            cas::server_timestamps_in_cas_never_go_below_the_checked_cell,
            counters::increment_adds_and_returns,
            counters::append_concatenates,
            counters::mutate_row_is_atomic,
            scan::start_inclusive_stop_exclusive,
            scan::reversed_scans,
            scan::caching_pages_through_every_row,
            scan::batch_size_splits_wide_rows,
            scan::limit_caps_rows,
            scan::versions_time_range_and_columns,
            scan::unknown_scanner_ids,
            scan::dropped_scanner_is_closed,
            scan::get_scanner_results_reads_once,
            scan::idle_scanners_expire,
            scan::one_family_scans_follow_every_change,
            filter::row_filters,
            filter::cell_filters,
            filter::value_filters,
            filter::and_or_combinations,
            filter::get_with_filter,
            filter::bad_filter_is_rejected,
            errors::missing_table_is_table_not_found,
            errors::missing_family_is_family_not_found,
            gateway_errors::missing_table_forms,
            gateway_errors::disabled_and_enabled_table_forms,
            gateway_errors::runtime_failures_name_only_the_method,
            gateway_errors::max_versions_zero_is_the_gateways_io_error,
            gateway_errors::scanner_errors_wait_for_the_first_page,
            gateway_errors::batch_calls_report_retries_exhausted,
            admin::table_lifecycle,
            admin::family_changes,
            admin::families_changed_together,
            admin::namespaces,
            admin::server_facts,
            admin::split_table_regions,
        ];
    };
}
#[allow(unused_imports)] // only hbase_conformance.rs expands it; hbase_docker.rs uses CASES
pub(crate) use with_cases;

with_cases!(cases);

/// `(timestamp, value)` of every version of one column, as returned.
pub fn versions(result: &RowResult, family: &str, qualifier: &str) -> Vec<(i64, Vec<u8>)> {
    result
        .versions(family.as_bytes(), qualifier.as_bytes())
        .map(|c| (c.timestamp, c.value.clone()))
        .collect()
}

/// `(family:qualifier, value)` of every cell, in the order returned.
pub fn cells(result: &RowResult) -> Vec<(String, String)> {
    result
        .cells
        .iter()
        .map(|c: &Cell| {
            (
                column_name(c),
                String::from_utf8_lossy(&c.value).into_owned(),
            )
        })
        .collect()
}

pub fn column_name(cell: &Cell) -> String {
    format!(
        "{}:{}",
        String::from_utf8_lossy(&cell.family),
        String::from_utf8_lossy(&cell.qualifier)
    )
}

pub fn rows(results: &[RowResult]) -> Vec<String> {
    results
        .iter()
        .map(|r| String::from_utf8_lossy(&r.row).into_owned())
        .collect()
}

pub fn v(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}
