//! Isolation anomalies, Hermitage style: two or more transactions interleaved step by step on
//! the emulator, each test stating which anomaly snapshot isolation must prevent (or, for write
//! skew, permit). Also the transaction's view of its own writes.

mod txn_support;

use std::sync::Arc;
use std::time::Duration;

use percolator::txn::{Client, ScannedRow, Transaction};
use percolator::{Error, RetryClass};
use txn_support::faulty::{CasKind, Fault, FaultyStore, Gate};
use txn_support::{begin_now, Env, FAMILY};

fn get(txn: &Transaction, table: &str, row: &str) -> Option<Vec<u8>> {
    txn.get(table, row, FAMILY, "q").unwrap()
}

fn value(v: &str) -> Option<Vec<u8>> {
    Some(v.as_bytes().to_vec())
}

fn set(txn: &mut Transaction, table: &str, row: &str, v: &str) {
    txn.set(table, row, FAMILY, "q", v).unwrap();
}

/// Commits `rows` (row, value) in one transaction.
fn seed(client: &Client, table: &str, rows: &[(&str, &str)]) {
    client
        .run(|txn| {
            for (row, v) in rows {
                txn.set(table, row, FAMILY, "q", *v)?;
            }
            Ok(())
        })
        .unwrap();
}

fn assert_conflict(result: percolator::Result<u64>) -> Error {
    let err = result.expect_err("the second writer must not commit");
    assert!(
        matches!(err, Error::WriteConflict { .. } | Error::KeyLocked { .. }),
        "expected a write conflict, got {err}"
    );
    assert_eq!(err.retry_class(), RetryClass::Retry, "{err}");
    err
}

/// A client whose commit point on `row` waits at the returned gate: its locks stay in place,
/// owned by a live client, until the test opens the gate.
fn paused_before_commit(env: &Env, row: &str) -> (Client, Arc<Gate>) {
    let store = FaultyStore::new(env.hbase.clone(), env.schema.clone());
    let gate = Gate::new();
    store.inject(CasKind::Commit, row, Fault::Hold(gate.clone()), 1);
    (env.client_on(store, env.tso.clone(), env.options()), gate)
}

fn scan_rows(txn: &Transaction, table: &str) -> Vec<(String, String)> {
    let rows: Vec<ScannedRow> = txn.scan(table, "a", "z", 100).unwrap();
    rows.into_iter()
        .flat_map(|r| {
            let row = String::from_utf8(r.row).unwrap();
            r.columns
                .into_iter()
                .map(move |(_, _, v)| (row.clone(), String::from_utf8(v).unwrap()))
        })
        .collect()
}

/// G0: T1 and T2 write x and y in interleaved order; the later committer fails, so the result
/// is entirely one transaction's.
#[test]
fn dirty_write_prevented() {
    let env = Env::start();
    let t = env.table("g0");
    let client = env.client();
    seed(&client, &t, &[("x", "0"), ("y", "0")]);
    let mut t1 = begin_now(&client);
    let mut t2 = begin_now(&client);
    set(&mut t1, &t, "x", "11");
    set(&mut t2, &t, "x", "12");
    set(&mut t1, &t, "y", "21");
    set(&mut t2, &t, "y", "22");
    t1.commit().unwrap();
    assert_conflict(t2.commit());
    let r = begin_now(&client);
    assert_eq!(
        (get(&r, &t, "x"), get(&r, &t, "y")),
        (value("11"), value("21"))
    );
    env.assert_no_locks(&t);
    client.shutdown();
}

/// G0 while T1's locks are in place: T2 cannot overwrite them and fails at once.
#[test]
fn dirty_write_prevented_while_locks_are_held() {
    let env = Env::start();
    let t = env.table("g0l");
    let client = env.client();
    seed(&client, &t, &[("x", "0"), ("y", "0")]);
    let (holder, gate) = paused_before_commit(&env, "x");
    let mut t1 = begin_now(&holder);
    set(&mut t1, &t, "x", "1");
    set(&mut t1, &t, "y", "1");
    std::thread::scope(|s| {
        let _release = gate.opens_on_drop();
        let committing = s.spawn(|| t1.commit());
        assert!(gate.wait_reached(Duration::from_secs(10)));
        let mut t2 = begin_now(&client);
        set(&mut t2, &t, "y", "2");
        set(&mut t2, &t, "x", "2");
        assert_conflict(t2.commit());
        gate.open();
        committing.join().unwrap().expect("T1 commits");
    });
    let r = begin_now(&client);
    assert_eq!(
        (get(&r, &t, "x"), get(&r, &t, "y")),
        (value("1"), value("1"))
    );
    env.assert_no_locks(&t);
    holder.shutdown();
    client.shutdown();
}

/// G1a/G1b: neither a discarded transaction's writes nor a committing transaction's
/// uncommitted writes are ever returned. A reader whose snapshot covers the locks waits (and
/// gives up with `KeyLocked`); a reader older than the locks reads the old value at once.
#[test]
fn dirty_read_prevented() {
    let env = Env::start();
    let t = env.table("g1");
    let client = env.client();
    seed(&client, &t, &[("x", "0"), ("y", "0")]);

    let mut aborted = begin_now(&client);
    set(&mut aborted, &t, "x", "aborted");
    aborted.rollback();
    assert_eq!(get(&begin_now(&client), &t, "x"), value("0"));

    let older = begin_now(&client);
    let (holder, gate) = paused_before_commit(&env, "x");
    let mut t1 = begin_now(&holder);
    set(&mut t1, &t, "x", "1");
    set(&mut t1, &t, "y", "1");
    let impatient = env.client_with(
        env.options()
            .to_builder()
            .max_lock_wait(Duration::from_millis(300))
            .build(),
    );
    std::thread::scope(|s| {
        let _release = gate.opens_on_drop();
        let committing = s.spawn(|| t1.commit());
        assert!(gate.wait_reached(Duration::from_secs(10)));
        let during = begin_now(&impatient);
        for row in ["x", "y"] {
            let err = during.get(&t, row, FAMILY, "q").unwrap_err();
            assert!(matches!(err, Error::KeyLocked { .. }), "{row}: {err}");
        }
        assert_eq!(
            get(&older, &t, "x"),
            value("0"),
            "locks above the snapshot are ignored"
        );
        gate.open();
        committing.join().unwrap().expect("T1 commits");
    });
    let after = begin_now(&client);
    assert_eq!(
        (get(&after, &t, "x"), get(&after, &t, "y")),
        (value("1"), value("1"))
    );
    impatient.shutdown();
    holder.shutdown();
    client.shutdown();
}

/// P4: two read-modify-writes of one counter; the second to commit must fail retryably.
#[test]
fn lost_update_prevented() {
    let env = Env::start();
    let t = env.table("p4");
    let client = env.client();
    seed(&client, &t, &[("x", "100")]);
    let mut t1 = begin_now(&client);
    let mut t2 = begin_now(&client);
    assert_eq!(get(&t1, &t, "x"), value("100"));
    assert_eq!(get(&t2, &t, "x"), value("100"));
    set(&mut t1, &t, "x", "111");
    set(&mut t2, &t, "x", "112");
    t1.commit().unwrap();
    let err = assert_conflict(t2.commit());
    assert!(matches!(err, Error::WriteConflict { .. }), "{err}");
    assert_eq!(get(&begin_now(&client), &t, "x"), value("111"));
    client.shutdown();
}

/// Put-if-absent: two inserts of one cell race and only one commits; an insert that sees the
/// value fails with the fatal `KeyExists`, which `run` returns instead of retrying; after a
/// transactional delete the cell can be inserted again.
#[test]
fn concurrent_inserts_of_one_cell_commit_once() {
    let env = Env::start();
    let t = env.table("ins");
    let client = env.client();
    let mut t1 = begin_now(&client);
    let mut t2 = begin_now(&client);
    assert!(!t1.key_exists(&t, "x", FAMILY, "q").unwrap());
    t1.insert(&t, "x", FAMILY, "q", "1").unwrap();
    assert!(
        t1.key_exists(&t, "x", FAMILY, "q").unwrap(),
        "its own insert"
    );
    t2.insert(&t, "x", FAMILY, "q", "2").unwrap();
    t1.commit().unwrap();
    let err = assert_conflict(t2.commit());
    assert!(matches!(err, Error::WriteConflict { .. }), "{err}");

    let err = client
        .run(|txn| txn.insert(&t, "x", FAMILY, "q", "3"))
        .unwrap_err();
    assert!(
        matches!(&err, Error::KeyExists { table, .. } if *table == t),
        "{err}"
    );
    assert_eq!(err.retry_class(), RetryClass::Fatal);
    assert_eq!(get(&begin_now(&client), &t, "x"), value("1"));

    client.run(|txn| txn.delete(&t, "x", FAMILY, "q")).unwrap();
    client
        .run(|txn| txn.insert(&t, "x", FAMILY, "q", "4"))
        .unwrap();
    assert_eq!(get(&begin_now(&client), &t, "x"), value("4"));
    client.shutdown();
}

/// G-single: T1 reads x, T2 moves 25 from x to y and commits, T1 reads y: T1 still sees the
/// invariant x + y = 100 of its snapshot.
#[test]
fn read_skew_prevented() {
    let env = Env::start();
    let t = env.table("gsingle");
    let client = env.client();
    seed(&client, &t, &[("x", "50"), ("y", "50")]);
    let t1 = begin_now(&client);
    assert_eq!(get(&t1, &t, "x"), value("50"));
    let mut t2 = begin_now(&client);
    assert_eq!(get(&t2, &t, "x"), value("50"));
    set(&mut t2, &t, "x", "25");
    set(&mut t2, &t, "y", "75");
    t2.commit().unwrap();
    assert_eq!(get(&t1, &t, "y"), value("50"));
    client.shutdown();
}

/// P2: reading the same cell twice in one transaction gives the same value, whatever others
/// commit in between (an update, then a delete).
#[test]
fn fuzzy_read_prevented() {
    let env = Env::start();
    let t = env.table("p2");
    let client = env.client();
    seed(&client, &t, &[("x", "1")]);
    let t1 = begin_now(&client);
    assert_eq!(get(&t1, &t, "x"), value("1"));
    seed(&client, &t, &[("x", "2")]);
    assert_eq!(get(&t1, &t, "x"), value("1"));
    client.run(|txn| txn.delete(&t, "x", FAMILY, "q")).unwrap();
    assert_eq!(get(&t1, &t, "x"), value("1"));
    assert_eq!(get(&begin_now(&client), &t, "x"), None);
    client.shutdown();
}

/// Phantom: a scan repeated inside one transaction returns the same rows although another
/// transaction inserted a row into the range and deleted one from it meanwhile.
#[test]
fn phantom_in_scanned_range_prevented() {
    let env = Env::start();
    let t = env.table("phantom");
    let client = env.client();
    seed(&client, &t, &[("b", "1"), ("d", "2"), ("f", "3")]);
    let t1 = begin_now(&client);
    let first = scan_rows(&t1, &t);
    assert_eq!(first.len(), 3);
    seed(&client, &t, &[("c", "new")]);
    client.run(|txn| txn.delete(&t, "f", FAMILY, "q")).unwrap();
    assert_eq!(scan_rows(&t1, &t), first);
    let later = scan_rows(&begin_now(&client), &t);
    let rows: Vec<&str> = later.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(rows, ["b", "c", "d"]);
    client.shutdown();
}

/// G2-item, write skew: each transaction reads both on-call flags and clears a different one.
/// Snapshot isolation checks only write-write conflicts, and the write sets are disjoint, so
/// it PERMITS this anomaly: both commit and nobody is left on call. Applications that need the
/// constraint must materialise it as a write (e.g. both write a shared cell).
#[test]
fn write_skew_allowed_under_snapshot_isolation() {
    let env = Env::start();
    let t = env.table("g2");
    let client = env.client();
    seed(&client, &t, &[("alice", "on"), ("bob", "on")]);
    let mut t1 = begin_now(&client);
    let mut t2 = begin_now(&client);
    for txn in [&t1, &t2] {
        assert_eq!(
            (get(txn, &t, "alice"), get(txn, &t, "bob")),
            (value("on"), value("on"))
        );
    }
    set(&mut t1, &t, "alice", "off");
    set(&mut t2, &t, "bob", "off");
    t1.commit().expect("T1 commits");
    t2.commit()
        .expect("T2 commits: snapshot isolation allows write skew");
    let r = begin_now(&client);
    assert_eq!(
        (get(&r, &t, "alice"), get(&r, &t, "bob")),
        (value("off"), value("off"))
    );
    client.shutdown();
}

/// Write skew prevented where the application asks: reading the on-call flags with
/// `get_for_update` locks them as if written, so the second of two such transactions to commit
/// meets the first's commit on a cell it read and fails with a write conflict. The cells it
/// only locked keep their values, and a later reader sees the one transaction that won.
#[test]
fn write_skew_prevented_by_get_for_update() {
    let env = Env::start();
    let t = env.table("g2u");
    let client = env.client();
    seed(&client, &t, &[("alice", "on"), ("bob", "on")]);
    let mut t1 = begin_now(&client);
    let mut t2 = begin_now(&client);
    for txn in [&mut t1, &mut t2] {
        let alice = txn.get_for_update(&t, "alice", FAMILY, "q").unwrap();
        let bob = txn.get_for_update(&t, "bob", FAMILY, "q").unwrap();
        assert_eq!((alice, bob), (value("on"), value("on")));
    }
    set(&mut t1, &t, "alice", "off");
    set(&mut t2, &t, "bob", "off");
    t1.commit().expect("T1 commits");
    let err = t2
        .commit()
        .expect_err("T2 read bob and alice for update: it must abort");
    assert!(matches!(err, Error::WriteConflict { .. }), "{err}");
    env.assert_no_locks(&t);
    let r = begin_now(&client);
    assert_eq!(
        (get(&r, &t, "alice"), get(&r, &t, "bob")),
        (value("off"), value("on")),
        "T1's write landed; bob, only locked by T1, kept its value"
    );
    client.shutdown();
}

/// `lock_keys` alone: a transaction that locks a cell it does not write still conflicts with
/// a write committed to it after its snapshot, and committing it changes no value.
#[test]
fn lock_keys_conflict_without_changing_values() {
    let env = Env::start();
    let t = env.table("lockkeys");
    let client = env.client();
    seed(&client, &t, &[("x", "1"), ("y", "1")]);
    let mut locker = begin_now(&client);
    locker.lock_keys(&[env.key(&t, "x")]).unwrap();
    set(&mut locker, &t, "y", "2");
    let mut writer = begin_now(&client);
    set(&mut writer, &t, "x", "9");
    writer.commit().expect("the writer commits first");
    let err = locker
        .commit()
        .expect_err("x changed after the locker's snapshot");
    assert!(matches!(err, Error::WriteConflict { .. }), "{err}");

    let mut only_locks = begin_now(&client);
    only_locks
        .lock_keys(&[env.key(&t, "x"), env.key(&t, "y")])
        .unwrap();
    only_locks
        .commit()
        .expect("a lock-only transaction commits");
    let r = begin_now(&client);
    assert_eq!(
        (get(&r, &t, "x"), get(&r, &t, "y")),
        (value("9"), value("1"))
    );
    env.assert_no_locks(&t);
    client.shutdown();
}

/// A transaction reads its own buffered writes and deletes; others do not until it commits.
#[test]
fn reads_its_own_writes() {
    let env = Env::start();
    let t = env.table("ryw");
    let client = env.client();
    seed(&client, &t, &[("x", "old"), ("y", "old")]);
    let mut txn = begin_now(&client);
    set(&mut txn, &t, "x", "mine");
    txn.delete(&t, "y", FAMILY, "q").unwrap();
    set(&mut txn, &t, "z", "created");
    assert_eq!(get(&txn, &t, "x"), value("mine"));
    assert_eq!(get(&txn, &t, "y"), None);
    assert_eq!(get(&txn, &t, "z"), value("created"));
    let keys = [env.key(&t, "z"), env.key(&t, "x"), env.key(&t, "y")];
    assert_eq!(
        txn.get_many(&keys).unwrap(),
        [value("created"), value("mine"), None]
    );
    let other = begin_now(&client);
    assert_eq!(
        (get(&other, &t, "x"), get(&other, &t, "y")),
        (value("old"), value("old"))
    );
    txn.commit().unwrap();
    let after = begin_now(&client);
    assert_eq!(
        after.get_many(&keys).unwrap(),
        [value("created"), value("mine"), None]
    );
    client.shutdown();
}

/// One transaction writes to two tables; one snapshot reads both, in one call and one by one.
#[test]
fn reads_across_two_tables_in_one_snapshot() {
    let env = Env::start();
    let (orders, stock) = (env.table("orders"), env.table("stock"));
    let client = env.client();
    seed(&client, &stock, &[("widget", "10")]);
    let before = begin_now(&client);
    client
        .run(|txn| {
            txn.set(&orders, "o1", FAMILY, "q", "widget")?;
            txn.set(&stock, "widget", FAMILY, "q", "9")
        })
        .unwrap();
    let keys = [env.key(&orders, "o1"), env.key(&stock, "widget")];
    assert_eq!(before.get_many(&keys).unwrap(), [None, value("10")]);
    let after = begin_now(&client);
    assert_eq!(
        after.get_many(&keys).unwrap(),
        [value("widget"), value("9")]
    );
    assert_eq!(get(&after, &orders, "o1"), value("widget"));
    assert_eq!(get(&after, &stock, "widget"), value("9"));
    client.shutdown();
}

/// A scan merges the transaction's buffered puts and deletes into the stored rows, keeps row
/// order and honours the limit.
#[test]
fn scan_includes_own_buffered_writes() {
    let env = Env::start();
    let t = env.table("scanown");
    let client = env.client();
    seed(&client, &t, &[("b", "1"), ("d", "2"), ("f", "3")]);
    let mut txn = begin_now(&client);
    txn.delete(&t, "b", FAMILY, "q").unwrap();
    set(&mut txn, &t, "d", "changed");
    set(&mut txn, &t, "e", "inserted");
    set(&mut txn, &t, "zz", "out of range");
    txn.set(&t, "f", FAMILY, "extra", "second column").unwrap();
    let rows = txn.scan(&t, "a", "z", 100).unwrap();
    let summary: Vec<(&[u8], usize)> = rows.iter().map(|r| (&r.row[..], r.columns.len())).collect();
    assert_eq!(summary, [(&b"d"[..], 1), (&b"e"[..], 1), (&b"f"[..], 2)]);
    assert_eq!(rows[0].columns[0].2, b"changed");
    assert_eq!(
        scan_rows(&txn, &t),
        [
            ("d".into(), "changed".into()),
            ("e".into(), "inserted".into()),
            ("f".into(), "second column".into()),
            ("f".into(), "3".into()),
        ]
    );
    let limited = txn.scan(&t, "a", "z", 2).unwrap();
    assert_eq!(
        limited.iter().map(|r| &r.row[..]).collect::<Vec<_>>(),
        [b"d", b"e"]
    );
    client.shutdown();
}

/// "No limit" spelled as `usize::MAX` must still return the stored rows beside the buffered
/// ones (the stored-row budget is the limit plus the buffered writes, which must not overflow).
#[test]
fn scan_without_limit_includes_stored_and_buffered_rows() {
    let env = Env::start();
    let t = env.table("scanall");
    let client = env.client();
    seed(&client, &t, &[("b", "1"), ("d", "2")]);
    let mut txn = begin_now(&client);
    set(&mut txn, &t, "c", "mine");
    let rows = scan_rows(&txn, &t);
    let unlimited = txn.scan(&t, "a", "z", usize::MAX);
    let unlimited: Vec<Vec<u8>> = unlimited.unwrap().into_iter().map(|r| r.row).collect();
    assert_eq!(unlimited, [b"b", b"c", b"d"]);
    assert_eq!(rows.len(), 3);
    client.shutdown();
}

/// A reverse scan returns the same rows as the forward one, last first, with the range's
/// bounds kept (start inclusive, stop exclusive) and own writes merged.
#[test]
fn reverse_scan_is_the_forward_scan_backwards() {
    let env = Env::start();
    let t = env.table("scanrev");
    let client = env.client();
    seed(
        &client,
        &t,
        &[("a", "0"), ("b", "1"), ("d", "2"), ("f", "3"), ("z", "4")],
    );
    let mut txn = begin_now(&client);
    txn.delete(&t, "d", FAMILY, "q").unwrap();
    set(&mut txn, &t, "e", "mine");
    let rows = |r: Vec<ScannedRow>| -> Vec<String> {
        r.into_iter()
            .map(|r| String::from_utf8(r.row).unwrap())
            .collect()
    };
    let forward = rows(txn.scan(&t, "b", "z", 100).unwrap());
    assert_eq!(forward, ["b", "e", "f"]);
    let mut backward = rows(txn.scan_reverse(&t, "b", "z", 100).unwrap());
    assert_eq!(backward, ["f", "e", "b"]);
    backward.reverse();
    assert_eq!(backward, forward);
    assert_eq!(rows(txn.scan_reverse(&t, "", "", 2).unwrap()), ["z", "f"]);
    assert_eq!(rows(txn.scan_reverse(&t, "", "b", 100).unwrap()), ["a"]);
    client.shutdown();
}

/// A streaming scan walks a range larger than one scan page (256 rows) in both directions,
/// fetching pages as it goes.
#[test]
fn streaming_scans_cross_pages_in_both_directions() {
    let env = Env::start();
    let t = env.table("scanstream");
    let client = env.client();
    let n = 600;
    client
        .run(|txn| {
            for i in 0..n {
                txn.set(&t, format!("r{i:04}"), FAMILY, "q", i.to_string())?;
            }
            Ok(())
        })
        .unwrap();
    let txn = begin_now(&client);
    let forward: Vec<String> = txn
        .scan_iter(&t, "", "", false)
        .unwrap()
        .map(|r| String::from_utf8(r.unwrap().row).unwrap())
        .collect();
    let expected: Vec<String> = (0..n).map(|i| format!("r{i:04}")).collect();
    assert_eq!(forward, expected);
    let mut backward: Vec<String> = txn
        .scan_iter(&t, "r0100", "r0550", true)
        .unwrap()
        .map(|r| String::from_utf8(r.unwrap().row).unwrap())
        .collect();
    backward.reverse();
    assert_eq!(backward, expected[100..550]);
    client.shutdown();
}
