//! HBase 2.x data semantics, exercised through the gateway's methods with Thrift structs.

use crate::error::ServerError;
use crate::testutil::*;
use percolator_thrift::hbase::{TDeleteType, TTimeRange};

pub(crate) fn io_message(e: ServerError) -> String {
    match e {
        ServerError::Io { .. } => e.to_string(),
        other => panic!("expected a TIOError, got {other:?}"),
    }
}

#[test]
fn versions_come_newest_first_and_family_versions_caps_every_read() {
    let e = env();
    e.create("t", &[("f", 3), ("one", 1)]);
    for ts in [1, 3, 2, 4] {
        e.put("t", "r", vec![cv("f", "q", Some(ts), &format!("v{ts}"))]);
        e.put("t", "r", vec![cv("one", "q", Some(ts), &format!("v{ts}"))]);
    }
    assert_eq!(
        e.all_versions("t", "r"),
        vec!["f:q@4=v4", "f:q@3=v3", "f:q@2=v2", "one:q@4=v4"]
    );
    // The default is one version.
    assert_eq!(e.get("t", &tget(b"r")), vec!["f:q@4=v4", "one:q@4=v4"]);
}

#[test]
fn timestamp_precedence_is_cell_then_put_then_server_clock() {
    let e = env();
    e.create("t", &[("f", 5)]);
    let mut p = tput(
        "r",
        vec![cv("f", "a", Some(7), "x"), cv("f", "b", None, "y")],
    );
    p.timestamp = Some(9);
    e.h.put(b"t", &p).unwrap();
    e.put("t", "r", vec![cv("f", "c", None, "z")]);
    assert_eq!(
        e.all_versions("t", "r"),
        vec![
            "f:a@7=x".to_string(),
            "f:b@9=y".into(),
            format!("f:c@{T0}=z")
        ]
    );
}

#[test]
fn a_put_to_the_same_cell_and_timestamp_replaces_it() {
    let e = env();
    e.create("t", &[("f", 5)]);
    e.put("t", "r", vec![cv("f", "q", Some(5), "old")]);
    e.put("t", "r", vec![cv("f", "q", Some(5), "new")]);
    assert_eq!(e.all_versions("t", "r"), vec!["f:q@5=new"]);
}

#[test]
fn time_ranges_exclude_their_max_and_get_timestamp_overrides_them() {
    let e = env();
    e.create("t", &[("f", 5)]);
    for ts in [10, 20, 30] {
        e.put("t", "r", vec![cv("f", "q", Some(ts), "v")]);
    }
    let mut g = tget(b"r");
    g.max_versions = Some(5);
    g.time_range = Some(TTimeRange {
        min_stamp: 10,
        max_stamp: 30,
    });
    assert_eq!(e.get("t", &g), vec!["f:q@20=v", "f:q@10=v"]);
    g.timestamp = Some(30);
    assert_eq!(e.get("t", &g), vec!["f:q@30=v"]);
    g.timestamp = None;
    g.time_range = Some(TTimeRange {
        min_stamp: 30,
        max_stamp: 10,
    });
    assert!(matches!(e.h.get(b"t", &g), Err(ServerError::Internal(_))));
    g.time_range = None;
    g.max_versions = Some(0);
    assert!(matches!(e.h.get(b"t", &g), Err(ServerError::Io { .. })));
}

#[test]
fn columns_select_a_family_or_one_qualifier() {
    let e = env();
    e.create("t", &[("f", 1), ("g", 1)]);
    e.put(
        "t",
        "r",
        vec![
            cv("f", "a", None, "1"),
            cv("f", "b", None, "2"),
            cv("g", "c", None, "3"),
        ],
    );
    let mut g = tget(b"r");
    g.columns = Some(vec![col("f", None, None)]);
    assert_eq!(e.get("t", &g).len(), 2);
    g.columns = Some(vec![col("f", Some("b"), None), col("g", None, None)]);
    assert_eq!(
        e.get("t", &g),
        vec![format!("f:b@{T0}=2"), format!("g:c@{T0}=3")]
    );
}

#[test]
fn missing_rows_give_empty_results_without_a_row_in_place() {
    let e = env();
    e.create("t", &[("f", 1)]);
    e.put("t", "b", vec![cv("f", "q", None, "v")]);
    let r = e.h.get(b"t", &tget(b"a")).unwrap();
    assert_eq!((r.row, r.column_values.len()), (None, 0));
    let all =
        e.h.get_multiple(b"t", &[tget(b"a"), tget(b"b"), tget(b"c")])
            .unwrap();
    let rows: Vec<_> = all.iter().map(|r| r.row.clone()).collect();
    assert_eq!(rows, vec![None, Some(b"b".to_vec()), None]);
    assert_eq!(
        e.h.exists_all(b"t", &[tget(b"a"), tget(b"b")]).unwrap(),
        vec![false, true]
    );
}

#[test]
fn delete_column_without_timestamp_removes_only_the_latest_version() {
    let e = env();
    e.create("t", &[("f", 5)]);
    for ts in [1, 2, 3] {
        e.put("t", "r", vec![cv("f", "q", Some(ts), "v")]);
    }
    let d = tdelete(
        "r",
        Some(vec![col("f", Some("q"), None)]),
        Some(TDeleteType::DELETE_COLUMN),
    );
    e.h.delete_single(b"t", &d).unwrap();
    assert_eq!(e.all_versions("t", "r"), vec!["f:q@2=v", "f:q@1=v"]);
    let d = tdelete(
        "r",
        Some(vec![col("f", Some("q"), Some(1))]),
        Some(TDeleteType::DELETE_COLUMN),
    );
    e.h.delete_single(b"t", &d).unwrap();
    assert_eq!(e.all_versions("t", "r"), vec!["f:q@2=v"]);
}

#[test]
fn delete_columns_and_family_hide_versions_at_or_below_including_later_puts() {
    let e = env();
    e.create("t", &[("f", 5)]);
    e.put(
        "t",
        "r",
        vec![cv("f", "a", Some(5), "v"), cv("f", "b", Some(5), "v")],
    );
    let d = tdelete("r", Some(vec![col("f", Some("a"), Some(6))]), None);
    e.h.delete_single(b"t", &d).unwrap();
    assert_eq!(e.all_versions("t", "r"), vec!["f:b@5=v"]);
    // Written after the marker, but at or below it: hidden too.
    e.put(
        "t",
        "r",
        vec![cv("f", "a", Some(6), "late"), cv("f", "a", Some(7), "new")],
    );
    assert_eq!(e.all_versions("t", "r"), vec!["f:a@7=new", "f:b@5=v"]);
    let d = tdelete(
        "r",
        Some(vec![col("f", None, Some(7))]),
        Some(TDeleteType::DELETE_FAMILY),
    );
    e.h.delete_single(b"t", &d).unwrap();
    assert!(e.all_versions("t", "r").is_empty());
}

#[test]
fn family_only_column_under_delete_columns_targets_the_empty_qualifier() {
    let e = env();
    e.create("t", &[("f", 1)]);
    e.put(
        "t",
        "r",
        vec![cv("f", "", None, "empty"), cv("f", "q", None, "v")],
    );
    e.h.delete_single(b"t", &tdelete("r", Some(vec![col("f", None, None)]), None))
        .unwrap();
    assert_eq!(e.all_versions("t", "r"), vec![format!("f:q@{T0}=v")]);
}

#[test]
fn family_version_delete_hits_every_column_at_exactly_that_timestamp() {
    let e = env();
    e.create("t", &[("f", 5)]);
    e.put(
        "t",
        "r",
        vec![
            cv("f", "a", Some(1), "v"),
            cv("f", "a", Some(2), "v"),
            cv("f", "b", Some(2), "v"),
        ],
    );
    let d = tdelete(
        "r",
        Some(vec![col("f", None, Some(2))]),
        Some(TDeleteType::DELETE_FAMILY_VERSION),
    );
    e.h.delete_single(b"t", &d).unwrap();
    assert_eq!(e.all_versions("t", "r"), vec!["f:a@1=v"]);
    let no_ts = tdelete(
        "r",
        Some(vec![col("f", None, None)]),
        Some(TDeleteType::DELETE_FAMILY_VERSION),
    );
    assert!(matches!(
        e.h.delete_single(b"t", &no_ts),
        Err(ServerError::Internal(_))
    ));
}

#[test]
fn whole_row_delete_uses_its_timestamp_or_now() {
    let e = env();
    e.create("t", &[("f", 5), ("g", 1)]);
    e.put(
        "t",
        "r",
        vec![
            cv("f", "a", Some(5), "v"),
            cv("f", "a", Some(15), "v"),
            cv("g", "b", Some(5), "v"),
        ],
    );
    let mut d = tdelete("r", None, None);
    d.timestamp = Some(10);
    e.h.delete_single(b"t", &d).unwrap();
    assert_eq!(e.all_versions("t", "r"), vec!["f:a@15=v"]);
    e.h.delete_single(b"t", &tdelete("r", None, None)).unwrap();
    assert!(e.all_versions("t", "r").is_empty());
}

#[test]
fn ttl_hides_cells_by_their_timestamp_and_min_versions_keeps_the_newest() {
    let e = env();
    let mut desc = table_desc("t", &[("f", 3)]);
    let fam = &mut desc.columns.as_mut().unwrap()[0];
    fam.time_to_live = Some(10);
    fam.min_versions = Some(1);
    e.h.create_table(&desc, None).unwrap();
    e.put("t", "r", vec![cv("f", "q", Some(T0 - 5_000), "older")]);
    e.put("t", "r", vec![cv("f", "q", None, "newer")]);
    assert_eq!(e.all_versions("t", "r").len(), 2);
    e.clock.advance(6_000);
    assert_eq!(e.all_versions("t", "r"), vec![format!("f:q@{T0}=newer")]);
    // Expired, but MIN_VERSIONS = 1 keeps the newest version readable.
    e.clock.advance(60_000);
    assert_eq!(e.all_versions("t", "r"), vec![format!("f:q@{T0}=newer")]);
}

#[test]
fn errors_name_the_java_exception() {
    let e = env();
    e.create("ns_less", &[("f", 1)]);
    let put = tput("r", vec![cv("f", "q", None, "v")]);
    let missing = io_message(e.h.put(b"nope", &put).unwrap_err());
    assert_eq!(
        missing,
        "org.apache.hadoop.hbase.TableNotFoundException: nope"
    );
    let family =
        e.h.put(b"ns_less", &tput("r", vec![cv("x", "q", None, "v")]))
            .unwrap_err();
    assert!(matches!(
        family,
        ServerError::Io {
            do_not_retry: true,
            ..
        }
    ));
    let family = family.to_string();
    assert!(family.starts_with(
        "org.apache.hadoop.hbase.regionserver.NoSuchColumnFamilyException: Column family x does \
         not exist in region ns_less,,"
    ));
    e.h.set_table_enabled(&table_name("ns_less"), false)
        .unwrap();
    assert_eq!(
        io_message(e.h.get(b"ns_less", &tget(b"r")).unwrap_err()),
        "org.apache.hadoop.hbase.TableNotEnabledException: ns_less is disabled."
    );
    assert!(matches!(
        e.h.put(b"ns_less", &tput("", vec![])),
        Err(ServerError::Internal(_))
    ));
    assert!(matches!(
        e.h.put(b"ns_less", &tput("r", vec![])),
        Err(ServerError::Internal(_))
    ));
    assert!(matches!(
        e.h.put(b"bad name", &put),
        Err(ServerError::Internal(_))
    ));
}

#[test]
fn put_multiple_applies_what_it_can_and_reports_the_rest() {
    let e = env();
    e.create("t", &[("f", 1)]);
    let puts = vec![
        tput("a", vec![cv("f", "q", None, "v")]),
        tput("b", vec![cv("x", "q", None, "v")]),
        tput("c", vec![cv("f", "q", None, "v")]),
    ];
    let err = io_message(e.h.put_multiple(b"t", &puts).unwrap_err());
    assert!(err.contains("Failed 1 action") && err.contains("NoSuchColumnFamilyException"));
    assert_eq!(e.all_versions("t", "a").len(), 1);
    assert_eq!(e.all_versions("t", "c").len(), 1);
}
