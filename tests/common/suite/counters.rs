//! Increment, append and mutateRow.

use percolator::hbase::{Append, Delete, Get, Increment, Put, RowMutations};
use percolator::Error;

use crate::common::Gateway;

fn counter(bytes: Option<&[u8]>) -> i64 {
    i64::from_be_bytes(
        bytes
            .expect("counter cell")
            .try_into()
            .expect("8-byte counter"),
    )
}

pub fn increment_adds_and_returns(gw: &Gateway) {
    let t = gw.table_f(1);
    let c = gw.client();
    let first = c
        .increment(t.name(), &Increment::new("r").add("f", "n", 5))
        .unwrap();
    assert_eq!(
        counter(first.value(b"f", b"n")),
        5,
        "an absent counter starts at zero"
    );
    let second = c
        .increment(
            t.name(),
            &Increment::new("r").add("f", "n", -7).add("f", "m", 1),
        )
        .unwrap();
    assert_eq!(counter(second.value(b"f", b"n")), -2);
    assert_eq!(counter(second.value(b"f", b"m")), 1);
    let stored = c.get(t.name(), &Get::new("r")).unwrap();
    assert_eq!(
        counter(stored.value(b"f", b"n")),
        -2,
        "stored as 8 big-endian bytes"
    );

    let mut quiet = Increment::new("r").add("f", "n", 2);
    quiet.return_results = false;
    c.increment(t.name(), &quiet).unwrap();
    assert_eq!(
        counter(c.get(t.name(), &Get::new("r")).unwrap().value(b"f", b"n")),
        0
    );

    c.put(t.name(), &Put::new("text").add("f", "n", "abc"))
        .unwrap();
    let err = c
        .increment(t.name(), &Increment::new("text").add("f", "n", 1))
        .unwrap_err();
    assert!(
        matches!(err, Error::ServerIo { .. } | Error::Rejected { .. }),
        "incrementing a non-counter cell must fail, got {err:?}"
    );
}

pub fn append_concatenates(gw: &Gateway) {
    let t = gw.table_f(1);
    let c = gw.client();
    let first = c
        .append(t.name(), &Append::new("r").add("f", "s", "ab"))
        .unwrap();
    assert_eq!(first.value(b"f", b"s"), Some(&b"ab"[..]));
    let second = c
        .append(t.name(), &Append::new("r").add("f", "s", "cd"))
        .unwrap();
    assert_eq!(second.value(b"f", b"s"), Some(&b"abcd"[..]));
    let stored = c.get(t.name(), &Get::new("r")).unwrap();
    assert_eq!(stored.value(b"f", b"s"), Some(&b"abcd"[..]));
}

pub fn mutate_row_is_atomic(gw: &Gateway) {
    let t = gw.table_f(1);
    let c = gw.client();
    c.put(t.name(), &Put::new("r").add("f", "old", "x"))
        .unwrap();
    let mutations = RowMutations::new("r")
        .put(Put::new("r").add("f", "new", "y"))
        .delete(Delete::new("r").column("f", "old"));
    c.mutate_row(t.name(), &mutations).unwrap();
    let got = c.get(t.name(), &Get::new("r")).unwrap();
    assert_eq!(got.value(b"f", b"new"), Some(&b"y"[..]));
    assert_eq!(got.value(b"f", b"old"), None);

    let wrong_row = RowMutations::new("r").put(Put::new("other").add("f", "q", "v"));
    assert!(
        c.mutate_row(t.name(), &wrong_row).is_err(),
        "mutations must be on the named row"
    );
    assert!(c.get(t.name(), &Get::new("other")).unwrap().is_empty());
}
