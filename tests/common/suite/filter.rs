//! The common filters of HBase's filter language, alone and combined with AND / OR.

use percolator::hbase::{FamilyDescriptor, Get, Put, RowResult, Scan};
use percolator::Error;

use super::{cells, rows};
use crate::common::{Gateway, TestTable};

/// apple {f:a=1, f:b=x, g:c=2}, apricot {f:a=2}, banana {f:a=1, f:bb=y}.
fn fruit(gw: &Gateway) -> TestTable {
    let t = gw.table(vec![FamilyDescriptor::new("f"), FamilyDescriptor::new("g")]);
    let puts = [
        Put::new("apple")
            .add("f", "a", "1")
            .add("f", "b", "x")
            .add("g", "c", "2"),
        Put::new("apricot").add("f", "a", "2"),
        Put::new("banana").add("f", "a", "1").add("f", "bb", "y"),
    ];
    gw.client().put_many(t.name(), &puts).unwrap();
    t
}

fn filtered(gw: &Gateway, table: &str, filter: &str) -> Vec<RowResult> {
    gw.client()
        .scan(table, &Scan::new().filter(filter))
        .unwrap()
        .collect::<percolator::Result<Vec<_>>>()
        .unwrap_or_else(|e| panic!("{filter}: {e}"))
}

fn columns(results: &[RowResult]) -> Vec<String> {
    results
        .iter()
        .flat_map(|r| {
            let row = String::from_utf8_lossy(&r.row).into_owned();
            r.cells
                .iter()
                .map(move |c| format!("{row}/{}", super::column_name(c)))
        })
        .collect()
}

pub fn row_filters(gw: &Gateway) {
    let t = fruit(gw);
    assert_eq!(
        rows(&filtered(gw, t.name(), "PrefixFilter('ap')")),
        vec!["apple", "apricot"]
    );

    let key_only = filtered(gw, t.name(), "KeyOnlyFilter()");
    assert_eq!(columns(&key_only).len(), 6, "every cell is still there");
    assert!(
        key_only
            .iter()
            .flat_map(|r| &r.cells)
            .all(|c| c.value.is_empty()),
        "without values"
    );

    let first = filtered(gw, t.name(), "FirstKeyOnlyFilter()");
    assert_eq!(
        columns(&first),
        vec!["apple/f:a", "apricot/f:a", "banana/f:a"]
    );
}

pub fn cell_filters(gw: &Gateway) {
    let t = fruit(gw);
    assert_eq!(
        columns(&filtered(gw, t.name(), "ColumnPrefixFilter('b')")),
        vec!["apple/f:b", "banana/f:bb"]
    );
    assert_eq!(
        columns(&filtered(gw, t.name(), "QualifierFilter(=,'binary:a')")),
        vec!["apple/f:a", "apricot/f:a", "banana/f:a"]
    );
    assert_eq!(
        columns(&filtered(gw, t.name(), "FamilyFilter(=,'binary:g')")),
        vec!["apple/g:c"]
    );
}

pub fn value_filters(gw: &Gateway) {
    let t = fruit(gw);
    let matching = filtered(
        gw,
        t.name(),
        "SingleColumnValueFilter('f','a',=,'binary:1')",
    );
    assert_eq!(rows(&matching), vec!["apple", "banana"]);
    assert_eq!(
        matching[0].cells.len(),
        3,
        "the whole row comes back, not just the tested cell"
    );
}

pub fn and_or_combinations(gw: &Gateway) {
    let t = fruit(gw);
    assert_eq!(
        columns(&filtered(
            gw,
            t.name(),
            "PrefixFilter('ap') AND QualifierFilter(=,'binary:a')"
        )),
        vec!["apple/f:a", "apricot/f:a"]
    );
    assert_eq!(
        rows(&filtered(
            gw,
            t.name(),
            "PrefixFilter('ban') OR PrefixFilter('apr')"
        )),
        vec!["apricot", "banana"]
    );
    assert_eq!(
        columns(&filtered(
            gw,
            t.name(),
            "(PrefixFilter('apple') OR PrefixFilter('banana')) AND (QualifierFilter(=,'binary:b') OR FamilyFilter(=,'binary:g'))"
        )),
        vec!["apple/f:b", "apple/g:c"]
    );
}

pub fn get_with_filter(gw: &Gateway) {
    let t = fruit(gw);
    let got = gw
        .client()
        .get(
            t.name(),
            &Get::new("apple").filter("ColumnPrefixFilter('b')"),
        )
        .unwrap();
    assert_eq!(cells(&got), vec![("f:b".to_owned(), "x".to_owned())]);
}

pub fn bad_filter_is_rejected(gw: &Gateway) {
    let t = fruit(gw);
    // A gateway may refuse the scanner at open or at its first page.
    let err = match gw
        .client()
        .scan(t.name(), &Scan::new().filter("PrefixFilter('ap'"))
    {
        Ok(scanner) => scanner.collect::<percolator::Result<Vec<_>>>().unwrap_err(),
        Err(e) => e,
    };
    assert!(
        matches!(err, Error::Rejected { .. }),
        "a syntax error is INTERNAL_ERROR: {err:?}"
    );
    let err = gw
        .client()
        .get(t.name(), &Get::new("apple").filter("NoSuchFilter()"))
        .unwrap_err();
    assert!(matches!(err, Error::Rejected { .. }), "{err:?}");
}
