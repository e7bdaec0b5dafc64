//! Damaged records and bad input: typed errors, no panic, nothing stored is changed.

use percolator::format::LockState;
use percolator::hbase::{FamilyDescriptor, Get, Put, TableDescriptor};
use percolator::{Error, RetryClass};

use crate::txn_support::{self, Env, FAMILY};

fn assert_corrupted(err: Error, what: &str, table: &str, row: &str) {
    assert_corrupted_at(err, what, table, row, b"f:q")
}

fn assert_corrupted_at(err: Error, what: &str, table: &str, row: &str, at: &[u8]) {
    match &err {
        Error::Corrupted {
            what: w,
            table: tb,
            row: r,
            column,
            ..
        } => {
            assert_eq!((*w, tb.as_str(), &r[..]), (what, table, row.as_bytes()));
            assert_eq!(column, at);
        }
        other => panic!("expected Corrupted, got {other}"),
    }
    assert_eq!(err.retry_class(), RetryClass::Fatal);
}

#[test]
fn garbage_lock_cell_is_reported_and_left_intact() {
    let env = Env::start();
    let t = env.table("damaged");
    let client = env.client();
    for (i, garbage) in [vec![0x01, 0xde, 0xad], vec![0xff]].into_iter().enumerate() {
        let (bad, good) = (format!("bad{i}"), format!("good{i}"));
        let key = env.key(&t, &bad);
        let put = Put::new(bad.clone()).add(
            env.schema.lock_family.clone(),
            env.lock_qualifier(&key),
            garbage.clone(),
        );
        env.hbase.put(&t, &put).unwrap();

        let err = client
            .begin()
            .unwrap()
            .get(&t, &bad, FAMILY, "q")
            .unwrap_err();
        assert_corrupted(err, "lock", &t, &bad);
        let err = client.begin().unwrap().scan(&t, &bad, "", 10).unwrap_err();
        // A scan meets a damaged row lock before it knows any column of the row.
        let at: &[u8] = if env.rows_locked() { b"_pl:" } else { b"f:q" };
        assert_corrupted_at(err, "lock", &t, &bad, at);
        let mut txn = client.begin().unwrap();
        txn.set(&t, &good, FAMILY, "q", "v").unwrap();
        txn.set(&t, &bad, FAMILY, "q", "v").unwrap();
        assert_corrupted(txn.commit().unwrap_err(), "lock", &t, &bad);

        assert_eq!(env.raw_lock(&key), Some(garbage), "stored bytes unchanged");
        assert!(env.data_versions(&key).is_empty());
        let good = env.key(&t, &good);
        assert!(
            !matches!(env.lock_state(&good), LockState::Locked(_)),
            "own lock rolled back"
        );
        assert!(env.data_versions(&good).is_empty());
    }
    client.shutdown();
}

#[test]
fn garbage_write_record_is_reported_and_left_intact() {
    let env = Env::start();
    let t = env.table("damaged");
    let client = env.client();
    let key = env.key(&t, "x");
    let version = env.ts();
    let put = Put::new("x").add_at(
        env.schema.write_family.clone(),
        env.schema.qualifier(&key),
        version as i64,
        vec![0xff],
    );
    env.hbase.put(&t, &put).unwrap();

    let err = client
        .begin()
        .unwrap()
        .get(&t, "x", FAMILY, "q")
        .unwrap_err();
    assert_corrupted(err, "write record", &t, "x");
    let err = client.begin().unwrap().scan(&t, "a", "z", 10).unwrap_err();
    assert_corrupted(err, "write record", &t, "x");
    let mut attempts = 0;
    let err = client
        .run(|txn| {
            attempts += 1;
            let n = txn.get(&t, "x", FAMILY, "q")?.map_or(0, |v| v.len());
            txn.set(&t, "x", FAMILY, "q", vec![b'1'; n + 1])
        })
        .unwrap_err();
    assert_corrupted(err, "write record", &t, "x");
    assert_eq!(attempts, 1, "a fatal error is not retried");
    assert_eq!(env.raw_writes(&key), [(version as i64, vec![0xff])]);
    assert_eq!(env.raw_lock(&key), None);
    client.shutdown();
}

#[test]
fn oversized_value_is_refused_before_anything_is_written() {
    let env = Env::start();
    let t = env.table("big");
    let client = env.client();
    let limit = client.options().max_value_size();
    let mut txn = client.begin().unwrap();
    let rpcs = client.stats().hbase_rpcs;
    let err = txn
        .set(&t, "x", FAMILY, "q", vec![7u8; limit + 1])
        .unwrap_err();
    assert!(
        matches!(&err, Error::ValueTooLarge { size, limit: l, row, column, .. }
            if *size == limit + 1 && *l == limit && row == b"x" && column == b"f:q"),
        "{err}"
    );
    assert_eq!(err.retry_class(), RetryClass::Fatal);
    assert_eq!((txn.rpc_count(), client.stats().hbase_rpcs), (0, rpcs));
    txn.set(&t, "x", FAMILY, "q", vec![7u8; limit]).unwrap();
    txn.commit().expect("a value at the limit is accepted");
    let x = env.key(&t, "x");
    assert_eq!(env.data_versions(&x).len(), 1);
    client.shutdown();
}

#[test]
fn missing_and_non_transactional_tables_are_refused() {
    let env = Env::start();
    let raw = txn_support::unique("plain");
    env.hbase
        .admin()
        .create_table(&TableDescriptor::new(raw.clone()).family(FamilyDescriptor::new("f")))
        .unwrap();
    env.created(&raw);
    let client = env.client();
    let missing = txn_support::unique("missing");

    let mut txn = client.begin().unwrap();
    txn.set(&missing, "r", FAMILY, "q", "v").unwrap();
    let err = txn.commit().unwrap_err();
    assert!(
        matches!(&err, Error::TableNotFound { table, .. } | Error::NotTransactional { table, .. } if *table == missing),
        "{err}"
    );
    let err = client
        .begin()
        .unwrap()
        .get(&missing, "r", FAMILY, "q")
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::TableNotFound { .. } | Error::NotTransactional { .. }
        ),
        "{err}"
    );

    let mut txn = client.begin().unwrap();
    txn.set(&raw, "r", FAMILY, "q", "v").unwrap();
    let err = txn.commit().unwrap_err();
    assert!(
        matches!(&err, Error::NotTransactional { table, .. } if *table == raw),
        "{err}"
    );
    let txn = client.begin().unwrap();
    let err = txn.get(&raw, "r", FAMILY, "q").unwrap_err();
    assert!(
        matches!(&err, Error::NotTransactional { table, .. } if *table == raw),
        "{err}"
    );
    let err = txn.scan(&raw, "a", "z", 10).unwrap_err();
    assert!(
        matches!(&err, Error::NotTransactional { table, .. } if *table == raw),
        "{err}"
    );
    assert!(
        env.hbase.get(&raw, &Get::new("r")).unwrap().is_empty(),
        "nothing written to the plain table"
    );
    client.shutdown();
}

#[test]
fn empty_row_key_is_an_illegal_argument() {
    let env = Env::start();
    let t = env.table("empty");
    let client = env.client();
    let mut txn = client.begin().unwrap();
    let illegal = |r: percolator::Result<()>| {
        let err = r.unwrap_err();
        assert!(matches!(err, Error::IllegalArgument { .. }), "{err}");
        assert_eq!(err.retry_class(), RetryClass::Fatal);
    };
    illegal(txn.set(&t, "", FAMILY, "q", "v"));
    illegal(txn.delete(&t, "", FAMILY, "q"));
    illegal(txn.get(&t, "", FAMILY, "q").map(drop));
    assert_eq!(txn.rpc_count(), 0);
    let start_ts = txn.start_ts().unwrap();
    assert_eq!(txn.commit().unwrap(), start_ts, "nothing was buffered");
    client.shutdown();
}

/// A key in a family its table lacks is `FamilyNotFound` for reads and writes, before any
/// lock is written; a family added while the client runs is found without a restart.
#[test]
fn a_family_the_table_lacks_is_family_not_found() {
    let env = Env::start();
    let t = env.table("fam");
    let client = env.client();
    let is_missing_g = |err: &Error| matches!(err, Error::FamilyNotFound { table, family, .. } if *table == t && family == "g");

    // Read first, so the table's descriptor is cached without `g`.
    let txn = client.begin().unwrap();
    assert_eq!(txn.get(&t, "r", FAMILY, "q").unwrap(), None);
    let err = txn.get(&t, "r", "g", "q").unwrap_err();
    assert!(is_missing_g(&err), "{err}");
    assert_eq!(err.retry_class(), RetryClass::Fatal);

    let mut txn = client.begin().unwrap();
    txn.set(&t, "r", FAMILY, "q", "v").unwrap();
    txn.set(&t, "r", "g", "q", "v").unwrap();
    let err = txn.commit().unwrap_err();
    assert!(is_missing_g(&err), "{err}");
    env.assert_no_locks(&t);

    env.hbase
        .admin()
        .add_family(&t, &FamilyDescriptor::new("g").max_versions(i32::MAX))
        .unwrap();
    client
        .run(|txn| txn.set(&t, "r", "g", "q", "w"))
        .expect("the new family is found");
    let txn = client.begin().unwrap();
    assert_eq!(
        txn.get(&t, "r", "g", "q").unwrap().as_deref(),
        Some(&b"w"[..])
    );
    client.shutdown();
}
