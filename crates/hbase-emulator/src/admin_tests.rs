//! Table, family and namespace administration through the gateway's admin methods.

use crate::admin::family_schema;
use crate::error::ServerError;
use crate::store::{bare_descriptor, TTL_FOREVER};
use crate::testutil::*;
use percolator_thrift::hbase::TNamespaceDescriptor;
use percolator_thrift::hbase::{TBloomFilterType, TKeepDeletedCells};

fn err(r: Result<impl std::fmt::Debug, ServerError>) -> String {
    r.unwrap_err().to_string()
}

#[test]
fn create_needs_families_and_a_fresh_name() {
    let e = env();
    let none = table_desc("t", &[]);
    assert!(err(e.h.create_table(&none, None)).contains("at least one column family"));
    e.create("t", &[("f", 1)]);
    assert_eq!(
        err(e.h.create_table(&table_desc("t", &[("f", 1)]), None)),
        "org.apache.hadoop.hbase.TableExistsException: t"
    );
    assert!(
        err(e.h.create_table(&table_desc("nons:t", &[("f", 1)]), None))
            .contains("NamespaceNotFoundException")
    );
    let split = [b"b".to_vec(), b"b".to_vec()];
    assert!(matches!(
        e.h.create_table(&table_desc("u", &[("f", 1)]), Some(&split)),
        Err(ServerError::Internal(_))
    ));
    assert!(e.h.table_exists(&table_name("t")).unwrap());
    assert!(!e.h.table_exists(&table_name("u")).unwrap());
}

#[test]
fn enable_disable_and_delete_follow_hbase_state_rules() {
    let e = env();
    e.create("t", &[("f", 1)]);
    let t = table_name("t");
    assert!(err(e.h.delete_table(&t)).contains("TableNotDisabledException"));
    assert!(err(e.h.set_table_enabled(&t, true)).contains("TableNotDisabledException"));
    e.h.set_table_enabled(&t, false).unwrap();
    assert!(err(e.h.set_table_enabled(&t, false)).contains("TableNotEnabledException"));
    assert!(!e.h.is_table_enabled(&t).unwrap());
    e.h.delete_table(&t).unwrap();
    assert!(err(e.h.is_table_enabled(&t)).contains("TableNotFoundException"));
}

#[test]
fn truncate_empties_a_disabled_table_and_enables_it() {
    let e = env();
    e.create("t", &[("f", 1)]);
    e.put("t", "r", vec![cv("f", "q", None, "v")]);
    let t = table_name("t");
    assert!(err(e.h.truncate_table(&t)).contains("TableNotDisabledException"));
    e.h.set_table_enabled(&t, false).unwrap();
    e.h.truncate_table(&t).unwrap();
    assert!(e.h.is_table_enabled(&t).unwrap());
    assert!(e.all_versions("t", "r").is_empty());
}

#[test]
fn descriptors_report_stored_settings_with_defaults() {
    let e = env();
    e.create("t", &[("f", 3)]);
    let d = e.h.table_descriptor(&table_name("t")).unwrap();
    assert_eq!(d.table_name.ns.as_deref(), Some(&b"default"[..]));
    let f = &d.columns.unwrap()[0];
    assert_eq!(
        (f.max_versions, f.min_versions, f.time_to_live),
        (Some(3), Some(0), Some(i32::MAX))
    );
    assert_eq!(f.block_cache_enabled, Some(true));
    let found =
        e.h.table_descriptors(&[table_name("t"), table_name("missing")])
            .unwrap();
    assert_eq!(found.len(), 1);
}

#[test]
fn family_changes_take_effect_and_dropping_a_family_drops_its_data() {
    let e = env();
    e.create("t", &[("f", 1), ("g", 1)]);
    let t = table_name("t");
    e.put("t", "r", vec![cv("g", "q", None, "v")]);
    assert!(err(e
        .h
        .add_column_family(&t, &table_desc("x", &[("f", 1)]).columns.unwrap()[0]))
    .contains("already exists"));
    e.h.delete_column_family(&t, b"g").unwrap();
    assert!(err(e.h.delete_column_family(&t, b"g")).contains("does not exist"));
    assert!(err(e.h.delete_column_family(&t, b"f")).contains("only column family"));
    e.h.add_column_family(&t, &table_desc("x", &[("g", 1)]).columns.unwrap()[0])
        .unwrap();
    assert!(e.all_versions("t", "r").is_empty());
    e.h.modify_column_family(&t, &table_desc("x", &[("f", 2)]).columns.unwrap()[0])
        .unwrap();
    for ts in [1, 2, 3] {
        e.put("t", "r", vec![cv("f", "q", Some(ts), "v")]);
    }
    assert_eq!(e.all_versions("t", "r"), vec!["f:q@3=v", "f:q@2=v"]);
    e.h.modify_table(&table_desc("t", &[("h", 1)])).unwrap();
    assert!(e.all_versions("t", "r").is_empty());
}

#[test]
fn listing_by_pattern_and_namespace() {
    let e = env();
    e.h.create_namespace(TNamespaceDescriptor {
        name: "ns".into(),
        configuration: None,
    })
    .unwrap();
    e.create("ns:alpha", &[("f", 1)]);
    e.create("beta", &[("f", 1)]);
    let names = |r: Vec<percolator_thrift::hbase::TTableName>| -> Vec<String> {
        r.into_iter()
            .map(|n| String::from_utf8_lossy(&n.qualifier).into_owned())
            .collect()
    };
    assert_eq!(
        names(e.h.table_names_by_pattern(None, false).unwrap()),
        vec!["beta", "alpha"]
    );
    assert_eq!(
        names(e.h.table_names_by_pattern(Some("ns:.*"), false).unwrap()),
        vec!["alpha"]
    );
    assert_eq!(
        names(e.h.table_names_by_pattern(Some("bet"), false).unwrap()),
        Vec::<String>::new()
    );
    assert_eq!(
        names(e.h.table_names_by_namespace("ns").unwrap()),
        vec!["alpha"]
    );
    assert!(err(e.h.table_names_by_namespace("zz")).contains("NamespaceNotFoundException"));
    assert!(matches!(
        e.h.table_names_by_pattern(Some("("), false),
        Err(ServerError::Internal(_))
    ));
}

#[test]
fn namespaces_lifecycle() {
    let e = env();
    let listed = |e: &Env| -> Vec<String> {
        e.h.namespace_descriptors()
            .into_iter()
            .map(|d| d.name)
            .collect()
    };
    assert_eq!(listed(&e), vec!["default", "hbase"]);
    let ns = TNamespaceDescriptor {
        name: "app".into(),
        configuration: Some([("k".to_string(), "v".to_string())].into_iter().collect()),
    };
    e.h.create_namespace(ns.clone()).unwrap();
    assert!(err(e.h.create_namespace(ns.clone())).contains("NamespaceExistException"));
    assert_eq!(e.h.namespace_descriptor("app").unwrap(), ns);
    e.create("app:t", &[("f", 1)]);
    assert!(err(e.h.store.delete_namespace("app")).contains("Only empty namespaces"));
    assert!(err(e.h.store.delete_namespace("default")).contains("Reserved namespace"));
    e.h.set_table_enabled(&table_name("app:t"), false).unwrap();
    e.h.delete_table(&table_name("app:t")).unwrap();
    e.h.store.delete_namespace("app").unwrap();
    assert!(err(e.h.namespace_descriptor("app")).contains("NamespaceNotFoundException"));
    assert!(matches!(
        e.h.create_namespace(TNamespaceDescriptor {
            name: "a-b".into(),
            configuration: None
        }),
        Err(ServerError::Internal(_))
    ));
}

#[test]
fn one_region_per_table() {
    let e = env();
    e.create("ns_t", &[("f", 1)]);
    let loc = e.h.region_location(b"ns_t", b"r").unwrap();
    assert_eq!(loc.region_info.table_name, b"ns_t");
    assert_eq!(loc.region_info.start_key.as_deref(), Some(&b""[..]));
    assert_eq!(loc.server_name.port, Some(9090));
    assert!(err(e.h.region_location(b"missing", b"r")).contains("TableNotFoundException"));
}

/// `createTable` with split keys: one region per range, and a row's location is the region
/// whose range holds it, as a service splitting work by region would read them.
#[test]
fn split_keys_make_regions_that_locations_report() {
    let e = env();
    let desc = table_desc("split", &[("f", 1)]);
    e.h.create_table(&desc, Some(&[b"p".to_vec(), b"h".to_vec()]))
        .unwrap();
    let bounds: Vec<_> =
        e.h.region_locations(b"split")
            .unwrap()
            .into_iter()
            .map(|l| {
                (
                    l.region_info.start_key.unwrap(),
                    l.region_info.end_key.unwrap(),
                )
            })
            .collect();
    let b = |s: &str| s.as_bytes().to_vec();
    assert_eq!(bounds, [(b(""), b("h")), (b("h"), b("p")), (b("p"), b(""))]);
    for (row, start) in [("a", ""), ("h", "h"), ("o", "h"), ("p", "p"), ("zz", "p")] {
        let loc = e.h.region_location(b"split", row.as_bytes()).unwrap();
        assert_eq!(loc.region_info.start_key.unwrap(), b(start), "row {row}");
    }
}

#[test]
fn defaults_are_filled_in_like_hbase_2() {
    let f = family_schema(&bare_descriptor(b"f")).unwrap();
    assert_eq!(
        (f.max_versions, f.min_versions, f.ttl_seconds),
        (1, 0, TTL_FOREVER)
    );
    let d = f.descriptor;
    assert_eq!(d.max_versions, Some(1));
    assert_eq!(d.block_size, Some(65536));
    assert_eq!(d.bloomn_filter_type, Some(TBloomFilterType::ROW));
    assert_eq!(d.block_cache_enabled, Some(true));
    assert_eq!(d.in_memory, Some(false));
    assert_eq!(d.time_to_live, Some(i32::MAX));
    assert_eq!(d.keep_deleted_cells, Some(TKeepDeletedCells::FALSE));
}

#[test]
fn family_settings_are_validated() {
    let mut d = bare_descriptor(b"f");
    d.max_versions = Some(0);
    assert!(matches!(family_schema(&d), Err(ServerError::Internal(_))));
    d.max_versions = Some(2);
    d.min_versions = Some(3);
    assert!(matches!(family_schema(&d), Err(ServerError::Io { .. })));
    d.min_versions = None;
    d.time_to_live = Some(0);
    assert!(family_schema(&d).is_err());
    d.time_to_live = None;
    d.keep_deleted_cells = Some(TKeepDeletedCells::TRUE);
    assert!(family_schema(&d)
        .unwrap_err()
        .to_string()
        .contains("not supported"));
    for bad in [&b""[..], b".x", b"a:b", b"a/b"] {
        assert!(family_schema(&bare_descriptor(bad)).is_err(), "{bad:?}");
    }
}

#[test]
fn versions_can_come_from_attributes() {
    let mut d = bare_descriptor(b"f");
    d.attributes = Some(
        [
            (b"VERSIONS".to_vec(), b"5".to_vec()),
            (b"TTL".to_vec(), b"60".to_vec()),
        ]
        .into_iter()
        .collect(),
    );
    let f = family_schema(&d).unwrap();
    assert_eq!((f.max_versions, f.ttl_seconds), (5, 60));
}
