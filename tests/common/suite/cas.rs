//! checkAndPut / checkAndDelete / checkAndMutate: the reversed comparison, the empty-value
//! rules, row checks and per-row atomicity.

use std::cmp::Ordering;
use std::thread;

use percolator::hbase::{CheckAndMutate, CompareOp, Delete, Get, Put};
use percolator::Error;

use crate::common::gateway::now_ms;
use crate::common::Gateway;

const OPS: [CompareOp; 6] = [
    CompareOp::Less,
    CompareOp::LessOrEqual,
    CompareOp::Equal,
    CompareOp::NotEqual,
    CompareOp::GreaterOrEqual,
    CompareOp::Greater,
];

/// HBase applies the operator as `value OP cell`.
fn passes(op: CompareOp, value_vs_cell: Ordering) -> bool {
    match op {
        CompareOp::Less => value_vs_cell == Ordering::Less,
        CompareOp::LessOrEqual => value_vs_cell != Ordering::Greater,
        CompareOp::Equal => value_vs_cell == Ordering::Equal,
        CompareOp::NotEqual => value_vs_cell != Ordering::Equal,
        CompareOp::GreaterOrEqual => value_vs_cell != Ordering::Less,
        CompareOp::Greater => value_vs_cell == Ordering::Greater,
        CompareOp::NoOp => unreachable!("not in OPS"),
    }
}

/// Runs `value OP cell` as a CAS that writes a marker column, and checks that the marker was
/// written exactly when the call said so.
fn cas_writes_marker(
    gw: &Gateway,
    table: &str,
    row: &str,
    op: CompareOp,
    value: &str,
    marker: &str,
) -> bool {
    let cam =
        CheckAndMutate::new(row, "f", "q", op, value).put(Put::new(row).add("f", marker, "1"));
    let applied = gw.client().check_and_mutate(table, &cam).unwrap();
    let written = gw
        .client()
        .get(table, &Get::new(row).column("f", marker))
        .unwrap()
        .value(b"f", marker.as_bytes())
        .is_some();
    assert_eq!(
        applied, written,
        "{op:?} {value:?}: result and effect disagree"
    );
    applied
}

pub fn comparison_is_value_op_cell_for_every_operator(gw: &Gateway) {
    let t = gw.table_f(1);
    let cell = "mm";
    gw.client()
        .put(t.name(), &Put::new("r").add("f", "q", cell))
        .unwrap();
    // Below (and a proper prefix, which sorts first), equal, above.
    for (i, value) in ["a", "m", "mm", "mz", "z"].into_iter().enumerate() {
        for (j, op) in OPS.into_iter().enumerate() {
            let expected = passes(op, value.as_bytes().cmp(cell.as_bytes()));
            let applied = cas_writes_marker(gw, t.name(), "r", op, value, &format!("m{i}_{j}"));
            assert_eq!(applied, expected, "{value:?} {op:?} cell {cell:?}");
        }
    }
}

pub fn empty_value_matches_absent_or_empty_cells(gw: &Gateway) {
    let t = gw.table_f(1);
    let c = gw.client();
    c.put(t.name(), &Put::new("empty").add("f", "q", ""))
        .unwrap();
    c.put(t.name(), &Put::new("full").add("f", "q", "x"))
        .unwrap();
    for row in ["absent", "empty"] {
        for (j, op) in OPS.into_iter().enumerate() {
            let applied = cas_writes_marker(gw, t.name(), row, op, "", &format!("m{j}"));
            let expected = op != CompareOp::NotEqual;
            assert_eq!(applied, expected, "row {row}: {op:?} with the empty value");
        }
    }
    assert!(!cas_writes_marker(
        gw,
        t.name(),
        "full",
        CompareOp::Equal,
        "",
        "eq"
    ));
    assert!(
        cas_writes_marker(gw, t.name(), "full", CompareOp::NotEqual, "", "ne"),
        "NOT_EQUAL with the empty value matches an existing non-empty cell"
    );
}

pub fn check_and_put_and_delete_with_absent_value(gw: &Gateway) {
    let t = gw.table_f(1);
    let c = gw.client();
    let put = Put::new("r").add("f", "q", "v1");
    assert!(
        c.check_and_put(t.name(), b"r", b"f", b"q", None, &put)
            .unwrap(),
        "absent cell: applies"
    );
    assert!(
        !c.check_and_put(t.name(), b"r", b"f", b"q", None, &put)
            .unwrap(),
        "now it exists"
    );

    let next = Put::new("r").add("f", "q", "v2");
    assert!(!c
        .check_and_put(t.name(), b"r", b"f", b"q", Some(b"other"), &next)
        .unwrap());
    assert!(c
        .check_and_put(t.name(), b"r", b"f", b"q", Some(b"v1"), &next)
        .unwrap());
    assert_eq!(
        c.get(t.name(), &Get::new("r")).unwrap().value(b"f", b"q"),
        Some(&b"v2"[..])
    );

    let delete = Delete::new("r").column("f", "q");
    assert!(!c
        .check_and_delete(t.name(), b"r", b"f", b"q", None, &delete)
        .unwrap());
    assert!(!c
        .check_and_delete(t.name(), b"r", b"f", b"q", Some(b"v1"), &delete)
        .unwrap());
    assert!(c
        .check_and_delete(t.name(), b"r", b"f", b"q", Some(b"v2"), &delete)
        .unwrap());
    assert!(c.get(t.name(), &Get::new("r")).unwrap().is_empty());
}

pub fn mutations_on_another_row_are_rejected(gw: &Gateway) {
    let t = gw.table_f(1);
    let c = gw.client();
    let cam = CheckAndMutate::new("a", "f", "q", CompareOp::Equal, "")
        .put(Put::new("b").add("f", "q", "v"));
    let err = c.check_and_mutate(t.name(), &cam).unwrap_err();
    assert!(
        matches!(
            err,
            Error::ServerIo { .. } | Error::Rejected { .. } | Error::IllegalArgument { .. }
        ),
        "expected a server-side rejection, got {err:?}"
    );
    assert!(
        c.get(t.name(), &Get::new("b")).unwrap().is_empty(),
        "nothing written on the other row"
    );
    assert!(c.get(t.name(), &Get::new("a")).unwrap().is_empty());
}

pub fn check_and_mutate_applies_all_mutations_atomically(gw: &Gateway) {
    let t = gw.table_f(1);
    let c = gw.client();
    c.put(
        t.name(),
        &Put::new("r").add("f", "q", "1").add("f", "old", "x"),
    )
    .unwrap();
    let cam = CheckAndMutate::new("r", "f", "q", CompareOp::Equal, "1")
        .put(Put::new("r").add("f", "q", "2").add("f", "new", "y"))
        .delete(Delete::new("r").column("f", "old"));
    assert!(c.check_and_mutate(t.name(), &cam).unwrap());
    let got = c.get(t.name(), &Get::new("r")).unwrap();
    assert_eq!(got.value(b"f", b"q"), Some(&b"2"[..]));
    assert_eq!(got.value(b"f", b"new"), Some(&b"y"[..]));
    assert_eq!(got.value(b"f", b"old"), None);
    assert!(
        !c.check_and_mutate(t.name(), &cam).unwrap(),
        "the check now fails: nothing applied"
    );
}

pub fn concurrent_cas_increments_lose_no_update(gw: &Gateway) {
    const THREADS: usize = 8;
    const PER_THREAD: usize = 20;
    let t = gw.table_f(1);
    let table = t.name().to_owned();
    thread::scope(|s| {
        for _ in 0..THREADS {
            let client = gw.client().clone();
            let table = &table;
            s.spawn(move || {
                for _ in 0..PER_THREAD {
                    loop {
                        let current = client.get(table, &Get::new("counter")).unwrap();
                        let seen = current
                            .value(b"f", b"n")
                            .map(<[u8]>::to_vec)
                            .unwrap_or_default();
                        let n: u64 = if seen.is_empty() {
                            0
                        } else {
                            String::from_utf8(seen.clone()).unwrap().parse().unwrap()
                        };
                        let cam = CheckAndMutate::new("counter", "f", "n", CompareOp::Equal, seen)
                            .put(Put::new("counter").add("f", "n", (n + 1).to_string()));
                        if client.check_and_mutate(table, &cam).unwrap() {
                            break;
                        }
                    }
                }
            });
        }
    });
    let got = gw.client().get(&table, &Get::new("counter")).unwrap();
    let expected = (THREADS * PER_THREAD).to_string();
    assert_eq!(got.value(b"f", b"n"), Some(expected.as_bytes()));
}

pub fn server_timestamps_in_cas_never_go_below_the_checked_cell(gw: &Gateway) {
    let t = gw.table_f(1);
    let c = gw.client();
    let future = now_ms() + 10_000_000;
    c.put(t.name(), &Put::new("r").add_at("f", "q", future, "L"))
        .unwrap();
    let cam = CheckAndMutate::new("r", "f", "q", CompareOp::Equal, "L")
        .put(Put::new("r").add("f", "data", "d"));
    assert!(c.check_and_mutate(t.name(), &cam).unwrap());
    let got = c.get(t.name(), &Get::new("r")).unwrap();
    let ts = got.latest(b"f", b"data").expect("written").timestamp;
    assert!(
        ts >= future,
        "server-timestamped cell at {ts}, below the checked cell's {future}"
    );
}
