//! Scanners: bounds, direction, paging, partial rows, limits, versions, and scanner ids.

use std::time::Duration;

use hbase_emulator::EmulatorConfig;
use percolator::hbase::{
    CheckAndMutate, CompareOp, Delete, DeleteType, FamilyDescriptor, Increment, Put, RowResult,
    Scan, TimeRange,
};
use percolator::{Error, Result};

use super::{rows, versions};
use crate::common::{Gateway, TestTable};

/// Rows r0..r9, each with f:q = its index.
fn ten_rows(gw: &Gateway) -> TestTable {
    let t = gw.table_f(1);
    let puts: Vec<Put> = (0..10)
        .map(|i| Put::new(format!("r{i}")).add("f", "q", i.to_string()))
        .collect();
    gw.client().put_many(t.name(), &puts).unwrap();
    t
}

fn scan_rows(gw: &Gateway, table: &str, scan: &Scan) -> Vec<String> {
    let results: Result<Vec<RowResult>> = gw.client().scan(table, scan).unwrap().collect();
    rows(&results.unwrap())
}

fn names(range: impl IntoIterator<Item = usize>) -> Vec<String> {
    range.into_iter().map(|i| format!("r{i}")).collect()
}

pub fn start_inclusive_stop_exclusive(gw: &Gateway) {
    let t = ten_rows(gw);
    assert_eq!(scan_rows(gw, t.name(), &Scan::new()), names(0..10));
    assert_eq!(
        scan_rows(gw, t.name(), &Scan::range("r2", "r5")),
        names(2..5)
    );
    assert_eq!(
        scan_rows(gw, t.name(), &Scan::range("r7", "")),
        names(7..10)
    );
    assert_eq!(scan_rows(gw, t.name(), &Scan::range("", "r1")), names(0..1));
}

pub fn reversed_scans(gw: &Gateway) {
    let t = ten_rows(gw);
    assert_eq!(
        scan_rows(gw, t.name(), &Scan::new().reversed(true)),
        names((0..10).rev())
    );
    // Reversed, the start row is the upper (inclusive) bound and the stop row the lower.
    assert_eq!(
        scan_rows(gw, t.name(), &Scan::range("r5", "r2").reversed(true)),
        names([5, 4, 3])
    );
}

pub fn caching_pages_through_every_row(gw: &Gateway) {
    let t = ten_rows(gw);
    let c = gw.client();
    let before = c.rpc_count();
    assert_eq!(
        scan_rows(gw, t.name(), &Scan::new().caching(3)),
        names(0..10)
    );
    // open + pages of 3, 3, 3, 1 + the empty page that ends it + close.
    assert_eq!(c.rpc_count() - before, 7);
}

pub fn batch_size_splits_wide_rows(gw: &Gateway) {
    let t = gw.table_f(1);
    let c = gw.client();
    let mut wide = Put::new("a");
    for i in 0..5 {
        wide = wide.add("f", format!("c{i}"), "v");
    }
    c.put(t.name(), &wide).unwrap();
    c.put(t.name(), &Put::new("b").add("f", "c0", "v")).unwrap();
    let results: Vec<RowResult> = c
        .scan(t.name(), &Scan::new().batch_size(2))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    let shape: Vec<(String, usize, bool)> = results
        .iter()
        .map(|r| {
            (
                String::from_utf8_lossy(&r.row).into_owned(),
                r.cells.len(),
                r.partial,
            )
        })
        .collect();
    assert_eq!(
        shape,
        vec![
            ("a".to_owned(), 2, true),
            ("a".to_owned(), 2, true),
            ("a".to_owned(), 1, false),
            ("b".to_owned(), 1, false),
        ]
    );
}

pub fn limit_caps_rows(gw: &Gateway) {
    let t = ten_rows(gw);
    assert_eq!(scan_rows(gw, t.name(), &Scan::new().limit(4)), names(0..4));
    assert_eq!(
        scan_rows(gw, t.name(), &Scan::new().limit(4).caching(3)),
        names(0..4)
    );
    assert_eq!(
        scan_rows(gw, t.name(), &Scan::range("r8", "").limit(5)),
        names(8..10)
    );
}

pub fn versions_time_range_and_columns(gw: &Gateway) {
    let t = gw.table(vec![FamilyDescriptor::new("f").max_versions(5)]);
    let c = gw.client();
    for row in ["a", "b"] {
        for ts in [1, 2, 3] {
            c.put(
                t.name(),
                &Put::new(row).add_at("f", "q", ts, format!("q{ts}")),
            )
            .unwrap();
        }
        c.put(t.name(), &Put::new(row).add_at("f", "p", 2, "p2"))
            .unwrap();
    }
    let scan =
        |s: Scan| -> Vec<RowResult> { c.scan(t.name(), &s).unwrap().map(|r| r.unwrap()).collect() };

    let two_versions = scan(Scan::new().column("f", "q").max_versions(2));
    assert_eq!(rows(&two_versions), vec!["a", "b"]);
    for r in &two_versions {
        let stamps: Vec<i64> = versions(r, "f", "q")
            .into_iter()
            .map(|(ts, _)| ts)
            .collect();
        assert_eq!(stamps, vec![3, 2]);
        assert!(r.latest(b"f", b"p").is_none(), "only the selected column");
    }

    let ranged = scan(Scan::new().time_range(TimeRange::new(1, 3)));
    for r in &ranged {
        assert_eq!(
            versions(r, "f", "q"),
            vec![(2, b"q2".to_vec())],
            "newest version inside [1, 3)"
        );
        assert_eq!(versions(r, "f", "p"), vec![(2, b"p2".to_vec())]);
    }
    assert!(scan(Scan::new().time_range(TimeRange::new(10, 20))).is_empty());
}

pub fn unknown_scanner_ids(gw: &Gateway) {
    let c = gw.client();
    let err = c.scanner_rows(i32::MAX - 7, 1).unwrap_err();
    assert!(matches!(err, Error::IllegalArgument { .. }), "got {err:?}");
    c.close_scanner(i32::MAX - 7)
        .expect("closing an unknown scanner is not an error (HBase 2.4.10+)");
}

pub fn dropped_scanner_is_closed(gw: &Gateway) {
    let t = ten_rows(gw);
    let c = gw.client();
    let mut scanner = c.scan(t.name(), &Scan::new().caching(1)).unwrap();
    let id = scanner.id().expect("open");
    assert_eq!(scanner.next().unwrap().unwrap().row, b"r0");
    drop(scanner);
    let err = c.scanner_rows(id, 1).unwrap_err();
    assert!(
        matches!(err, Error::IllegalArgument { .. }),
        "scanner {id} survived its drop: {err:?}"
    );
}

pub fn get_scanner_results_reads_once(gw: &Gateway) {
    let t = ten_rows(gw);
    let c = gw.client();
    assert_eq!(
        rows(&c.scan_results(t.name(), &Scan::new(), 3).unwrap()),
        names(0..3)
    );
    let ranged = c.scan_results(t.name(), &Scan::range("r8", ""), 5).unwrap();
    assert_eq!(rows(&ranged), names(8..10));
}

/// Scanner expiry needs a short server-side timeout, which only the emulator can be given.
pub fn idle_scanners_expire(gw: &Gateway) {
    if !gw.is_emulator() {
        eprintln!("skipped: idle scanner expiry needs a configurable timeout (emulator only)");
        return;
    }
    let timeout = Duration::from_millis(200);
    let emu = Gateway::emulator(EmulatorConfig {
        scanner_idle_timeout: timeout,
        ..EmulatorConfig::default()
    });
    let t = ten_rows(&emu);
    let mut scanner = emu
        .client()
        .scan(t.name(), &Scan::new().caching(1))
        .unwrap();
    assert_eq!(scanner.next().unwrap().unwrap().row, b"r0");
    std::thread::sleep(timeout * 3);
    let err = scanner.next().expect("an error, not the end").unwrap_err();
    assert!(matches!(err, Error::IllegalArgument { .. }), "got {err:?}");
    assert!(scanner.next().is_none(), "iteration ends after the error");
}

/// A scan of one family returns exactly the rows with a visible cell in it, whatever the other
/// families hold, as rows gain, lose (every delete type, inside a checkAndMutate too) and
/// regain cells there. (The emulator lists each family's rows to scan them, as a region
/// server keeps a store per family; this is the behaviour that must not change.)
pub fn one_family_scans_follow_every_change(gw: &Gateway) {
    let t = gw.table(vec![FamilyDescriptor::new("f"), FamilyDescriptor::new("n")]);
    let c = gw.client();
    for row in ["a", "b", "c", "d"] {
        c.put(t.name(), &Put::new(row).add("f", "q", "data"))
            .unwrap();
    }
    let notified = |expected: &[&str]| {
        let found = scan_rows(gw, t.name(), &Scan::new().family("n"));
        assert_eq!(found, expected, "rows with a cell in n");
    };
    notified(&[]);
    for row in ["b", "c", "d"] {
        c.put(t.name(), &Put::new(row).add_at("n", "x", 10, ""))
            .unwrap();
    }
    notified(&["b", "c", "d"]);
    // Exact version: the cell goes and the row with it; the marker hides a later put there.
    let exact = |row: &str| {
        Delete::new(row)
            .delete_type(DeleteType::Column)
            .column_at("n", "x", 10)
    };
    c.delete(t.name(), &exact("b")).unwrap();
    notified(&["c", "d"]);
    c.put(t.name(), &Put::new("b").add_at("n", "x", 10, ""))
        .unwrap();
    notified(&["c", "d"]);
    c.put(t.name(), &Put::new("b").add_at("n", "x", 11, ""))
        .unwrap();
    notified(&["b", "c", "d"]);
    // Inside a checkAndMutate, beside a put to the other family.
    let cam = CheckAndMutate::new("c", "f", "q", CompareOp::Equal, "data")
        .put(Put::new("c").add("f", "q", "done"))
        .delete(exact("c"));
    assert!(c.check_and_mutate(t.name(), &cam).unwrap());
    notified(&["b", "d"]);
    // Whole family, whole row; the row's other family stays readable.
    let family = Delete::new("d").family("n").delete_type(DeleteType::Family);
    c.delete(t.name(), &family).unwrap();
    c.delete(t.name(), &Delete::new("b")).unwrap();
    notified(&[]);
    assert_eq!(
        scan_rows(gw, t.name(), &Scan::new().family("f")),
        ["a", "c", "d"]
    );
    c.put(t.name(), &Put::new("a").add("n", "y", "")).unwrap();
    notified(&["a"]);
    c.increment(t.name(), &Increment::new("c").add("n", "hits", 1))
        .unwrap();
    notified(&["a", "c"]);
}
