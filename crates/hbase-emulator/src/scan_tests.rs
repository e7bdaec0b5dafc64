//! Scanner behaviour through the gateway's scanner methods.

use crate::error::ServerError;
use crate::testutil::*;
use percolator_thrift::hbase::{TResult, TScan};

fn rows(results: &[TResult]) -> Vec<String> {
    results
        .iter()
        .map(|r| {
            let mut s = String::from_utf8_lossy(r.row.as_deref().unwrap_or_default()).into_owned();
            if r.partial == Some(true) {
                s.push('+');
            }
            s
        })
        .collect()
}

/// Rows a..e, each with columns q1..q3 in family f.
fn filled() -> Env {
    let e = env();
    e.create("t", &[("f", 3)]);
    for row in ["a", "b", "c", "d", "e"] {
        e.put(
            "t",
            row,
            vec![
                cv("f", "q1", None, row),
                cv("f", "q2", None, "x"),
                cv("f", "q3", None, "y"),
            ],
        );
    }
    e
}

fn scan_all(e: &Env, scan: &TScan) -> Vec<TResult> {
    e.h.get_scanner_results(b"t", scan, 1000).unwrap()
}

#[test]
fn start_is_inclusive_and_stop_exclusive_and_reversed_swaps_them() {
    let e = filled();
    let mut s = tscan();
    s.start_row = Some(b"b".to_vec());
    s.stop_row = Some(b"d".to_vec());
    assert_eq!(rows(&scan_all(&e, &s)), vec!["b", "c"]);
    s.reversed = Some(true);
    s.start_row = Some(b"d".to_vec());
    s.stop_row = Some(b"b".to_vec());
    assert_eq!(rows(&scan_all(&e, &s)), vec!["d", "c"]);
    s.start_row = None;
    s.stop_row = None;
    assert_eq!(rows(&scan_all(&e, &s)), vec!["e", "d", "c", "b", "a"]);
    let mut inverted = tscan();
    inverted.start_row = Some(b"d".to_vec());
    inverted.stop_row = Some(b"b".to_vec());
    assert!(scan_all(&e, &inverted).is_empty());
}

#[test]
fn scanner_rows_come_in_pages_and_an_exhausted_scanner_stays_open() {
    let e = filled();
    let id = e.h.open_scanner(b"t", &tscan()).unwrap();
    assert_eq!(rows(&e.h.get_scanner_rows(id, 2).unwrap()), vec!["a", "b"]);
    assert_eq!(rows(&e.h.get_scanner_rows(id, 2).unwrap()), vec!["c", "d"]);
    assert_eq!(rows(&e.h.get_scanner_rows(id, 2).unwrap()), vec!["e"]);
    assert!(e.h.get_scanner_rows(id, 2).unwrap().is_empty());
    assert!(e.h.get_scanner_rows(id, 2).unwrap().is_empty());
    assert!(e.h.get_scanner_rows(id, 0).unwrap().is_empty());
    assert!(matches!(
        e.h.get_scanner_rows(id, -1),
        Err(ServerError::Internal(_))
    ));
    e.h.scanners.close(id);
    assert_eq!(
        e.h.get_scanner_rows(id, 1).unwrap_err(),
        ServerError::IllegalArgument("Invalid scanner Id".into())
    );
    // Closing again (or closing an id that never existed) is fine.
    e.h.scanners.close(id);
    e.h.scanners.close(12345);
}

#[test]
fn batch_size_splits_wide_rows_into_partial_results() {
    let e = filled();
    let mut s = tscan();
    s.batch_size = Some(2);
    s.stop_row = Some(b"c".to_vec());
    let results = scan_all(&e, &s);
    assert_eq!(rows(&results), vec!["a+", "a", "b+", "b"]);
    assert_eq!(results[0].column_values.len(), 2);
    assert_eq!(results[1].column_values.len(), 1);
    s.batch_size = Some(3);
    assert_eq!(rows(&scan_all(&e, &s)), vec!["a", "b"]);
}

#[test]
fn limit_counts_rows_not_batches() {
    let e = filled();
    let mut s = tscan();
    s.limit = Some(2);
    s.batch_size = Some(2);
    assert_eq!(rows(&scan_all(&e, &s)), vec!["a+", "a", "b+", "b"]);
}

#[test]
fn columns_versions_time_range_and_filters_apply_per_row() {
    let e = filled();
    e.put("t", "c", vec![cv("f", "q1", Some(T0 + 10), "c2")]);
    let mut s = tscan();
    s.columns = Some(vec![col("f", Some("q1"), None)]);
    s.start_row = Some(b"c".to_vec());
    s.stop_row = Some(b"d".to_vec());
    s.max_versions = Some(5);
    let r = scan_all(&e, &s);
    assert_eq!(
        cells(&r[0]),
        vec![format!("f:q1@{}=c2", T0 + 10), format!("f:q1@{T0}=c")]
    );
    s.max_versions = Some(0);
    assert!(scan_all(&e, &s).is_empty());
    let mut f = tscan();
    f.filter_string =
        Some(b"PrefixFilter('d') OR SingleColumnValueFilter('f','q1',=,'binary:b')".to_vec());
    assert_eq!(rows(&scan_all(&e, &f)), vec!["b", "d"]);
    f.filter_string = Some(b"WHILE RowFilter(<, 'binary:c')".to_vec());
    assert_eq!(rows(&scan_all(&e, &f)), vec!["a", "b"]);
    f.filter_string = Some(b"InclusiveStopFilter('b')".to_vec());
    assert_eq!(rows(&scan_all(&e, &f)), vec!["a", "b"]);
    f.filter_string = Some(b"PrefixFilter(".to_vec());
    assert!(matches!(
        e.h.open_scanner(b"t", &f),
        Err(ServerError::Internal(_))
    ));
}

#[test]
fn deleted_rows_are_skipped() {
    let e = filled();
    e.h.delete_single(b"t", &tdelete("b", None, None)).unwrap();
    assert_eq!(rows(&scan_all(&e, &tscan())), vec!["a", "c", "d", "e"]);
}

#[test]
fn idle_scanners_expire() {
    let e = filled();
    let id = e.h.open_scanner(b"t", &tscan()).unwrap();
    e.clock.advance(59_000);
    assert_eq!(e.h.get_scanner_rows(id, 1).unwrap().len(), 1);
    e.clock.advance(59_000);
    assert_eq!(e.h.get_scanner_rows(id, 1).unwrap().len(), 1);
    e.clock.advance(61_000);
    assert!(matches!(
        e.h.get_scanner_rows(id, 1),
        Err(ServerError::IllegalArgument(_))
    ));
    // Opening another scanner sweeps expired ones.
    let stale = e.h.open_scanner(b"t", &tscan()).unwrap();
    e.clock.advance(61_000);
    e.h.open_scanner(b"t", &tscan()).unwrap();
    assert_eq!(e.h.scanners.len(), 1);
    assert!(e.h.get_scanner_rows(stale, 1).is_err());
}

#[test]
fn scanner_ids_are_distinct_and_table_errors_wait_for_the_first_rows() {
    let e = filled();
    let a = e.h.open_scanner(b"t", &tscan()).unwrap();
    let b = e.h.open_scanner(b"t", &tscan()).unwrap();
    assert_ne!(a, b);
    // The gateway's client opens region scanners lazily: a missing table or family is only
    // reported by getScannerRows, and by every call of it.
    let missing = e.h.open_scanner(b"missing", &tscan()).unwrap();
    for _ in 0..2 {
        assert_eq!(
            e.h.get_scanner_rows(missing, 1).unwrap_err().to_string(),
            "org.apache.hadoop.hbase.TableNotFoundException: missing"
        );
    }
    let mut s = tscan();
    s.columns = Some(vec![col("nope", None, None)]);
    let no_family = e.h.open_scanner(b"t", &s).unwrap();
    assert!(e
        .h
        .get_scanner_rows(no_family, 1)
        .unwrap_err()
        .to_string()
        .contains("NoSuchColumnFamily"));
    // A bad scan is refused when it is opened.
    let mut bad = tscan();
    bad.filter_string = Some(b"Nope((".to_vec());
    assert!(matches!(
        e.h.open_scanner(b"t", &bad),
        Err(ServerError::Internal(_))
    ));
}

#[test]
fn a_scanner_sees_rows_written_ahead_of_it() {
    let e = filled();
    let id = e.h.open_scanner(b"t", &tscan()).unwrap();
    assert_eq!(rows(&e.h.get_scanner_rows(id, 1).unwrap()), vec!["a"]);
    e.put("t", "bb", vec![cv("f", "q1", None, "v")]);
    assert_eq!(rows(&e.h.get_scanner_rows(id, 2).unwrap()), vec!["b", "bb"]);
}
