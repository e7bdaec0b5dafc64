//! Tests of the filter language: parsing (syntax, precedence, errors) and evaluation.

use super::parse::parse;
use super::*;

fn ok(s: &str) -> Node {
    parse(s.as_bytes()).unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn bad(s: &str) {
    match parse(s.as_bytes()) {
        Err(ServerError::Internal(_)) => {}
        other => panic!("{s} should fail as an internal error, got {other:?}"),
    }
}

#[test]
fn parses_simple_filters() {
    assert!(matches!(ok("PrefixFilter('ab')"), Node::Leaf(Leaf::Prefix(p)) if p == b"ab"));
    assert!(matches!(
        ok("KeyOnlyFilter()"),
        Node::Leaf(Leaf::KeyOnly {
            len_as_value: false
        })
    ));
    assert!(matches!(
        ok(" FirstKeyOnlyFilter ( ) "),
        Node::Leaf(Leaf::FirstKeyOnly)
    ));
    assert!(matches!(
        ok("QualifierFilter(>=, 'binary:q')"),
        Node::Leaf(Leaf::Qualifier(CompareOp::GreaterOrEqual, Comparator::Binary(v))) if v == b"q"
    ));
}

#[test]
fn doubled_quotes_escape_a_quote_and_bytes_pass_through() {
    let node = parse(b"PrefixFilter('it''s\xff')").unwrap();
    assert!(matches!(node, Node::Leaf(Leaf::Prefix(p)) if p == b"it's\xff"));
}

#[test]
fn and_binds_tighter_than_or_and_parentheses_group() {
    let node = ok("PrefixFilter('a') OR PrefixFilter('b') AND KeyOnlyFilter()");
    let Node::Or(parts) = node else {
        panic!("expected OR at the top")
    };
    assert!(matches!(parts[1], Node::And(_)));
    let node = ok("(PrefixFilter('a') OR PrefixFilter('b')) AND KeyOnlyFilter()");
    let Node::And(parts) = node else {
        panic!("expected AND at the top")
    };
    assert!(matches!(parts[0], Node::Or(_)));
}

#[test]
fn skip_and_while_are_unary() {
    assert!(matches!(
        ok("SKIP ValueFilter(!=, 'binary:x') AND KeyOnlyFilter()"),
        Node::And(parts) if matches!(parts[0], Node::Skip(_))
    ));
    assert!(matches!(
        ok("WHILE RowFilter(<, 'binary:m')"),
        Node::While(_)
    ));
}

#[test]
fn single_column_value_filter_optional_flags() {
    let Node::Leaf(Leaf::SingleColumnValue {
        filter_if_missing,
        latest_only,
        ..
    }) = ok("SingleColumnValueFilter('f', 'q', =, 'binary:v', true, false)")
    else {
        panic!("expected SCVF")
    };
    assert!(filter_if_missing && !latest_only);
    let Node::Leaf(Leaf::SingleColumnValue {
        filter_if_missing,
        latest_only,
        ..
    }) = ok("SingleColumnValueFilter('f','q',=,'substring:V')")
    else {
        panic!("expected SCVF")
    };
    assert!(!filter_if_missing && latest_only);
}

#[test]
fn syntax_errors_are_internal_errors_not_panics() {
    for s in [
        "",
        "PrefixFilter(",
        "PrefixFilter('a'",
        "PrefixFilter('a",
        "PrefixFilter(a)",
        "NoSuchFilter()",
        "PrefixFilter('a') AND",
        "PrefixFilter('a') PrefixFilter('b')",
        "QualifierFilter(=, 'q')",
        "QualifierFilter(=, 'nope:q')",
        "QualifierFilter(<, 'substring:q')",
        "QualifierFilter(~, 'binary:q')",
        "KeyOnlyFilter(maybe)",
        "ValueFilter(=, 'regexstring:(')",
        "SingleColumnValueFilter('f','q',=)",
        "((PrefixFilter('a'))",
        "PageFilter(1)",
        "TimestampsFilter(x)",
        "#",
    ] {
        bad(s);
    }
}

fn cell(f: &str, q: &str, ts: i64, v: &str) -> Cell {
    Cell {
        family: f.into(),
        qualifier: q.into(),
        timestamp: ts,
        value: v.into(),
    }
}

fn row() -> Vec<Cell> {
    vec![
        cell("f", "a", 2, "apple"),
        cell("f", "a", 1, "apricot"),
        cell("f", "b", 1, "banana"),
        cell("g", "c", 1, "cherry"),
    ]
}

fn run(filter: &str, key: &str) -> Vec<String> {
    let f = Filter::parse(filter.as_bytes()).unwrap();
    f.apply(key.as_bytes(), row(), &mut FilterState::default())
        .iter()
        .map(|c| {
            format!(
                "{}:{}@{}={}",
                String::from_utf8_lossy(&c.family),
                String::from_utf8_lossy(&c.qualifier),
                c.timestamp,
                String::from_utf8_lossy(&c.value)
            )
        })
        .collect()
}

#[test]
fn prefix_filter_keeps_or_rejects_whole_rows() {
    assert_eq!(run("PrefixFilter('ro')", "row").len(), 4);
    assert!(run("PrefixFilter('x')", "row").is_empty());
}

#[test]
fn key_only_and_first_key_only() {
    assert_eq!(run("FirstKeyOnlyFilter()", "r"), vec!["f:a@2=apple"]);
    assert_eq!(
        run("FirstKeyOnlyFilter() AND KeyOnlyFilter()", "r"),
        vec!["f:a@2="]
    );
    let f = Filter::parse(b"KeyOnlyFilter(true)").unwrap();
    let out = f.apply(b"r", row(), &mut FilterState::default());
    assert_eq!(out[0].value, 5i32.to_be_bytes().to_vec());
}

#[test]
fn compare_filters_use_the_cell_op_value_direction() {
    assert_eq!(
        run("QualifierFilter(<, 'binary:b')", "r"),
        vec!["f:a@2=apple", "f:a@1=apricot"]
    );
    assert_eq!(
        run("FamilyFilter(=, 'binary:g')", "r"),
        vec!["g:c@1=cherry"]
    );
    assert_eq!(
        run("ValueFilter(=, 'binaryprefix:apr')", "r"),
        vec!["f:a@1=apricot"]
    );
    assert_eq!(
        run("ValueFilter(=, 'substring:ERR')", "r"),
        vec!["g:c@1=cherry"]
    );
    assert_eq!(run("ValueFilter(!=, 'regexstring:^a.*e$')", "r").len(), 3);
    assert_eq!(run("ColumnPrefixFilter('b')", "r"), vec!["f:b@1=banana"]);
    assert_eq!(run("RowFilter(>=, 'binary:s')", "r").len(), 0);
    assert_eq!(run("RowFilter(>=, 'binary:s')", "t").len(), 4);
}

#[test]
fn single_column_value_filter_checks_the_latest_version_by_default() {
    assert_eq!(
        run("SingleColumnValueFilter('f', 'a', =, 'binary:apple')", "r").len(),
        4
    );
    assert!(run(
        "SingleColumnValueFilter('f', 'a', =, 'binary:apricot')",
        "r"
    )
    .is_empty());
    assert_eq!(
        run(
            "SingleColumnValueFilter('f', 'a', =, 'binary:apricot', false, false)",
            "r"
        )
        .len(),
        4
    );
    // A missing column passes unless filterIfMissing.
    assert_eq!(
        run("SingleColumnValueFilter('f', 'zz', =, 'binary:x')", "r").len(),
        4
    );
    assert!(run(
        "SingleColumnValueFilter('f', 'zz', =, 'binary:x', true, true)",
        "r"
    )
    .is_empty());
    assert_eq!(
        run(
            "SingleColumnValueExcludeFilter('f', 'a', =, 'binary:apple')",
            "r"
        ),
        vec!["f:b@1=banana", "g:c@1=cherry"]
    );
}

#[test]
fn and_or_combine_rows_and_cells() {
    assert_eq!(
        run("PrefixFilter('r') AND QualifierFilter(=, 'binary:b')", "r"),
        vec!["f:b@1=banana"]
    );
    assert!(run("PrefixFilter('x') AND QualifierFilter(=, 'binary:b')", "r").is_empty());
    assert_eq!(
        run("PrefixFilter('x') OR QualifierFilter(=, 'binary:b')", "r"),
        vec!["f:b@1=banana"]
    );
    assert_eq!(
        run(
            "(QualifierFilter(=, 'binary:b') OR FamilyFilter(=, 'binary:g')) AND ValueFilter(!=, 'binary:cherry')",
            "r"
        ),
        vec!["f:b@1=banana"]
    );
}

#[test]
fn skip_and_while() {
    assert!(run("SKIP ValueFilter(!=, 'binary:banana')", "r").is_empty());
    assert_eq!(run("SKIP ValueFilter(!=, 'binary:zzz')", "r").len(), 4);
    let f = Filter::parse(b"WHILE RowFilter(<, 'binary:m')").unwrap();
    let mut st = FilterState::default();
    assert_eq!(f.apply(b"a", row(), &mut st).len(), 4);
    assert!(!st.done);
    assert!(f.apply(b"z", row(), &mut st).is_empty());
    assert!(st.done);
    assert!(f.apply(b"b", row(), &mut st).is_empty());
}

#[test]
fn inclusive_stop_and_ranges() {
    let f = Filter::parse(b"InclusiveStopFilter('m')").unwrap();
    let mut st = FilterState::default();
    assert_eq!(f.apply(b"m", row(), &mut st).len(), 4);
    assert!(f.apply(b"n", row(), &mut st).is_empty());
    assert!(st.done);
    assert_eq!(
        run("ColumnRangeFilter('a', false, 'c', true)", "r"),
        vec!["f:b@1=banana", "g:c@1=cherry"]
    );
    assert_eq!(run("TimestampsFilter(2)", "r"), vec!["f:a@2=apple"]);
    assert_eq!(
        run("MultipleColumnPrefixFilter('b', 'c')", "r"),
        vec!["f:b@1=banana", "g:c@1=cherry"]
    );
}
