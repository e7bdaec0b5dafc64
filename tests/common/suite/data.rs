//! Puts and gets: versions, timestamps, TTL, time ranges and column selection.

use percolator::hbase::{FamilyDescriptor, Get, Put, TimeRange};
use percolator::Error;

use super::{cells, v, versions};
use crate::common::gateway::now_ms;
use crate::common::Gateway;

pub fn put_then_get_and_missing_rows(gw: &Gateway) {
    let t = gw.table_f(1);
    let c = gw.client();
    c.put(t.name(), &Put::new("r1").add("f", "q", "v1"))
        .unwrap();

    let got = c.get(t.name(), &Get::new("r1")).unwrap();
    assert_eq!(got.row, b"r1");
    assert_eq!(got.value(b"f", b"q"), Some(&b"v1"[..]));
    assert!(c.exists(t.name(), &Get::new("r1")).unwrap());

    let missing = c.get(t.name(), &Get::new("nope")).unwrap();
    assert!(missing.is_empty(), "a missing row has no cells");
    assert!(
        missing.row.is_empty(),
        "a missing row comes back without its key"
    );
    assert!(!c.exists(t.name(), &Get::new("nope")).unwrap());
}

pub fn versions_come_newest_first_in_column_order(gw: &Gateway) {
    let t = gw.table(vec![
        FamilyDescriptor::new("f").max_versions(5),
        FamilyDescriptor::new("g").max_versions(5),
    ]);
    let c = gw.client();
    // Written out of order on purpose.
    for (fam, q, ts) in [
        ("g", "x", 2),
        ("f", "b", 1),
        ("f", "a", 1),
        ("f", "a", 3),
        ("f", "b", 2),
        ("f", "a", 2),
    ] {
        c.put(
            t.name(),
            &Put::new("r").add_at(fam, q, ts, format!("{fam}{q}{ts}")),
        )
        .unwrap();
    }
    let got = c.get(t.name(), &Get::new("r").max_versions(5)).unwrap();
    let order: Vec<(String, i64)> = got
        .cells
        .iter()
        .map(|c| (super::column_name(c), c.timestamp))
        .collect();
    assert_eq!(
        order,
        vec![
            ("f:a".to_owned(), 3),
            ("f:a".to_owned(), 2),
            ("f:a".to_owned(), 1),
            ("f:b".to_owned(), 2),
            ("f:b".to_owned(), 1),
            ("g:x".to_owned(), 2),
        ]
    );
    assert_eq!(
        got.value(b"f", b"a"),
        Some(&b"fa3"[..]),
        "latest is the newest"
    );
    let plain = c.get(t.name(), &Get::new("r")).unwrap();
    assert_eq!(
        plain.cells.len(),
        3,
        "a get without maxVersions returns one version per column"
    );
}

pub fn same_cell_and_timestamp_is_replaced(gw: &Gateway) {
    let t = gw.table_f(5);
    let c = gw.client();
    c.put(t.name(), &Put::new("r").add_at("f", "q", 5, "first"))
        .unwrap();
    c.put(t.name(), &Put::new("r").add_at("f", "q", 5, "second"))
        .unwrap();
    let got = c.get(t.name(), &Get::new("r").max_versions(5)).unwrap();
    assert_eq!(versions(&got, "f", "q"), vec![(5, v("second"))]);
}

pub fn family_versions_cap_what_reads_return(gw: &Gateway) {
    let t = gw.table(vec![
        FamilyDescriptor::new("one"),
        FamilyDescriptor::new("two").max_versions(2),
    ]);
    let c = gw.client();
    for ts in 1..=3 {
        let put = Put::new("r")
            .add_at("one", "q", ts, format!("v{ts}"))
            .add_at("two", "q", ts, format!("v{ts}"));
        c.put(t.name(), &put).unwrap();
    }
    let got = c.get(t.name(), &Get::new("r").max_versions(10)).unwrap();
    assert_eq!(
        versions(&got, "one", "q"),
        vec![(3, v("v3"))],
        "HBase 2.x families keep 1 version by default"
    );
    assert_eq!(versions(&got, "two", "q"), vec![(3, v("v3")), (2, v("v2"))]);
}

pub fn ttl_hides_cells_by_their_timestamp(gw: &Gateway) {
    let t = gw.table(vec![FamilyDescriptor::new("f").ttl_secs(5).max_versions(3)]);
    let c = gw.client();
    let now = now_ms();
    // TTL is measured against the cell timestamp read as epoch ms: 10 s old is already gone.
    c.put(
        t.name(),
        &Put::new("old").add_at("f", "q", now - 10_000, "stale"),
    )
    .unwrap();
    c.put(t.name(), &Put::new("new").add_at("f", "q", now, "fresh"))
        .unwrap();
    c.put(t.name(), &Put::new("server").add("f", "q", "server-time"))
        .unwrap();

    assert!(c.get(t.name(), &Get::new("old")).unwrap().is_empty());
    assert_eq!(
        c.get(t.name(), &Get::new("new")).unwrap().value(b"f", b"q"),
        Some(&b"fresh"[..])
    );
    assert_eq!(
        c.get(t.name(), &Get::new("server"))
            .unwrap()
            .value(b"f", b"q"),
        Some(&b"server-time"[..])
    );
}

pub fn min_versions_keep_expired_versions(gw: &Gateway) {
    let t = gw.table(vec![FamilyDescriptor::new("f")
        .ttl_secs(5)
        .min_versions(1)
        .max_versions(3)]);
    let c = gw.client();
    let now = now_ms();
    c.put(
        t.name(),
        &Put::new("r").add_at("f", "q", now - 20_000, "older"),
    )
    .unwrap();
    c.put(
        t.name(),
        &Put::new("r").add_at("f", "q", now - 10_000, "newest-expired"),
    )
    .unwrap();
    let got = c.get(t.name(), &Get::new("r").max_versions(3)).unwrap();
    assert_eq!(
        versions(&got, "f", "q"),
        vec![(now - 10_000, v("newest-expired"))],
        "MIN_VERSIONS 1 keeps the newest version past its TTL, and only that one"
    );
}

pub fn time_ranges_exclude_their_max(gw: &Gateway) {
    let t = gw.table_f(5);
    let c = gw.client();
    for ts in [10, 20, 30] {
        c.put(
            t.name(),
            &Put::new("r").add_at("f", "q", ts, format!("v{ts}")),
        )
        .unwrap();
    }
    let read = |range: TimeRange| {
        let got = c
            .get(t.name(), &Get::new("r").time_range(range).max_versions(5))
            .unwrap();
        versions(&got, "f", "q")
            .into_iter()
            .map(|(ts, _)| ts)
            .collect::<Vec<_>>()
    };
    assert_eq!(read(TimeRange::new(10, 30)), vec![20, 10]);
    assert_eq!(read(TimeRange::new(20, 21)), vec![20]);
    assert_eq!(read(TimeRange::up_to(30)), vec![30, 20, 10]);
    assert_eq!(read(TimeRange::new(31, 100)), Vec::<i64>::new());
    // Without maxVersions a time range still returns only the newest version inside it.
    let newest = c
        .get(t.name(), &Get::new("r").time_range(TimeRange::new(0, 25)))
        .unwrap();
    assert_eq!(versions(&newest, "f", "q"), vec![(20, v("v20"))]);
}

pub fn get_timestamp_selects_one_version(gw: &Gateway) {
    let t = gw.table_f(5);
    let c = gw.client();
    for ts in [10, 20, 30] {
        c.put(
            t.name(),
            &Put::new("r").add_at("f", "q", ts, format!("v{ts}")),
        )
        .unwrap();
    }
    let exact = c
        .get(t.name(), &Get::new("r").timestamp(20).max_versions(5))
        .unwrap();
    assert_eq!(versions(&exact, "f", "q"), vec![(20, v("v20"))]);
    // The timestamp overrides a time range that would exclude it.
    let overridden = c
        .get(
            t.name(),
            &Get::new("r").time_range(TimeRange::new(0, 1)).timestamp(30),
        )
        .unwrap();
    assert_eq!(versions(&overridden, "f", "q"), vec![(30, v("v30"))]);
    assert!(c
        .get(t.name(), &Get::new("r").timestamp(15))
        .unwrap()
        .is_empty());
}

pub fn max_versions_must_be_positive(gw: &Gateway) {
    let t = gw.table_f(5);
    let c = gw.client();
    c.put(t.name(), &Put::new("r").add("f", "q", "v")).unwrap();
    for n in [0, -1] {
        let err = c.get(t.name(), &Get::new("r").max_versions(n)).unwrap_err();
        assert!(
            matches!(
                err,
                Error::ServerIo { .. } | Error::Rejected { .. } | Error::IllegalArgument { .. }
            ),
            "maxVersions {n}: expected a server-side rejection, got {err:?}"
        );
    }
}

pub fn put_timestamp_precedence(gw: &Gateway) {
    let t = gw.table_f(5);
    let c = gw.client();
    let before = now_ms();
    let put = Put::new("r")
        .add_at("f", "cell", 50, "a")
        .add("f", "put", "b")
        .timestamp(100);
    c.put(t.name(), &put).unwrap();
    c.put(t.name(), &Put::new("r").add("f", "server", "c"))
        .unwrap();
    let got = c.get(t.name(), &Get::new("r")).unwrap();
    assert_eq!(
        got.latest(b"f", b"cell").unwrap().timestamp,
        50,
        "per-cell timestamp wins"
    );
    assert_eq!(
        got.latest(b"f", b"put").unwrap().timestamp,
        100,
        "then the put's timestamp"
    );
    let server = got.latest(b"f", b"server").unwrap().timestamp;
    // Server time in ms; a generous window allows for clock skew with a remote gateway.
    assert!(
        (before - 600_000..before + 600_000).contains(&server),
        "server timestamp {server} is not wall-clock ms near {before}"
    );
}

pub fn family_and_column_selectors(gw: &Gateway) {
    let t = gw.table(vec![FamilyDescriptor::new("f"), FamilyDescriptor::new("g")]);
    let c = gw.client();
    c.put(
        t.name(),
        &Put::new("r")
            .add("f", "a", "1")
            .add("f", "b", "2")
            .add("g", "c", "3"),
    )
    .unwrap();
    let read = |get: Get| cells(&c.get(t.name(), &get).unwrap());
    let pairs = |items: &[(&str, &str)]| {
        items
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        read(Get::new("r").family("f")),
        pairs(&[("f:a", "1"), ("f:b", "2")])
    );
    assert_eq!(read(Get::new("r").column("f", "b")), pairs(&[("f:b", "2")]));
    assert_eq!(
        read(Get::new("r").column("f", "a").family("g")),
        pairs(&[("f:a", "1"), ("g:c", "3")])
    );
    assert_eq!(read(Get::new("r").column("f", "zz")), pairs(&[]));
}

pub fn get_many_keeps_request_order(gw: &Gateway) {
    let t = gw.table_f(1);
    let c = gw.client();
    let puts = [
        Put::new("a").add("f", "q", "A"),
        Put::new("c").add("f", "q", "C"),
    ];
    c.put_many(t.name(), &puts).unwrap();
    let got = c
        .get_many(t.name(), &[Get::new("c"), Get::new("b"), Get::new("a")])
        .unwrap();
    assert_eq!(got.len(), 3);
    assert_eq!(got[0].value(b"f", b"q"), Some(&b"C"[..]));
    assert!(
        got[1].is_empty(),
        "missing rows stay in place as empty results"
    );
    assert_eq!(got[2].value(b"f", b"q"), Some(&b"A"[..]));
}

pub fn put_without_columns_is_rejected(gw: &Gateway) {
    let t = gw.table_f(1);
    let err = gw.client().put(t.name(), &Put::new("r")).unwrap_err();
    assert!(
        matches!(
            err,
            Error::ServerIo { .. } | Error::Rejected { .. } | Error::IllegalArgument { .. }
        ),
        "expected a server-side rejection, got {err:?}"
    );
}
