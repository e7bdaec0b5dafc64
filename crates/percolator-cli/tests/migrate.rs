//! `percolator migrate` scripts: a table filled by plain clients (several versions and families,
//! deletes, a TTL family, values large and small) is adopted while a plain writer keeps
//! writing, then read and written by transactions (and, in percolator-workloads'
//! `adopted_tables`, by the bank workload); `apply` is stopped
//! at every step and resumed; `disable` returns the table to plain use; bad input is refused
//! without change. On the emulator, or a real HBase with `HBASE_THRIFT`.

mod command_line;
#[path = "../../../tests/txn_support/mod.rs"]
mod txn_support;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use percolator::hbase::{Delete, FamilyDescriptor, Get, Put, Scan, TableDescriptor, TimeRange};
use percolator::migrate::{self, ApplyOptions, ProgressMode, Step};
use percolator::txn::{CellKey, LockGranularity};
use percolator::{Error, HBaseClient, MigrationIssue};
use txn_support::Env;

/// A plain client's call, made again while the gateway reports a region in transition (a
/// gateway that gives up fast reports one on every move): what the tests send is idempotent
/// for what they check, and a write that failed may have been applied.
fn plainly<T>(op: impl FnMut() -> percolator::Result<T>) -> T {
    percolator_cli::tools::retried(op).unwrap_or_else(|e| panic!("a plain call: {e}"))
}

/// (row, family, qualifier).
type Key = (String, String, String);
type Cells = BTreeMap<Key, Vec<u8>>;
/// A stored cell: (row, qualifier, version, value).
type Stored = (Vec<u8>, Vec<u8>, i64, Vec<u8>);

/// Asserts that `err` is a migration refusal of kind `kind`.
fn assert_issue(err: &Error, kind: MigrationIssue) {
    assert!(
        matches!(err, Error::Migration { kind: k, .. } if *k == kind),
        "expected {kind:?}: {err}"
    );
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Quick runs, in the granularity the suite runs in (`PERCOLATOR_TEST_LOCK_GRANULARITY`).
fn quiet() -> ApplyOptions {
    ApplyOptions {
        progress: ProgressMode::Off,
        settle: Duration::ZERO,
        checkpoint_rows: 7,
        lock_granularity: txn_support::granularity_from_env(),
        ..ApplyOptions::default()
    }
}

/// A legacy table: families `f` (3 versions), `g` (1 version) and `t` (TTL 600 s), filled by
/// plain puts and deletes at wall-clock timestamps.
fn legacy_table(env: &Env, prefix: &str) -> String {
    legacy_table_at(env, prefix, now_ms())
}

/// [`legacy_table`] with its versions relative to `now`: tables filled with the same `now`
/// hold the same cells.
fn legacy_table_at(env: &Env, prefix: &str, now: i64) -> String {
    let name = txn_support::unique(prefix);
    env.hbase
        .admin()
        .create_table(
            &TableDescriptor::new(name.clone())
                .family(FamilyDescriptor::new("f").max_versions(3))
                .family(FamilyDescriptor::new("g"))
                .family(FamilyDescriptor::new("t").ttl_secs(600)),
        )
        .unwrap();
    env.created(&name);
    let mut puts = Vec::new();
    for r in 0..40 {
        let row = format!("r{r:03}");
        let mut put = Put::new(row.clone());
        for v in 0..3 {
            put = put.add_at("f", "a", now - 3000 + v * 1000, format!("a{r}-v{v}"));
        }
        put = put.add_at("g", "b", now - 2000, format!("b{r}"));
        if r % 5 == 0 {
            put = put.add_at("f", "big", now - 1500, vec![b'x' + (r % 3) as u8; 5000]);
        }
        // Expired under the 600 s TTL, and alive.
        put = put.add_at("t", "old", now - 1_200_000, "expired");
        put = put.add_at("t", "new", now - 1000, format!("fresh{r}"));
        puts.push(put);
    }
    plainly(|| env.hbase.put_many(&name, &puts));
    for r in (0..40).step_by(4) {
        // A whole-column delete, and a delete of the newest version only (the older shows).
        plainly(|| {
            env.hbase
                .delete(&name, &Delete::new(format!("r{r:03}")).column("g", "b"))
        });
        plainly(|| {
            env.hbase.delete(
                &name,
                &Delete::new(format!("r{r:03}"))
                    .column_at("f", "a", now - 1000)
                    .delete_type(percolator::hbase::DeleteType::Column),
            )
        });
    }
    name
}

/// What a plain read returns now: the newest visible version of every cell (the whole scan
/// read again if it meets a region in transition).
fn plain_cells(hbase: &HBaseClient, table: &str) -> Cells {
    plainly(|| plain_scan(hbase, table))
}

fn plain_scan(hbase: &HBaseClient, table: &str) -> percolator::Result<Cells> {
    let scan = Scan::new()
        .family("f")
        .family("g")
        .family("t")
        .max_versions(1);
    let mut out = Cells::new();
    for row in hbase.scan(table, &scan)? {
        let row = row?;
        for c in row.cells {
            let key = (
                String::from_utf8(row.row.clone()).unwrap(),
                String::from_utf8(c.family).unwrap(),
                String::from_utf8(c.qualifier).unwrap(),
            );
            out.insert(key, c.value);
        }
    }
    Ok(out)
}

/// Every cell of `before` and `also`, read in one transaction.
fn txn_cells(
    env: &Env,
    table: &str,
    keys: impl Iterator<Item = (String, String, String)>,
) -> Cells {
    let client = env.client();
    let keys: Vec<CellKey> = keys
        .map(|(r, f, q)| CellKey::new(table, r, f, q).unwrap())
        .collect();
    let values = client.begin().unwrap().get_many(&keys).unwrap();
    client.shutdown();
    keys.into_iter()
        .zip(values)
        .filter_map(|(k, v)| {
            v.map(|v| {
                let s = |b: Vec<u8>| String::from_utf8(b).unwrap();
                ((s(k.row), s(k.family), s(k.qualifier)), v)
            })
        })
        .collect()
}

fn all_keys(a: &Cells, b: &Cells) -> Vec<(String, String, String)> {
    a.keys()
        .chain(b.keys())
        .cloned()
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect()
}

#[test]
fn legacy_data_is_adopted_while_a_plain_writer_keeps_writing() {
    let env = Env::start();
    let table = legacy_table(&env, "mig_adopt");
    let mut expected = plain_cells(&env.hbase, &table);
    assert!(
        !expected.keys().any(|(_, f, q)| f == "t" && q == "old"),
        "the expired cell reads absent"
    );
    assert_eq!(
        expected[&("r000".into(), "f".into(), "a".into())],
        b"a0-v1",
        "the older version shows under the deleted one"
    );

    // A plain writer overwrites, deletes and adds cells until the first pass is done.
    let log: Arc<Mutex<BTreeMap<Key, Option<Vec<u8>>>>> = Default::default();
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (hbase, table, log, stop) =
            (env.hbase.clone(), table.clone(), log.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::SeqCst) {
                let row = format!("r{:03}", (i * 7) % 45);
                let key = (row.clone(), "g".to_string(), "b".to_string());
                if i % 3 == 2 {
                    plainly(|| hbase.delete(&table, &Delete::new(row.clone()).column("g", "b")));
                    log.lock().insert(key, None);
                } else {
                    let v = format!("w{i}").into_bytes();
                    plainly(|| hbase.put(&table, &Put::new(row.clone()).add("g", "b", v.clone())));
                    log.lock().insert(key, Some(v));
                }
                i += 1;
                std::thread::sleep(Duration::from_millis(2));
            }
        })
    };
    let writer = Mutex::new(Some(writer));
    // After the first checkpoint, a plain client deletes the newest version of a cell already
    // adopted: the older version shows again, and must be what transactions read.
    let resurfaced = Arc::new(Mutex::new(None));
    let (hbase, t, seen) = (env.hbase.clone(), table.clone(), resurfaced.clone());
    let opts = ApplyOptions {
        // The writer stops once the first pass is done: the catch-up pass sees all it wrote.
        crash_at: Some(Arc::new(move |step| {
            if step == Step::Checkpoint && seen.lock().is_none() {
                let get = Get::new("r001").column("f", "a").max_versions(2);
                let row = hbase.get(&t, &get).unwrap();
                let versions: Vec<_> = row.versions(b"f", b"a").cloned().collect();
                let delete = Delete::new("r001")
                    .column_at("f", "a", versions[0].timestamp)
                    .delete_type(percolator::hbase::DeleteType::Column);
                plainly(|| hbase.delete(&t, &delete));
                *seen.lock() = Some(versions[1].value.clone());
            }
            if step == Step::PassDone {
                stop.store(true, Ordering::SeqCst);
                if let Some(w) = writer.lock().take() {
                    w.join().unwrap();
                }
            }
            false
        })),
        ..quiet()
    };
    let report = migrate::apply(&env.hbase, &env.schema, &table, &opts).unwrap();
    assert!(report.passes >= 2, "a catch-up pass ran: {report:?}");
    let older = resurfaced
        .lock()
        .take()
        .expect("the hook ran at a checkpoint");
    assert_eq!(older, b"a1-v1");
    expected.insert(("r001".into(), "f".into(), "a".into()), older);
    for (k, v) in log.lock().iter() {
        match v {
            Some(v) => expected.insert(k.clone(), v.clone()),
            None => expected.remove(k),
        };
    }
    let keys = all_keys(&expected, &plain_cells(&env.hbase, &table));
    assert_eq!(txn_cells(&env, &table, keys.into_iter()), expected);
    let v = migrate::verify(&env.hbase, &env.schema, &table, ProgressMode::Off).unwrap();
    assert!(v.ok(), "{:?}", v.problems);

    // Transactions then read and write adopted cells normally.
    let client = env.client();
    client
        .run(|t| {
            let old = t.get(&table, "r001", "g", "b")?.unwrap();
            t.set(&table, "r001", "g", "b", [old.as_slice(), b"+txn"].concat())?;
            t.delete(&table, "r002", "f", "a")
        })
        .unwrap();
    let txn = client.begin().unwrap();
    let b = txn.get(&table, "r001", "g", "b").unwrap().unwrap();
    assert!(b.ends_with(b"+txn"));
    assert_eq!(txn.get(&table, "r002", "f", "a").unwrap(), None);
    client.shutdown();
}

/// Rows of [`a_table_whose_regions_split_and_move_is_adopted_whole`]:
/// `PERCOLATOR_MIGRATE_ROWS`, for a scan long enough that `scripts/cluster-checks`'s nemesis
/// moves and splits the table's regions while it runs.
fn region_test_rows() -> usize {
    std::env::var("PERCOLATOR_MIGRATE_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400)
}

#[test]
fn a_table_whose_regions_split_and_move_is_adopted_whole() {
    let env = Env::start();
    let rows = region_test_rows();
    // The prefix is what `scripts/cluster-checks` aims its nemesis at.
    let table = txn_support::unique("mig_regions");
    let splits: Vec<Vec<u8>> = (1..4)
        .map(|i| format!("r{:07}", i * rows / 4).into_bytes())
        .collect();
    env.hbase
        .admin()
        .create_table_with_splits(
            &TableDescriptor::new(table.clone())
                .family(FamilyDescriptor::new("f").max_versions(3))
                .family(FamilyDescriptor::new("g"))
                .family(FamilyDescriptor::new("t")),
            &splits,
        )
        .unwrap();
    env.created(&table);
    let now = now_ms();
    let puts: Vec<Put> = (0..rows)
        .map(|r| {
            Put::new(format!("r{r:07}"))
                .add_at("f", "a", now - 2000, format!("old{r}"))
                .add_at("f", "a", now - 1000, format!("a{r}"))
                .add_at("g", "b", now - 1000, vec![b'b'; 100 + r % 400])
        })
        .collect();
    for batch in puts.chunks(500) {
        plainly(|| env.hbase.put_many(&table, batch));
    }
    let expected = plain_cells(&env.hbase, &table);
    assert_eq!(expected.len(), 2 * rows, "every plain cell was written");

    let opts = ApplyOptions {
        checkpoint_rows: 500,
        ..quiet()
    };
    let began = now_ms();
    migrate::apply(&env.hbase, &env.schema, &table, &opts).unwrap();
    // For `scripts/cluster-checks` (run with --nocapture): what its nemesis did in this window
    // is what the migration met.
    eprintln!(
        "migrate apply of {table}: {began} to {} ms; {}",
        now_ms(),
        percolator::metrics::longest_waits()
    );
    let v = migrate::verify(&env.hbase, &env.schema, &table, ProgressMode::Off).unwrap();
    assert!(v.ok(), "{:?}", v.problems);
    // Every cell reads back through transactions as the plain readers saw it.
    let keys: Vec<Key> = expected.keys().cloned().collect();
    let mut read = Cells::new();
    for chunk in keys.chunks(1000) {
        read.extend(txn_cells(&env, &table, chunk.iter().cloned()));
    }
    assert_eq!(read.len(), expected.len(), "every adopted cell is readable");
    assert!(read == expected, "the adopted values are the plain ones");
}

#[test]
fn transactions_refuse_a_table_until_its_data_is_adopted() {
    let env = Env::start();
    let table = legacy_table(&env, "mig_refuse");
    let opts = ApplyOptions {
        crash_at: Some(Arc::new(|s| s == Step::FamiliesReady)),
        ..quiet()
    };
    let err = migrate::apply(&env.hbase, &env.schema, &table, &opts).unwrap_err();
    assert_issue(&err, MigrationIssue::Interrupted);
    let client = env.client();
    let err = client
        .begin()
        .unwrap()
        .get(&table, "r001", "g", "b")
        .unwrap_err();
    assert!(
        matches!(&err, Error::NotTransactional { reason, .. } if reason.contains("migration in progress")),
        "{err}"
    );
    drop(client);
    migrate::apply(&env.hbase, &env.schema, &table, &quiet()).unwrap();
    let client = env.client();
    assert_eq!(
        client
            .begin()
            .unwrap()
            .get(&table, "r001", "g", "b")
            .unwrap(),
        Some(b"b1".to_vec())
    );
    client.shutdown();
}

/// A table adopted to lock rows keeps them: adopted values read back, transactions writing
/// different columns of a row conflict, and running `apply` again with cell locks, or
/// enabling the table with them, is refused without change. `disable` forgets the choice.
#[test]
fn a_table_adopted_with_row_locks_keeps_them_until_disabled() {
    let env = Env::start();
    let table = legacy_table(&env, "mig_rows");
    let rows = ApplyOptions {
        lock_granularity: LockGranularity::Row,
        ..quiet()
    };
    migrate::apply(&env.hbase, &env.schema, &table, &rows).unwrap();
    let client = env.client();
    let mut first = client.begin().unwrap();
    assert_eq!(
        first.get(&table, "r001", "g", "b").unwrap(),
        Some(b"b1".to_vec())
    );
    first.set(&table, "r001", "g", "b", "first").unwrap();
    client
        .run(|txn| txn.set(&table, "r001", "f", "a", "second"))
        .unwrap();
    assert!(
        matches!(first.commit(), Err(Error::WriteConflict { .. })),
        "another column of the row was written since"
    );
    let cells = ApplyOptions {
        lock_granularity: LockGranularity::Cell,
        ..quiet()
    };
    let err = migrate::apply(&env.hbase, &env.schema, &table, &cells).unwrap_err();
    assert!(err.to_string().contains("locks by row, not cell"), "{err}");
    assert!(percolator::txn::setup::enable_transactions(&env.hbase, &env.schema, &table).is_err());
    migrate::apply(&env.hbase, &env.schema, &table, &rows)
        .expect_err("nothing to do: already adopted");
    client.shutdown();
    migrate::disable(
        &env.hbase,
        &env.schema,
        &table,
        None,
        &disable_quietly(false),
    )
    .unwrap();
    migrate::apply(&env.hbase, &env.schema, &table, &cells).unwrap();
    let client = env.client();
    assert_eq!(
        client
            .begin()
            .unwrap()
            .get(&table, "r001", "f", "a")
            .unwrap(),
        Some(b"second".to_vec())
    );
    client.shutdown();
}

/// Every cell of the write family with its version, and the marker's state.
fn stored_state(env: &Env, table: &str) -> (Vec<Stored>, String) {
    let scan = Scan::new()
        .family(env.schema.write_family.clone())
        .max_versions(i32::MAX)
        .time_range(TimeRange::new(0, i64::MAX));
    let mut cells = Vec::new();
    for row in env.hbase.scan(table, &scan).unwrap() {
        let row = row.unwrap();
        for c in row.cells {
            cells.push((row.row.clone(), c.qualifier, c.timestamp, c.value));
        }
    }
    (
        cells,
        migrate::status(&env.hbase, &env.schema, table)
            .unwrap()
            .state,
    )
}

#[test]
fn apply_killed_at_every_step_then_rerun_ends_as_an_uninterrupted_run() {
    let env = Env::start();
    let base = now_ms();
    let reference = legacy_table_at(&env, "mig_ref", base);
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let counting = ApplyOptions {
        crash_at: Some(Arc::new(move |_| {
            counter.fetch_add(1, Ordering::SeqCst);
            false
        })),
        ..quiet()
    };
    migrate::apply(&env.hbase, &env.schema, &reference, &counting).unwrap();
    let (want, state) = stored_state(&env, &reference);
    assert_eq!(state, "adopted");
    let steps = calls.load(Ordering::SeqCst);
    assert!(
        steps >= 8,
        "marker, families, checkpoints, passes, adopted: {steps}"
    );
    // The same data at the same timestamps, killed at the k-th step, then run again.
    let stride = if env.is_real() { 3 } else { 1 };
    for k in (1..=steps).step_by(stride) {
        let table = legacy_table_at(&env, "mig_crash", base);
        let fired = Arc::new(AtomicUsize::new(0));
        let f = fired.clone();
        let opts = ApplyOptions {
            crash_at: Some(Arc::new(move |_| f.fetch_add(1, Ordering::SeqCst) + 1 == k)),
            ..quiet()
        };
        let err = migrate::apply(&env.hbase, &env.schema, &table, &opts).unwrap_err();
        assert_issue(&err, MigrationIssue::Interrupted);
        match migrate::apply(&env.hbase, &env.schema, &table, &quiet()) {
            Ok(_) => {}
            // Killed after the marker said adopted: nothing is left to do.
            Err(Error::Migration {
                kind: MigrationIssue::NothingToDo,
                ..
            }) if k == steps => {}
            Err(e) => panic!("rerun after step {k}: {e}"),
        }
        let (got, state) = stored_state(&env, &table);
        assert_eq!(state, "adopted", "after a crash at step {k}");
        assert_eq!(got, want, "write records after a crash at step {k}");
        assert!(
            migrate::verify(&env.hbase, &env.schema, &table, ProgressMode::Off)
                .unwrap()
                .ok()
        );
    }
}

#[test]
fn bad_input_is_refused_without_change() {
    let env = Env::start();
    let s = &env.schema;
    let missing = txn_support::unique("mig_missing");
    assert!(matches!(
        migrate::apply(&env.hbase, s, &missing, &quiet()),
        Err(Error::TableNotFound { .. })
    ));

    let clash = txn_support::unique("mig_clash");
    let desc = TableDescriptor::new(clash.clone())
        .family(FamilyDescriptor::new("f"))
        .family(FamilyDescriptor::new("_pw"));
    env.hbase.admin().create_table(&desc).unwrap();
    env.created(&clash);
    plainly(|| {
        env.hbase
            .put(&clash, &Put::new("r").add("_pw", "q", "user data"))
    });
    let before = env.hbase.admin().table_descriptor(&clash).unwrap();
    let err = migrate::apply(&env.hbase, s, &clash, &quiet()).unwrap_err();
    assert_issue(&err, MigrationIssue::FamilyClash);
    assert_eq!(env.hbase.admin().table_descriptor(&clash).unwrap(), before);
    assert_eq!(
        migrate::status(&env.hbase, s, &clash).unwrap().state,
        "plain"
    );

    let own_ts = txn_support::unique("mig_own_ts");
    env.hbase
        .admin()
        .create_table(&TableDescriptor::new(own_ts.clone()).family(FamilyDescriptor::new("f")))
        .unwrap();
    env.created(&own_ts);
    plainly(|| {
        env.hbase
            .put(&own_ts, &Put::new("r").add_at("f", "q", 1i64 << 55, "v"))
    });
    let before = env.hbase.admin().table_descriptor(&own_ts).unwrap();
    let err = migrate::apply(&env.hbase, s, &own_ts, &quiet()).unwrap_err();
    assert_issue(&err, MigrationIssue::Blocked);
    assert_eq!(env.hbase.admin().table_descriptor(&own_ts).unwrap(), before);
    let plan = migrate::plan(&env.hbase, s, &own_ts, None, ProgressMode::Off).unwrap();
    assert_eq!(plan.blockers.len(), 1);

    let created = env.table("mig_created");
    let err = migrate::apply(&env.hbase, s, &created, &quiet()).unwrap_err();
    assert_issue(&err, MigrationIssue::NothingToDo);

    let done = legacy_table(&env, "mig_done");
    migrate::apply(&env.hbase, s, &done, &quiet()).unwrap();
    let (records, _) = stored_state(&env, &done);
    let err = migrate::apply(&env.hbase, s, &done, &quiet()).unwrap_err();
    assert_issue(&err, MigrationIssue::NothingToDo);
    assert_eq!(stored_state(&env, &done).0, records);

    let client = env.client();
    let err = client
        .begin()
        .unwrap()
        .get(&done, "r001", "nofamily", "q")
        .unwrap_err();
    assert!(matches!(err, Error::FamilyNotFound { .. }), "{err}");
    client.shutdown();

    let unreachable = percolator::HBaseClient::connect(percolator::HBaseConfig::new("127.0.0.1:1"))
        .and_then(|h| migrate::plan(&h, s, "t", None, ProgressMode::Off));
    assert!(unreachable.is_err());
}

/// A migrated legacy table that transactions then wrote (a small and a large value, a delete,
/// a new row), and what plain reads must return once it is disabled.
fn migrated_and_written(env: &Env, prefix: &str) -> (String, Cells) {
    let table = legacy_table(env, prefix);
    migrate::apply(&env.hbase, &env.schema, &table, &quiet()).unwrap();
    let client = env.client();
    client
        .run(|t| {
            t.set(&table, "r001", "g", "b", b"txn".to_vec())?;
            t.set(&table, "r003", "f", "big", vec![b'z'; 4000])?;
            t.delete(&table, "r002", "f", "a")?;
            t.set(&table, "new", "f", "a", b"fresh".to_vec())
        })
        .unwrap();
    client.shutdown();
    let plain = plain_cells(&env.hbase, &table);
    let keys = all_keys(&plain, &plain);
    let mut expected = txn_cells(env, &table, keys.into_iter());
    expected.insert(("new".into(), "f".into(), "a".into()), b"fresh".to_vec());
    assert!(!expected.contains_key(&("r002".into(), "f".into(), "a".into())));
    (table, expected)
}

/// Plain reads of a disabled table, without the cells that had expired under the TTL (lifting
/// it made them visible again until a compaction, as HBase does).
fn plain_after_disable(env: &Env, table: &str) -> Cells {
    let mut plain = plain_cells(&env.hbase, table);
    plain.retain(|(_, f, q), _| !(f == "t" && q == "old"));
    plain
}

fn disable_quietly(force: bool) -> migrate::DisableOptions {
    migrate::DisableOptions {
        force,
        settle: Duration::ZERO,
        progress: ProgressMode::Off,
        crash_at: None,
        ..migrate::DisableOptions::default()
    }
}

#[test]
fn disable_writes_committed_values_back_as_plain_versions() {
    let env = Env::start();
    let (table, expected) = migrated_and_written(&env, "mig_disable");
    // A lock left by a dead client refuses disable; --force resolves it first.
    let crashing = env.client_with(
        percolator::TxnOptions::builder()
            .liveness(env.liveness.clone())
            .lock_ttl(Duration::from_secs(1))
            .crash_injector(Arc::new(|s| {
                s == percolator::txn::Seam::BeforePrimaryCommit
            }))
            .build(),
    );
    let mut txn = crashing.begin().unwrap();
    txn.set(&table, "r004", "g", "b", b"never".to_vec())
        .unwrap();
    txn.set(&table, "r005", "g", "b", b"lost".to_vec()).unwrap();
    assert!(
        txn.commit().is_err(),
        "the client dies before its commit point"
    );
    let locked = percolator::locks::list_locks(&env.hbase, &env.schema, &table).unwrap();
    assert!(!locked.is_empty());
    let err = migrate::disable(
        &env.hbase,
        &env.schema,
        &table,
        None,
        &disable_quietly(false),
    )
    .unwrap_err();
    assert_issue(&err, MigrationIssue::LocksPresent);
    std::thread::sleep(Duration::from_secs(3)); // the dead client's liveness row expires
    let resolver = env.client();
    let report = migrate::disable(
        &env.hbase,
        &env.schema,
        &table,
        Some(&resolver),
        &disable_quietly(true),
    )
    .unwrap();
    resolver.shutdown();
    assert!(
        report.values_rewritten >= 3 && report.deletes_written >= 1,
        "{report:?}"
    );
    assert_eq!(plain_after_disable(&env, &table), expected);
    let desc = env.hbase.admin().table_descriptor(&table).unwrap();
    assert!(desc
        .families
        .iter()
        .all(|f| !env.schema.is_percolator_family(&f.name)));
    assert_eq!(
        desc.families
            .iter()
            .find(|f| f.name == b"f")
            .unwrap()
            .max_versions,
        Some(3)
    );
    assert_eq!(
        migrate::status(&env.hbase, &env.schema, &table)
            .unwrap()
            .state,
        "plain"
    );
    // A plain put afterwards is visible: nothing masks it.
    plainly(|| {
        env.hbase
            .put(&table, &Put::new("r001").add("g", "b", "plain again"))
    });
    let got = env
        .hbase
        .get(&table, &Get::new("r001").column("g", "b"))
        .unwrap();
    assert_eq!(got.value(b"g", b"b"), Some(&b"plain again"[..]));
}

/// Runs the `percolator` binary; (exit code, stdout, stderr).
fn percolator(args: &[&str]) -> (i32, String, String) {
    command_line::run(env!("CARGO_BIN_EXE_percolator"), args)
}

/// `percolator locks --resolve --json` on `table`, its owners looked up in `liveness`.
fn resolve_locks(hb: &str, oracle: &str, liveness: &str, table: &str) -> (i32, String, String) {
    percolator(&[
        "locks",
        "--hbase",
        hb,
        "--oracle",
        oracle,
        "--resolve",
        "--liveness-table",
        liveness,
        "--json",
        table,
    ])
}

fn json(out: &str) -> serde_json::Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

#[test]
fn the_command_line_migrates_and_reads_and_writes_transactionally() {
    let env = Env::start();
    let table = legacy_table(&env, "mig_cli");
    plainly(|| {
        env.hbase
            .put(&table, &Put::new("bin").add("f", "raw", vec![0xff, 0x00]))
    });
    let oracle =
        percolator::OracleServer::start_local(percolator::oracle::MemoryStore::new()).unwrap();
    let (hb, or) = (env.addr.as_str(), oracle.local_addr().to_string());
    let (code, out, _) = percolator(&["migrate", "plan", "--hbase", hb, "--json", &table]);
    assert_eq!(code, 0);
    let plan = json(&out);
    assert_eq!(plan[0]["rows"], 41);
    assert_eq!(
        plan[0]["families_to_add"],
        serde_json::json!(["_pl", "_pw", "_pn", "_pa"])
    );

    let (code, _, err) = percolator(&["migrate", "apply", "--hbase", hb, &table]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = percolator(&["migrate", "apply", "--hbase", hb, &table]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out.trim(),
        format!("{table}: nothing to do (already adopted)"),
        "{err}"
    );
    assert_eq!(
        percolator(&["migrate", "verify", "--hbase", hb, &table]).0,
        0
    );
    let (_, out, _) = percolator(&["migrate", "status", "--hbase", hb, "--json", &table]);
    assert_eq!(json(&out)[0]["state"], "adopted");

    let get = |row: &str, col: &str| {
        json(
            &percolator(&[
                "get", "--hbase", hb, "--oracle", &or, "--json", &table, row, col,
            ])
            .1,
        )
    };
    assert_eq!(get("r001", "g:b"), serde_json::json!({"value": "b1"}));
    assert_eq!(
        get("bin", "f:raw"),
        serde_json::json!({"value": {"hex": "ff00"}})
    );
    assert_eq!(get("r001", "f:none"), serde_json::json!({"value": null}));
    assert_eq!(
        percolator(&["put", "--hbase", hb, "--oracle", &or, &table, "r001", "g:b", "via cli"]).0,
        0
    );
    assert_eq!(get("r001", "g:b"), serde_json::json!({"value": "via cli"}));
    assert_eq!(
        percolator(&["delete", "--hbase", hb, "--oracle", &or, &table, "r001", "g:b"]).0,
        0
    );
    assert_eq!(get("r001", "g:b"), serde_json::json!({"value": null}));
    let (code, out, _) = percolator(&[
        "scan", "--hbase", hb, "--oracle", &or, "--json", &table, "--prefix", "r00", "--limit", "2",
    ]);
    assert_eq!(code, 0);
    let cells = json(&out);
    let rows: std::collections::BTreeSet<_> = cells
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["row"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        rows.into_iter().collect::<Vec<_>>(),
        ["r000", "r001"],
        "{cells}"
    );
    let (code, out, _) = percolator(&["locks", "--hbase", hb, "--json", &table]);
    assert_eq!((code, json(&out)), (0, serde_json::json!([])));

    // A client dies holding a lock: listed with its owner, then resolved through the protocol.
    let crashing = env.client_with(
        percolator::TxnOptions::builder()
            .liveness(env.liveness.clone())
            .crash_injector(Arc::new(|s| {
                s == percolator::txn::Seam::BeforePrimaryCommit
            }))
            .build(),
    );
    let mut txn = crashing.begin().unwrap();
    txn.set(&table, "r010", "g", "b", b"never".to_vec())
        .unwrap();
    assert!(txn.commit().is_err());
    let (code, out, _) = percolator(&["locks", "--hbase", hb, "--json", &table]);
    let locks = json(&out);
    assert_eq!((code, locks.as_array().unwrap().len()), (0, 1), "{locks}");
    assert_eq!(locks[0]["row"], "r010");
    assert_eq!(locks[0]["owner"], crashing.owner_id());
    let (code, out, err) = resolve_locks(hb, &or, &env.liveness.table, &table);
    assert_eq!(code, 0, "{out} {err}");
    assert_eq!(json(&out)[0]["resolved"], true);
    assert_eq!(
        percolator(&["locks", "--hbase", hb, "--json", &table])
            .1
            .trim(),
        "[]"
    );
    assert_eq!(
        get("r010", "g:b"),
        serde_json::json!({"value": "b10"}),
        "rolled back"
    );

    let (code, _, err) = percolator(&[
        "get",
        "--hbase",
        hb,
        "--oracle",
        &or,
        &table,
        "r001",
        "nofamily:q",
    ]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = percolator(&["migrate", "plan", "--hbase", hb, "no_such_table_at_all"]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = percolator(&["migrate", "status", "--hbase", "127.0.0.1:1", &table]);
    assert!(code == 2 && err.lines().count() == 1, "{err}");
}

/// `apply` refuses `disabling` (its marker says so), alone or listed after a plain table, and
/// then changes neither.
fn apply_refuses_a_table_being_disabled(env: &Env, disabling: &str) {
    let s = &env.schema;
    let err = migrate::apply(&env.hbase, s, disabling, &quiet()).unwrap_err();
    assert_issue(&err, MigrationIssue::Blocked);
    let plan = migrate::plan(&env.hbase, s, disabling, None, ProgressMode::Off).unwrap();
    assert_eq!(plan.state, "disabling");
    assert!(plan.blockers[0].contains("disable"), "{:?}", plan.blockers);

    let plain = legacy_table(env, "mig_dis_first");
    let (code, _, err) = percolator(&["migrate", "apply", "--hbase", &env.addr, &plain, disabling]);
    assert_eq!(code, 2);
    assert!(err.contains("migrate disable"), "{err}");
    assert_eq!(
        migrate::status(&env.hbase, s, &plain).unwrap().state,
        "plain"
    );
    assert_eq!(
        migrate::status(&env.hbase, s, disabling).unwrap().state,
        "disabling"
    );
}

/// A run over several tables checks them all before it changes any. The last table listed is
/// disabled in HBase: plain, or left `applying` by an interrupted run (which the check used to
/// skip, so the first table was adopted before the run failed on the last). Either way the run
/// stops with a refusal naming that table, and the first table stays exactly as it was.
#[test]
fn apply_over_several_tables_refuses_a_disabled_last_table_before_touching_the_first() {
    let env = Env::start();
    let s = &env.schema;
    let admin = env.hbase.admin();
    let first = legacy_table(&env, "mig_multi_first");
    let untouched = admin.table_descriptor(&first).unwrap();

    let plain = legacy_table(&env, "mig_multi_disabled");
    admin.disable_table(&plain).unwrap();
    let resumed = legacy_table(&env, "mig_multi_resumed");
    let stop_after_marker = ApplyOptions {
        crash_at: Some(Arc::new(|step| step == Step::Marked)),
        ..quiet()
    };
    let err = migrate::apply(&env.hbase, s, &resumed, &stop_after_marker).unwrap_err();
    assert_issue(&err, MigrationIssue::Interrupted);
    admin.disable_table(&resumed).unwrap();
    let resumed_before = admin.table_descriptor(&resumed).unwrap();

    for last in [&plain, &resumed] {
        let tables = [first.clone(), last.clone()];
        let err = migrate::check_before_apply(&env.hbase, s, &tables, None, ProgressMode::Off)
            .unwrap_err();
        assert!(
            matches!(&err, Error::Migration { table, kind: MigrationIssue::Blocked, reason }
                if table == last && reason.contains("disabled in HBase")),
            "{err}"
        );
        let (code, _, stderr) =
            percolator(&["migrate", "apply", "--hbase", &env.addr, &first, last]);
        assert_eq!(code, 2, "{stderr}");
        assert!(
            stderr.contains(last.as_str()) && stderr.contains("disabled in HBase"),
            "{stderr}"
        );
        assert_eq!(
            migrate::status(&env.hbase, s, &first).unwrap().state,
            "plain"
        );
        assert_eq!(admin.table_descriptor(&first).unwrap(), untouched);
    }

    // Resumed alone, the disabled table is refused before its families change.
    let err = migrate::apply(&env.hbase, s, &resumed, &quiet()).unwrap_err();
    assert_issue(&err, MigrationIssue::Blocked);
    assert_eq!(admin.table_descriptor(&resumed).unwrap(), resumed_before);
    assert_eq!(
        migrate::status(&env.hbase, s, &resumed).unwrap().state,
        "applying"
    );

    // Enabled again, both runs go through.
    admin.enable_table(&plain).unwrap();
    admin.enable_table(&resumed).unwrap();
    // In the granularity `resumed` was begun with.
    let granularity = txn_support::granularity_from_env().to_string();
    let (code, _, stderr) = percolator(&[
        "migrate",
        "apply",
        "--hbase",
        &env.addr,
        "--lock-granularity",
        &granularity,
        &first,
        &plain,
        &resumed,
    ]);
    assert_eq!(code, 0, "{stderr}");
    for t in [&first, &plain, &resumed] {
        assert_eq!(migrate::status(&env.hbase, s, t).unwrap().state, "adopted");
    }
}

#[test]
fn disable_killed_at_every_step_then_rerun_ends_as_an_uninterrupted_run() {
    let env = Env::start();
    let (reference, expected) = migrated_and_written(&env, "mig_dis_ref");
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let counting = migrate::DisableOptions {
        crash_at: Some(Arc::new(move |_| {
            counter.fetch_add(1, Ordering::SeqCst);
            false
        })),
        ..disable_quietly(false)
    };
    migrate::disable(&env.hbase, &env.schema, &reference, None, &counting).unwrap();
    assert_eq!(plain_after_disable(&env, &reference), expected);
    let steps = calls.load(Ordering::SeqCst);
    assert!(steps >= 4, "disabling, rows, families dropped: {steps}");
    for k in 1..=steps {
        let (table, expected) = migrated_and_written(&env, "mig_dis_crash");
        let fired = Arc::new(AtomicUsize::new(0));
        let f = fired.clone();
        let opts = migrate::DisableOptions {
            crash_at: Some(Arc::new(move |_| f.fetch_add(1, Ordering::SeqCst) + 1 == k)),
            ..disable_quietly(false)
        };
        let err = migrate::disable(&env.hbase, &env.schema, &table, None, &opts).unwrap_err();
        assert_issue(&err, MigrationIssue::Interrupted);
        if k == 1 {
            apply_refuses_a_table_being_disabled(&env, &table);
        }
        let client = env.client();
        let refused = client.begin().unwrap().get(&table, "r001", "g", "b");
        assert!(
            matches!(
                refused,
                Err(Error::NotTransactional { .. }) | Err(Error::FamilyNotFound { .. })
            ),
            "transactions stay off a table being disabled (step {k}): {refused:?}"
        );
        drop(client);
        migrate::disable(
            &env.hbase,
            &env.schema,
            &table,
            None,
            &disable_quietly(false),
        )
        .unwrap();
        assert_eq!(
            plain_after_disable(&env, &table),
            expected,
            "after a crash at step {k}"
        );
        assert_eq!(
            migrate::status(&env.hbase, &env.schema, &table)
                .unwrap()
                .state,
            "plain"
        );
    }
}

/// `locks --resolve` looks a lock's owner up in the liveness table the writers use
/// (`--liveness-table`): a commit paused between its prewrites, its client alive, keeps its
/// lock (exit 1) and then commits. Looked up in another table, the owner would seem dead and
/// its live transaction be rolled back.
///
/// The writer's liveness row and lock outlast any region move or server crash the test may
/// meet (a long TTL in a table of its own), so only a wrong lookup can make it look dead.
#[test]
fn locks_resolve_keeps_the_lock_of_an_owner_alive_in_the_named_liveness_table() {
    use txn_support::faulty::{CasKind, Fault, FaultyStore, Gate};
    let env = Env::start();
    let table = env.table("locks_live_owner");
    let liveness = percolator::txn::LivenessConfig {
        table: format!("{table}_liveness"),
        ttl_secs: 60,
        ..env.liveness.clone()
    };
    percolator::txn::setup::create_liveness_table(&env.hbase, &liveness).unwrap();
    env.created(&liveness.table);
    let oracle =
        percolator::OracleServer::start_local(percolator::oracle::MemoryStore::new()).unwrap();
    let (hb, or) = (env.addr.as_str(), oracle.local_addr().to_string());
    let store = FaultyStore::new(env.hbase.clone(), env.schema.clone());
    let gate = Gate::new();
    store.inject(CasKind::Prewrite, "s", Fault::Hold(gate.clone()), 1);
    let options = env
        .options()
        .to_builder()
        .liveness(liveness.clone())
        .lock_ttl(Duration::from_secs(60))
        .build();
    let writer = env.client_on(store, env.tso.clone(), options);
    let committed = std::thread::scope(|scope| {
        let _release = gate.opens_on_drop();
        let committing = scope.spawn(|| {
            writer.run(|t| {
                t.set(&table, "p", "f", "q", "1")?;
                t.set(&table, "s", "f", "q", "1")
            })
        });
        assert!(
            gate.wait_reached(Duration::from_secs(10)),
            "the prewrite of s never went out"
        );
        let (code, out, err) = resolve_locks(hb, &or, &liveness.table, &table);
        assert_eq!(code, 1, "the live owner's lock is kept: {out} {err}");
        let locks = json(&out);
        assert_eq!(locks.as_array().unwrap().len(), 1, "{locks}");
        assert_eq!(
            (&locks[0]["row"], &locks[0]["resolved"]),
            (&"p".into(), &false.into())
        );
        gate.open();
        committing.join().unwrap()
    });
    committed.expect("the paused commit goes through");
    let txn = writer.begin().unwrap();
    assert_eq!(
        txn.get(&table, "s", "f", "q").unwrap().as_deref(),
        Some(&b"1"[..])
    );
    writer.shutdown();
}
