//! Unit tests for the typed <-> Thrift conversions.

use super::*;

#[test]
fn table_names_default_the_namespace_and_round_trip() {
    let bare = table_name("t1");
    assert_eq!(bare.ns.as_deref(), Some(&b"default"[..]));
    assert_eq!(bare.qualifier, b"t1");
    assert_eq!(table_name_string(&bare), "t1");

    let qualified = table_name("ns:t2");
    assert_eq!(qualified.ns.as_deref(), Some(&b"ns"[..]));
    assert_eq!(qualified.qualifier, b"t2");
    assert_eq!(table_name_string(&qualified), "ns:t2");
    assert_eq!(
        table_name_string(&TTableName::new(None, b"x".to_vec())),
        "x"
    );
}

#[test]
fn get_sets_only_what_was_asked() {
    let plain = get(&Get::new("r"));
    assert_eq!(plain.row, b"r");
    assert!(plain.columns.is_none());
    assert!(plain.timestamp.is_none() && plain.time_range.is_none());
    assert!(plain.max_versions.is_none() && plain.filter_string.is_none());

    let full = get(&Get::new("r")
        .family("f")
        .column("f", "q")
        .timestamp(7)
        .time_range(TimeRange::new(1, 9))
        .max_versions(3)
        .filter("KeyOnlyFilter()"));
    let cols = full.columns.expect("columns");
    assert_eq!(cols[0].family, b"f");
    assert!(cols[0].qualifier.is_none());
    assert_eq!(cols[1].qualifier.as_deref(), Some(&b"q"[..]));
    assert_eq!(full.timestamp, Some(7));
    assert_eq!(full.time_range, Some(TTimeRange::new(1, 9)));
    assert_eq!(full.max_versions, Some(3));
    assert_eq!(full.filter_string.as_deref(), Some(&b"KeyOnlyFilter()"[..]));
}

#[test]
fn put_keeps_cell_and_put_timestamps_apart() {
    let p = put(&Put::new("r")
        .add("f", "a", "1")
        .add_at("f", "b", 5, "2")
        .timestamp(9)
        .durability(Durability::SkipWal));
    assert_eq!(p.timestamp, Some(9));
    assert_eq!(p.durability, Some(TDurability::SKIP_WAL));
    assert_eq!(p.column_values[0].timestamp, None);
    assert_eq!(p.column_values[1].timestamp, Some(5));
    assert_eq!(p.column_values[1].value, b"2");
    assert!(put(&Put::new("r")).durability.is_none());
}

#[test]
fn delete_maps_each_type_and_whole_row() {
    let row = delete(&Delete::new("r"));
    assert!(row.columns.is_none(), "no columns means a whole-row delete");
    for (typed, wire) in [
        (DeleteType::Column, TDeleteType::DELETE_COLUMN),
        (DeleteType::Columns, TDeleteType::DELETE_COLUMNS),
        (DeleteType::Family, TDeleteType::DELETE_FAMILY),
        (
            DeleteType::FamilyVersion,
            TDeleteType::DELETE_FAMILY_VERSION,
        ),
    ] {
        let d = delete(&Delete::new("r").family("f").timestamp(3).delete_type(typed));
        assert_eq!(d.delete_type, Some(wire));
        assert_eq!(d.timestamp, Some(3));
    }
    let d = delete(&Delete::new("r").column_at("f", "q", 4));
    let c = &d.columns.expect("columns")[0];
    assert_eq!(
        (c.qualifier.as_deref(), c.timestamp),
        (Some(&b"q"[..]), Some(4))
    );
}

#[test]
fn compare_ops_use_the_wire_values() {
    let expected = [
        (CompareOp::Less, 0),
        (CompareOp::LessOrEqual, 1),
        (CompareOp::Equal, 2),
        (CompareOp::NotEqual, 3),
        (CompareOp::GreaterOrEqual, 4),
        (CompareOp::Greater, 5),
        (CompareOp::NoOp, 6),
    ];
    for (op, wire) in expected {
        assert_eq!(compare_op(op).0, wire, "{op:?}");
    }
}

#[test]
fn row_mutations_keep_order_and_kind() {
    let m = row_mutations(
        &RowMutations::new("r")
            .put(Put::new("r").add("f", "q", "v"))
            .delete(Delete::new("r").column("f", "old")),
    );
    assert_eq!(m.row, b"r");
    assert!(matches!(m.mutations[0], TMutation::Put(_)));
    assert!(matches!(m.mutations[1], TMutation::DeleteSingle(_)));
}

#[test]
fn increment_and_append_carry_amounts_and_return_flag() {
    let i = increment(&Increment::new("r").add("f", "n", -2));
    assert_eq!(i.columns[0].amount, Some(-2));
    assert_eq!(i.return_results, Some(true));
    let mut a = Append::new("r").add("f", "s", "xy");
    a.return_results = false;
    let a = append(&a);
    assert_eq!(a.columns[0].value, b"xy");
    assert_eq!(a.return_results, Some(false));
}

#[test]
fn scan_leaves_unbounded_ends_and_defaults_unset() {
    let s = scan(&Scan::new());
    assert!(s.start_row.is_none() && s.stop_row.is_none());
    assert!(s.reversed.is_none() && s.limit.is_none() && s.caching.is_none());

    let s = scan(
        &Scan::range("a", "m")
            .reversed(true)
            .caching(5)
            .batch_size(2)
            .limit(3)
            .max_versions(4)
            .time_range(TimeRange::up_to(10))
            .column("f", "q"),
    );
    assert_eq!(s.start_row.as_deref(), Some(&b"a"[..]));
    assert_eq!(s.stop_row.as_deref(), Some(&b"m"[..]));
    assert_eq!(s.reversed, Some(true));
    assert_eq!(
        (s.caching, s.batch_size, s.limit, s.max_versions),
        (Some(5), Some(2), Some(3), Some(4))
    );
    assert_eq!(s.time_range, Some(TTimeRange::new(0, 11)));
}

#[test]
fn results_keep_cells_in_order_and_missing_rows_are_empty() {
    let wire = TResult::new(
        b"r".to_vec(),
        vec![
            TColumnValue::new(b"f".to_vec(), b"q".to_vec(), b"new".to_vec(), 2, None, None),
            TColumnValue::new(b"f".to_vec(), b"q".to_vec(), b"old".to_vec(), 1, None, None),
        ],
        None,
        true,
    );
    let r = row_result(wire).expect("valid result");
    assert_eq!(r.row, b"r");
    assert!(r.partial);
    assert_eq!(r.value(b"f", b"q"), Some(&b"new"[..]));
    assert_eq!(
        r.versions(b"f", b"q")
            .map(|c| c.timestamp)
            .collect::<Vec<_>>(),
        vec![2, 1]
    );

    let missing = row_result(TResult::new(None, Vec::new(), None, None)).expect("valid");
    assert!(missing.is_empty() && missing.row.is_empty() && !missing.partial);
}

#[test]
fn a_cell_without_timestamp_is_a_protocol_error() {
    let wire = TResult::new(
        b"r".to_vec(),
        vec![TColumnValue::new(
            b"f".to_vec(),
            b"q".to_vec(),
            b"v".to_vec(),
            None,
            None,
            None,
        )],
        None,
        None,
    );
    assert!(matches!(row_result(wire), Err(Error::Protocol { .. })));
}

#[test]
fn descriptors_round_trip_and_forever_ttl_reads_as_unset() {
    let table = TableDescriptor::new("ns:t")
        .family(
            FamilyDescriptor::new("f")
                .max_versions(5)
                .min_versions(1)
                .ttl_secs(60)
                .in_memory(true),
        )
        .family(FamilyDescriptor::new("g"));
    let wire = table_descriptor(&table);
    assert_eq!(wire.table_name.qualifier, b"t");
    let families = wire.columns.clone().expect("families");
    assert_eq!(families[0].max_versions, Some(5));
    assert_eq!(families[0].time_to_live, Some(60));
    assert!(families[1].max_versions.is_none() && families[1].time_to_live.is_none());
    assert_eq!(table_from_thrift(wire), table);

    let mut forever = family_descriptor(&FamilyDescriptor::new("f"));
    forever.time_to_live = Some(i32::MAX);
    forever.keep_deleted_cells = Some(TKeepDeletedCells::TTL);
    let typed = family_from_thrift(forever);
    assert_eq!(typed.ttl_secs, None);
    assert_eq!(typed.keep_deleted_cells, Some(true));
}
