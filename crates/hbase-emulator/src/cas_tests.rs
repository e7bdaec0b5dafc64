//! Check-and-mutate, row mutations, increment and append: HBase's comparison direction, the
//! empty-value rules, timestamps, atomicity and row locking.

use crate::data_tests::io_message;
use crate::error::ServerError;
use crate::testutil::*;
use percolator_thrift::hbase::{TMutation, TRowMutations};

#[test]
fn check_and_put_without_a_value_means_the_cell_must_not_exist() {
    let e = env();
    e.create("t", &[("f", 1)]);
    let p = tput("r", vec![cv("f", "q", None, "first")]);
    assert!(e
        .h
        .check_and_put(b"t", b"r", b"f".to_vec(), b"q".to_vec(), None, &p)
        .unwrap());
    let p2 = tput("r", vec![cv("f", "q", None, "second")]);
    assert!(!e
        .h
        .check_and_put(b"t", b"r", b"f".to_vec(), b"q".to_vec(), None, &p2)
        .unwrap());
    assert!(e
        .h
        .check_and_put(
            b"t",
            b"r",
            b"f".to_vec(),
            b"q".to_vec(),
            Some(b"first".to_vec()),
            &p2
        )
        .unwrap());
    assert_eq!(e.all_versions("t", "r"), vec![format!("f:q@{T0}=second")]);
}

fn cas(e: &Env, op: percolator_thrift::hbase::TCompareOp, value: &str) -> bool {
    let rm = TRowMutations {
        row: b"r".to_vec(),
        mutations: vec![TMutation::Put(tput("r", vec![cv("f", "other", None, "x")]))],
    };
    e.h.check_and_mutate(
        b"t",
        b"r",
        b"f".to_vec(),
        b"q".to_vec(),
        op,
        Some(value.into()),
        &rm,
    )
    .unwrap()
}

#[test]
fn check_and_mutate_compares_value_op_cell() {
    use percolator_thrift::hbase::TCompareOp as Op;
    let e = env();
    e.create("t", &[("f", 1)]);
    e.put("t", "r", vec![cv("f", "q", None, "m")]);
    assert!(cas(&e, Op::LESS, "a"));
    assert!(!cas(&e, Op::LESS, "z"));
    assert!(cas(&e, Op::GREATER, "z"));
    assert!(!cas(&e, Op::GREATER, "m"));
    assert!(cas(&e, Op::GREATER_OR_EQUAL, "m"));
    assert!(cas(&e, Op::LESS_OR_EQUAL, "m"));
    assert!(cas(&e, Op::EQUAL, "m"));
    assert!(cas(&e, Op::NOT_EQUAL, "n"));
    // A proper prefix sorts first.
    assert!(cas(&e, Op::LESS, "\u{0}") && cas(&e, Op::GREATER, "m\u{0}"));
    assert!(!cas(&e, Op::GREATER, ""));
}

#[test]
fn empty_expected_values_match_absent_or_empty_cells_except_for_not_equal() {
    use percolator_thrift::hbase::TCompareOp as Op;
    let e = env();
    e.create("t", &[("f", 1)]);
    for op in [
        Op::EQUAL,
        Op::LESS,
        Op::GREATER,
        Op::LESS_OR_EQUAL,
        Op::GREATER_OR_EQUAL,
    ] {
        assert!(cas(&e, op, ""), "{op:?} on an absent cell");
    }
    assert!(!cas(&e, Op::NOT_EQUAL, ""));
    e.put("t", "r", vec![cv("f", "q", None, "")]);
    assert!(cas(&e, Op::EQUAL, "") && cas(&e, Op::GREATER, ""));
    assert!(!cas(&e, Op::NOT_EQUAL, ""));
    e.put("t", "r", vec![cv("f", "q", Some(T0 + 1), "x")]);
    assert!(!cas(&e, Op::EQUAL, "") && !cas(&e, Op::LESS, ""));
    assert!(cas(&e, Op::NOT_EQUAL, ""));
}

#[test]
fn check_and_mutate_edge_cases() {
    use percolator_thrift::hbase::TCompareOp as Op;
    let e = env();
    e.create("t", &[("f", 1)]);
    let rm = |row: &str, put_row: &str| TRowMutations {
        row: row.into(),
        mutations: vec![TMutation::Put(tput(put_row, vec![cv("f", "q", None, "v")]))],
    };
    let run = |value: Option<&str>, m: &TRowMutations| {
        e.h.check_and_mutate(
            b"t",
            b"r",
            b"f".to_vec(),
            b"q".to_vec(),
            Op::EQUAL,
            value.map(Into::into),
            m,
        )
    };
    assert!(matches!(
        run(None, &rm("r", "r")),
        Err(ServerError::Internal(_))
    ));
    assert!(io_message(run(Some(""), &rm("s", "s")).unwrap_err()).contains("getRow must match"));
    assert!(io_message(run(Some(""), &rm("r", "s")).unwrap_err()).contains("WrongRowIOException"));
    // The checked family must exist; mutation families only matter once the check passed.
    let missing = e.h.check_and_mutate(
        b"t",
        b"r",
        b"nope".to_vec(),
        b"q".to_vec(),
        Op::EQUAL,
        Some(vec![]),
        &rm("r", "r"),
    );
    assert!(io_message(missing.unwrap_err()).contains("NoSuchColumnFamilyException"));
    assert!(e.all_versions("t", "r").is_empty());
}

#[test]
fn checked_puts_never_land_below_the_checked_cell() {
    use percolator_thrift::hbase::TCompareOp as Op;
    let e = env();
    e.create("t", &[("f", 1)]);
    e.put("t", "r", vec![cv("f", "q", Some(T0 + 500), "v")]);
    let rm = TRowMutations {
        row: b"r".to_vec(),
        mutations: vec![TMutation::Put(tput("r", vec![cv("f", "q", None, "w")]))],
    };
    assert!(e
        .h
        .check_and_mutate(
            b"t",
            b"r",
            b"f".to_vec(),
            b"q".to_vec(),
            Op::EQUAL,
            Some(b"v".to_vec()),
            &rm
        )
        .unwrap());
    assert_eq!(
        e.all_versions("t", "r"),
        vec![format!("f:q@{}=w", T0 + 500)]
    );
}

#[test]
fn mutate_row_is_atomic_and_delete_markers_share_its_timestamp() {
    let e = env();
    e.create("t", &[("f", 3)]);
    let rm = TRowMutations {
        row: b"r".to_vec(),
        mutations: vec![
            TMutation::Put(tput("r", vec![cv("f", "a", None, "1")])),
            TMutation::DeleteSingle(tdelete("r", Some(vec![col("f", Some("b"), None)]), None)),
            TMutation::Put(tput("r", vec![cv("f", "b", None, "2")])),
        ],
    };
    e.h.mutate_row(b"t", &rm).unwrap();
    // The delete's marker is at "now", the same timestamp as the put of f:b, so it hides it.
    assert_eq!(e.all_versions("t", "r"), vec![format!("f:a@{T0}=1")]);
    let bad = TRowMutations {
        row: b"r".to_vec(),
        mutations: vec![
            TMutation::Put(tput("r", vec![cv("f", "c", None, "1")])),
            TMutation::Put(tput("r", vec![cv("nope", "c", None, "1")])),
        ],
    };
    assert!(e.h.mutate_row(b"t", &bad).is_err());
    assert_eq!(e.all_versions("t", "r").len(), 1);
}

#[test]
fn increment_and_append() {
    use percolator_thrift::hbase::{TAppend, TColumnIncrement, TIncrement};
    let e = env();
    e.create("t", &[("f", 1)]);
    let inc = |amount: Option<i64>, ret: Option<bool>| TIncrement {
        row: b"r".to_vec(),
        columns: vec![TColumnIncrement {
            family: b"f".to_vec(),
            qualifier: b"n".to_vec(),
            amount,
        }],
        attributes: None,
        durability: None,
        cell_visibility: None,
        return_results: ret,
    };
    let r = e.h.increment(b"t", &inc(Some(5), None)).unwrap();
    assert_eq!(r.column_values[0].value, 5i64.to_be_bytes());
    let r = e.h.increment(b"t", &inc(None, None)).unwrap();
    assert_eq!(r.column_values[0].value, 6i64.to_be_bytes());
    // The new version is always above the old one.
    assert_eq!(r.column_values[0].timestamp, Some(T0 + 1));
    let r = e.h.increment(b"t", &inc(Some(-10), Some(false))).unwrap();
    assert!(r.column_values.is_empty() && r.row.is_none());
    e.put("t", "r", vec![cv("f", "s", None, "abc")]);
    let mut bad = inc(Some(1), None);
    bad.columns[0].qualifier = b"s".to_vec();
    assert!(io_message(e.h.increment(b"t", &bad).unwrap_err()).contains("it's 3 bytes wide"));
    let app = TAppend {
        row: b"r".to_vec(),
        columns: vec![cv("f", "s", None, "def")],
        attributes: None,
        durability: None,
        cell_visibility: None,
        return_results: None,
    };
    let r = e.h.append(b"t", &app).unwrap();
    assert_eq!(r.column_values[0].value, b"abcdef");
}

#[test]
fn concurrent_check_and_mutate_on_one_row_never_loses_an_update() {
    use percolator_thrift::hbase::TCompareOp as Op;
    let e = env();
    e.create("t", &[("f", 1)]);
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let h = e.h.clone();
            std::thread::spawn(move || {
                let mut done = 0;
                while done < 50 {
                    let current = h.get(b"t", &tget(b"r")).unwrap();
                    let value = current.column_values.first().map(|c| c.value.clone());
                    let n = value
                        .as_ref()
                        .map_or(0, |v| u64::from_be_bytes(v.as_slice().try_into().unwrap()));
                    let rm = TRowMutations {
                        row: b"r".to_vec(),
                        mutations: vec![TMutation::Put(tput(
                            "r",
                            vec![percolator_thrift::hbase::TColumnValue {
                                value: (n + 1).to_be_bytes().to_vec(),
                                ..cv("f", "n", None, "")
                            }],
                        ))],
                    };
                    let expected = value.unwrap_or_default();
                    if h.check_and_mutate(
                        b"t",
                        b"r",
                        b"f".to_vec(),
                        b"n".to_vec(),
                        Op::EQUAL,
                        Some(expected),
                        &rm,
                    )
                    .unwrap()
                    {
                        done += 1;
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let r = e.h.get(b"t", &tget(b"r")).unwrap();
    assert_eq!(r.column_values[0].value, 200u64.to_be_bytes());
}
