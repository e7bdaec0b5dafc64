//! The four delete types, row deletes, and delete markers (which hide later puts too).

use percolator::hbase::{Delete, DeleteType, FamilyDescriptor, Get, Put};
use percolator::Error;

use super::{cells, versions};
use crate::common::Gateway;

fn timestamps(gw: &Gateway, table: &str, row: &str, family: &str, qualifier: &str) -> Vec<i64> {
    let got = gw
        .client()
        .get(table, &Get::new(row).max_versions(10))
        .unwrap();
    versions(&got, family, qualifier)
        .into_iter()
        .map(|(ts, _)| ts)
        .collect()
}

fn put_versions(gw: &Gateway, table: &str, row: &str, column: (&str, &str), stamps: &[i64]) {
    for ts in stamps {
        let put = Put::new(row).add_at(column.0, column.1, *ts, format!("v{ts}"));
        gw.client().put(table, &put).unwrap();
    }
}

pub fn delete_column_removes_one_version(gw: &Gateway) {
    let t = gw.table_f(5);
    let c = gw.client();
    put_versions(gw, t.name(), "r", ("f", "q"), &[1, 2, 3]);
    let latest = Delete::new("r")
        .column("f", "q")
        .delete_type(DeleteType::Column);
    c.delete(t.name(), &latest).unwrap();
    assert_eq!(
        timestamps(gw, t.name(), "r", "f", "q"),
        vec![2, 1],
        "without a timestamp: the latest version"
    );

    let exact = Delete::new("r")
        .column_at("f", "q", 1)
        .delete_type(DeleteType::Column);
    c.delete(t.name(), &exact).unwrap();
    assert_eq!(
        timestamps(gw, t.name(), "r", "f", "q"),
        vec![2],
        "with one: exactly that version"
    );
}

pub fn delete_columns_removes_versions_up_to_ts(gw: &Gateway) {
    let t = gw.table_f(5);
    let c = gw.client();
    put_versions(gw, t.name(), "r", ("f", "q"), &[1, 2, 3]);
    put_versions(gw, t.name(), "r", ("f", "other"), &[1]);
    c.delete(t.name(), &Delete::new("r").column_at("f", "q", 2))
        .unwrap();
    assert_eq!(timestamps(gw, t.name(), "r", "f", "q"), vec![3]);
    c.delete(t.name(), &Delete::new("r").column("f", "q"))
        .unwrap();
    assert!(
        timestamps(gw, t.name(), "r", "f", "q").is_empty(),
        "without a timestamp: every version"
    );
    assert_eq!(
        timestamps(gw, t.name(), "r", "f", "other"),
        vec![1],
        "other columns untouched"
    );
}

pub fn delete_family_and_family_version(gw: &Gateway) {
    let t = gw.table(vec![
        FamilyDescriptor::new("f").max_versions(5),
        FamilyDescriptor::new("g").max_versions(5),
    ]);
    let c = gw.client();
    put_versions(gw, t.name(), "r", ("f", "a"), &[1, 2]);
    put_versions(gw, t.name(), "r", ("f", "b"), &[2, 3]);
    put_versions(gw, t.name(), "r", ("g", "c"), &[2]);

    let without_column_ts = Delete::new("r")
        .family("f")
        .timestamp(2)
        .delete_type(DeleteType::FamilyVersion);
    let err = c.delete(t.name(), &without_column_ts).unwrap_err();
    assert!(
        matches!(err, Error::Rejected { .. }),
        "DELETE_FAMILY_VERSION takes its timestamp from the column: {err:?}"
    );
    let at_two = Delete::new("r")
        .family_at("f", 2)
        .delete_type(DeleteType::FamilyVersion);
    c.delete(t.name(), &at_two).unwrap();
    assert_eq!(timestamps(gw, t.name(), "r", "f", "a"), vec![1]);
    assert_eq!(timestamps(gw, t.name(), "r", "f", "b"), vec![3]);
    assert_eq!(
        timestamps(gw, t.name(), "r", "g", "c"),
        vec![2],
        "other family untouched"
    );

    let family = Delete::new("r").family("f").delete_type(DeleteType::Family);
    c.delete(t.name(), &family).unwrap();
    let got = c.get(t.name(), &Get::new("r").max_versions(10)).unwrap();
    assert_eq!(cells(&got), vec![("g:c".to_owned(), "v2".to_owned())]);
}

pub fn row_deletes(gw: &Gateway) {
    let t = gw.table(vec![
        FamilyDescriptor::new("f").max_versions(5),
        FamilyDescriptor::new("g").max_versions(5),
    ]);
    let c = gw.client();
    put_versions(gw, t.name(), "r", ("f", "a"), &[5, 6]);
    put_versions(gw, t.name(), "r", ("g", "b"), &[4]);
    c.delete(t.name(), &Delete::new("r").timestamp(5)).unwrap();
    assert_eq!(
        timestamps(gw, t.name(), "r", "f", "a"),
        vec![6],
        "versions <= ts are gone"
    );
    assert!(timestamps(gw, t.name(), "r", "g", "b").is_empty());

    c.delete(t.name(), &Delete::new("r")).unwrap();
    assert!(c.get(t.name(), &Get::new("r")).unwrap().is_empty());
}

pub fn markers_hide_later_puts_at_or_below_them(gw: &Gateway) {
    let t = gw.table_f(5);
    let c = gw.client();
    c.delete(t.name(), &Delete::new("r").column_at("f", "q", 10))
        .unwrap();
    put_versions(gw, t.name(), "r", ("f", "q"), &[5, 10]);
    assert!(
        timestamps(gw, t.name(), "r", "f", "q").is_empty(),
        "puts written after the marker, at or below it, stay hidden"
    );
    put_versions(gw, t.name(), "r", ("f", "q"), &[11]);
    assert_eq!(timestamps(gw, t.name(), "r", "f", "q"), vec![11]);

    c.delete(t.name(), &Delete::new("row2").timestamp(100))
        .unwrap();
    put_versions(gw, t.name(), "row2", ("f", "q"), &[100, 101]);
    assert_eq!(
        timestamps(gw, t.name(), "row2", "f", "q"),
        vec![101],
        "row markers too"
    );
}

pub fn family_only_column_deletes_the_empty_qualifier(gw: &Gateway) {
    let t = gw.table_f(1);
    let c = gw.client();
    c.put(
        t.name(),
        &Put::new("r").add("f", "", "empty").add("f", "a", "named"),
    )
    .unwrap();
    let delete = Delete::new("r")
        .family("f")
        .delete_type(DeleteType::Columns);
    c.delete(t.name(), &delete).unwrap();
    let got = c.get(t.name(), &Get::new("r")).unwrap();
    assert_eq!(cells(&got), vec![("f:a".to_owned(), "named".to_owned())]);
}

pub fn delete_many_applies_all(gw: &Gateway) {
    let t = gw.table_f(1);
    let c = gw.client();
    let puts: Vec<Put> = ["a", "b", "c"]
        .iter()
        .map(|r| Put::new(*r).add("f", "q", "v"))
        .collect();
    c.put_many(t.name(), &puts).unwrap();
    c.delete_many(t.name(), &[Delete::new("a"), Delete::new("c")])
        .unwrap();
    let got = c
        .get_many(t.name(), &[Get::new("a"), Get::new("b"), Get::new("c")])
        .unwrap();
    let present: Vec<bool> = got.iter().map(|r| !r.is_empty()).collect();
    assert_eq!(present, vec![false, true, false]);
}
