//! Row-granularity locking (docs/design.md invariant 14) as protocol scripts: a table that
//! locks rows takes one lock per row for all of a transaction's columns there, and everything
//! the cell protocol guarantees still holds. The other suites run again with every table
//! locking rows under `PERCOLATOR_TEST_LOCK_GRANULARITY=row`; these tests are the ones only
//! rows make possible: several columns under one lock, columns a lock does not list, mixed
//! tables, and the granularity itself.

mod txn_support;

use std::sync::Arc;
use std::time::Duration;

use percolator::format::{decode_lock_state, LockState, WriteKind};
use percolator::hbase::{Get, Put};
use percolator::txn::{CellKey, LockGranularity, ScannedRow, Seam};
use percolator::Error;
use txn_support::{lock_qualifier, raw_lock_in, Env, FAMILY};

const ROW: LockGranularity = LockGranularity::Row;
const CELL: LockGranularity = LockGranularity::Cell;

fn column(table: &str, row: &str, q: &str) -> CellKey {
    CellKey::new(table, row, FAMILY, q).unwrap()
}

fn columns(table: &str, row: &str, qs: &[&str]) -> Vec<CellKey> {
    qs.iter().map(|q| column(table, row, q)).collect()
}

fn write(env: &Env, cells: &[CellKey], value: &str) -> u64 {
    let client = env.client();
    let mut txn = client.begin().unwrap();
    for k in cells {
        txn.set(&k.table, &k.row, &k.family, &k.qualifier, value)
            .unwrap();
    }
    let commit_ts = txn.commit().unwrap();
    client.shutdown();
    commit_ts
}

fn read(env: &Env, cells: &[CellKey]) -> Vec<Option<Vec<u8>>> {
    let client = env.client();
    let values = client.begin().unwrap().get_many(cells).unwrap();
    client.shutdown();
    values
}

fn lock_state(env: &Env, granularity: LockGranularity, key: &CellKey) -> LockState {
    decode_lock_state(raw_lock_in(&env.hbase, &env.schema, granularity, key).as_deref()).unwrap()
}

/// The cost the mode exists for: ten columns of a row are one prewrite and one commit
/// checkAndMutate, where a cell table takes ten of each.
#[test]
fn a_transactions_writes_to_a_row_take_one_prewrite_and_one_commit_whatever_the_columns() {
    let env = Env::start();
    let qs: Vec<String> = (0..10).map(|i| format!("c{i}")).collect();
    let qs: Vec<&str> = qs.iter().map(String::as_str).collect();
    for (granularity, per_row) in [(ROW, 1), (CELL, 10)] {
        let t = env.table_with("wide", granularity);
        let cells: Vec<CellKey> = ["a", "b"]
            .iter()
            .flat_map(|r| columns(&t, r, &qs))
            .collect();
        write(&env, &cells, "0");
        let client = env.client();
        // A read first, so that the table's families and meta row are cached.
        client.begin().unwrap().get_many(&cells).unwrap();
        let mut txn = client.begin().unwrap();
        txn.start_ts().unwrap();
        for k in &cells {
            txn.set(&k.table, &k.row, &k.family, &k.qualifier, "1")
                .unwrap();
        }
        let before = client.stats().hbase_rpcs;
        txn.commit().unwrap();
        assert_eq!(
            client.stats().hbase_rpcs - before,
            2 * 2 * per_row,
            "{granularity}: 2 rows, a prewrite and a commit CAS per lock"
        );
        let before = client.stats().hbase_rpcs;
        let values = client.begin().unwrap().get_many(&cells).unwrap();
        assert!(values.iter().all(|v| v.as_deref() == Some(&b"1"[..])));
        assert_eq!(client.stats().hbase_rpcs - before, 1, "one getMultiple");
        client.shutdown();
    }
}

/// The trade: two transactions that write different columns of one row conflict, so the one
/// that started first and commits second fails, where cell locks let both through.
#[test]
fn writers_of_different_columns_of_a_row_conflict() {
    let env = Env::start();
    for (granularity, conflicts) in [(ROW, true), (CELL, false)] {
        let t = env.table_with("trade", granularity);
        let client = env.client();
        let mut first = client.begin().unwrap();
        first.start_ts().unwrap();
        first.set(&t, "r", FAMILY, "x", "first").unwrap();
        let mut second = client.begin().unwrap();
        second.set(&t, "r", FAMILY, "y", "second").unwrap();
        second.commit().unwrap();
        let outcome = first.commit();
        if conflicts {
            assert!(
                matches!(outcome, Err(Error::WriteConflict { .. })),
                "{granularity}: {outcome:?}"
            );
        } else {
            outcome.unwrap();
        }
        let values = read(&env, &columns(&t, "r", &["x", "y"]));
        let x: Option<&[u8]> = (!conflicts).then_some(b"first");
        assert_eq!(values[0].as_deref(), x, "{granularity}");
        assert_eq!(values[1].as_deref(), Some(&b"second"[..]), "{granularity}");
        client.shutdown();
    }
}

/// Invariant 5 on rows: a live row lock holds back exactly the columns it lists. A read of
/// one of them must not return the value below the lock (its transaction may commit under
/// the snapshot); a read of another column of the row is not held back at all.
#[test]
fn a_reader_waits_only_for_the_columns_a_row_lock_lists() {
    let env = Env::start();
    let t = env.table_with("listed", ROW);
    write(&env, &columns(&t, "r", &["x", "y"]), "old");
    let gate = txn_support::faulty::Gate::new();
    let store = txn_support::faulty::FaultyStore::new(env.hbase.clone(), env.schema.clone());
    store.inject(
        txn_support::faulty::CasKind::Commit,
        "r",
        txn_support::faulty::Fault::Hold(gate.clone()),
        1,
    );
    let holder = env.client_on(store, env.tso.clone(), env.options());
    let committing = std::thread::scope(|s| {
        let _open = gate.opens_on_drop();
        let handle = s.spawn(|| {
            let mut txn = holder.begin().unwrap();
            txn.set(&t, "r", FAMILY, "x", "new").unwrap();
            txn.commit()
        });
        assert!(gate.wait_reached(Duration::from_secs(10)), "commit held");
        let impatient = env.client_with(
            env.options()
                .to_builder()
                .max_lock_wait(Duration::from_millis(300))
                .build(),
        );
        let txn = impatient.begin().unwrap();
        assert_eq!(
            txn.get(&t, "r", FAMILY, "y").unwrap().as_deref(),
            Some(&b"old"[..]),
            "y is not listed: read at once"
        );
        let err = txn.get(&t, "r", FAMILY, "x").unwrap_err();
        assert!(matches!(err, Error::KeyLocked { .. }), "{err}");
        impatient.shutdown();
        gate.open();
        handle.join().unwrap()
    });
    committing.unwrap();
    assert_eq!(
        read(&env, &columns(&t, "r", &["x", "y"])),
        [Some(b"new".to_vec()), Some(b"old".to_vec())]
    );
    holder.shutdown();
}

/// All or nothing at every seam, with several columns under each row lock and a cell table in
/// the same transaction: readers roll a row forward or back whole, no lock stays, and a rolled
/// back row keeps none of its data versions.
#[test]
fn a_client_dying_at_any_seam_leaves_every_column_of_every_row_all_or_nothing() {
    let env = Env::start();
    for seam in [
        Seam::AfterPrimaryPrewrite,
        Seam::AfterSecondaryPrewrite,
        Seam::BeforePrimaryCommit,
        Seam::AfterPrimaryCommit,
        Seam::BetweenSecondaryCommits,
    ] {
        let (rows, cells) = (
            env.table_with("dying_rows", ROW),
            env.table_with("dying_cells", CELL),
        );
        let mut keys = columns(&rows, "a", &["x", "y"]);
        keys.extend(columns(&rows, "b", &["x", "y", "z"]));
        keys.extend(columns(&cells, "c", &["x", "y"]));
        write(&env, &keys, "old");
        let crashing = env.client_with(
            env.options()
                .to_builder()
                .crash_injector(Arc::new(move |at| at == seam))
                .build(),
        );
        let mut txn = crashing.begin().unwrap();
        let start_ts = txn.start_ts().unwrap();
        for k in &keys {
            txn.set(&k.table, &k.row, &k.family, &k.qualifier, "new")
                .unwrap();
        }
        let err = txn.commit().unwrap_err();
        assert!(matches!(err, Error::ClientCrashed { .. }), "{err}");
        let committed = matches!(
            seam,
            Seam::AfterPrimaryCommit | Seam::BetweenSecondaryCommits
        );
        let expected: &[u8] = if committed { b"new" } else { b"old" };
        // From the far end first: the last row resolves the whole transaction through the
        // primary's row.
        let reversed: Vec<CellKey> = keys.iter().rev().cloned().collect();
        for (k, v) in reversed.iter().zip(read(&env, &reversed)) {
            assert_eq!(v.as_deref(), Some(expected), "{}: {k}", seam.name());
        }
        for k in &keys {
            let granularity = if k.table == rows { ROW } else { CELL };
            assert!(
                !matches!(lock_state(&env, granularity, k), LockState::Locked(_)),
                "{}: {k} still locked",
                seam.name()
            );
            let recorded = env
                .writes(k)
                .iter()
                .any(|(_, r)| r.start_ts == start_ts && r.kind == WriteKind::Put);
            assert_eq!(recorded, committed, "{}: record of {k}", seam.name());
            if !committed {
                assert!(
                    env.data_versions(k)
                        .iter()
                        .all(|(v, _)| *v != start_ts as i64),
                    "{}: data version of {k} left",
                    seam.name()
                );
            }
        }
    }
}

/// A scan finds a column that only a row lock names (no write record yet): a committed
/// transaction whose secondary row was never committed still shows that row's new columns.
#[test]
fn a_scan_sees_columns_only_an_unresolved_row_lock_names() {
    let env = Env::start();
    let t = env.table_with("scanned", ROW);
    let crashing = env.client_with(
        env.options()
            .to_builder()
            .crash_injector(Arc::new(|at| at == Seam::AfterPrimaryCommit))
            .build(),
    );
    let mut txn = crashing.begin().unwrap();
    txn.set(&t, "a", FAMILY, "x", "1").unwrap();
    txn.set(&t, "b", FAMILY, "fresh1", "2").unwrap();
    txn.set(&t, "b", FAMILY, "fresh2", "3").unwrap();
    assert!(txn.commit().is_err(), "dies after its commit point");
    let reader = env.client();
    let rows = reader.begin().unwrap().scan(&t, "", "", 10).unwrap();
    let col = |q: &str, v: &str| (b"f".to_vec(), q.as_bytes().to_vec(), v.as_bytes().to_vec());
    let row = |r: &str, columns| ScannedRow {
        row: r.as_bytes().to_vec(),
        columns,
    };
    assert_eq!(
        rows,
        [
            row("a", vec![col("x", "1")]),
            row("b", vec![col("fresh1", "2"), col("fresh2", "3")]),
        ]
    );
    reader.shutdown();
}

/// The granularity is chosen once: creating or enabling the table again with the other one is
/// refused, and a client never writes a table under the wrong one, even one that cached the
/// table's meta row before the table existed.
#[test]
fn a_table_keeps_the_granularity_it_was_created_with() {
    let env = Env::start();
    let t = env.table_with("fixed", ROW);
    let desc = env.schema.table(&t, &[FAMILY]);
    let err =
        percolator::txn::setup::create_with(&env.hbase, &env.schema, &desc, CELL).unwrap_err();
    assert!(err.to_string().contains("locks by row, not cell"), "{err}");
    assert!(percolator::txn::setup::create_with(&env.hbase, &env.schema, &desc, ROW).is_ok());
    let err = percolator::txn::setup::enable_transactions_with(&env.hbase, &env.schema, &t, CELL)
        .unwrap_err();
    assert!(matches!(err, Error::IllegalArgument { .. }), "{err}");
}

/// The meta row is written before the families exist, and a client reads it again when it
/// first finds them: a client that looked at the table before it was created (and so cached
/// a meta row without the granularity) still locks its rows. Were it to lock cells, an older
/// transaction writing another column of the row would not conflict with it.
#[test]
fn a_client_that_looked_before_the_table_existed_still_locks_its_rows() {
    let env = Env::start();
    let name = txn_support::unique("early");
    let early = env.client();
    let err = early
        .begin()
        .unwrap()
        .get(&name, "r", FAMILY, "x")
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::TableNotFound { .. } | Error::NotTransactional { .. }
        ),
        "{err}"
    );
    let desc = env.schema.table(&name, &[FAMILY]);
    percolator::txn::setup::create_with(&env.hbase, &env.schema, &desc, ROW).unwrap();
    env.created(&name);

    let other = env.client();
    let mut older = other.begin().unwrap();
    older.start_ts().unwrap();
    older.set(&name, "r", FAMILY, "y", "older").unwrap();
    early
        .run(|txn| txn.set(&name, "r", FAMILY, "x", "early"))
        .unwrap();
    let stored = lock_state(&env, ROW, &column(&name, "r", "x"));
    assert!(matches!(stored, LockState::Released { .. }), "{stored:?}");
    let cell_lock = env
        .hbase
        .get(
            &name,
            &Get::new("r").column(
                env.schema.lock_family.clone(),
                lock_qualifier(&env.schema, CELL, &column(&name, "r", "x")),
            ),
        )
        .unwrap();
    assert!(
        cell_lock.is_empty(),
        "no cell lock in a table that locks rows"
    );
    assert!(matches!(older.commit(), Err(Error::WriteConflict { .. })));
    early.shutdown();
    other.shutdown();
}

/// A damaged row lock is reported for every column of its row, and a write there leaves it as
/// it is.
#[test]
fn a_damaged_row_lock_is_reported_and_left_intact() {
    let env = Env::start();
    let t = env.table_with("damaged_row", ROW);
    let key = column(&t, "r", "x");
    let garbage = vec![0x01, 0x02, 0xff];
    let put = Put::new("r").add(
        env.schema.lock_family.clone(),
        lock_qualifier(&env.schema, ROW, &key),
        garbage.clone(),
    );
    env.hbase.put(&t, &put).unwrap();
    let client = env.client();
    for q in ["x", "never_written"] {
        let err = client.begin().unwrap().get(&t, "r", FAMILY, q).unwrap_err();
        assert!(
            matches!(err, Error::Corrupted { what: "lock", .. }),
            "{err}"
        );
    }
    let mut txn = client.begin().unwrap();
    txn.set(&t, "r", FAMILY, "y", "v").unwrap();
    assert!(matches!(
        txn.commit(),
        Err(Error::Corrupted { what: "lock", .. })
    ));
    assert_eq!(
        raw_lock_in(&env.hbase, &env.schema, ROW, &key),
        Some(garbage)
    );
    client.shutdown();
}

/// An operator sees a row lock once, under its first column, and resolving it settles the
/// whole row.
#[test]
fn a_row_lock_is_listed_once_and_resolving_it_settles_the_row() {
    let env = Env::start();
    let t = env.table_with("listed_once", ROW);
    let keys = columns(&t, "r", &["x", "y", "z"]);
    write(&env, &keys, "old");
    let crashing = env.client_with(
        env.options()
            .to_builder()
            .crash_injector(Arc::new(|at| at == Seam::BeforePrimaryCommit))
            .build(),
    );
    let mut txn = crashing.begin().unwrap();
    for k in &keys {
        txn.set(&k.table, &k.row, &k.family, &k.qualifier, "new")
            .unwrap();
    }
    assert!(txn.commit().is_err(), "dies before its commit point");
    let locks = percolator::locks::list_locks(&env.hbase, &env.schema, &t).unwrap();
    assert_eq!(locks.len(), 1, "{locks:?}");
    assert_eq!(locks[0].key, keys[0]);
    let resolver = env.client();
    let resolved = percolator::locks::resolve_locks(&resolver, &locks);
    assert!(resolved.iter().all(|r| r.resolved), "{resolved:?}");
    assert!(percolator::locks::list_locks(&env.hbase, &env.schema, &t)
        .unwrap()
        .is_empty());
    assert_eq!(read(&env, &keys), vec![Some(b"old".to_vec()); 3]);
    resolver.shutdown();
}

/// A wide row whose values pass the row lock's inline budget: the values past it are read
/// from their data versions, after a clean commit and after a roll-forward alike.
#[test]
fn a_row_wider_than_its_locks_inline_budget_reads_back_every_value() {
    let env = Env::start();
    let t = env.table_with("budget", ROW);
    let qs: Vec<String> = (0..100).map(|i| format!("c{i:03}")).collect();
    let qs: Vec<&str> = qs.iter().map(String::as_str).collect();
    let value = |i: usize| vec![b'a' + (i % 26) as u8; 1000];
    for (row, seam) in [("clean", None), ("rolled", Some(Seam::AfterPrimaryCommit))] {
        // The primary elsewhere, so that this row is a secondary a reader rolls forward.
        let mut options = env.options().to_builder();
        if let Some(seam) = seam {
            options = options.crash_injector(Arc::new(move |at| at == seam));
        }
        let client = env.client_with(options.build());
        let mut txn = client.begin().unwrap();
        txn.set(&t, "a_primary", FAMILY, "p", "1").unwrap();
        for (i, q) in qs.iter().enumerate() {
            txn.set(&t, row, FAMILY, *q, value(i)).unwrap();
        }
        assert_eq!(txn.commit().is_ok(), seam.is_none(), "{row}");
        let values = read(&env, &columns(&t, row, &qs));
        for (i, v) in values.into_iter().enumerate() {
            assert_eq!(v, Some(value(i)), "{row} {}", qs[i]);
        }
    }
}
