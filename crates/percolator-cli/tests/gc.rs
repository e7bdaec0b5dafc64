//! Garbage collection below the safe point (docs/gc.md), scripted against the emulator, or a
//! real HBase with `HBASE_THRIFT=host:port`. Each test has a meta table and a liveness table
//! of its own, so one test's safe point never reaches another's transactions and one test's
//! open transactions never hold another's GC back; only a lock pass over every table reaches
//! across, and those take turns with the tests that count locks. GC's life time cannot go below
//! 5 s and a round waits 6 s for clients to see a new safe point, so these take seconds.

#[path = "../../../tests/txn_support/mod.rs"]
mod txn_support;

use std::future::Future;
use std::time::Duration;

use percolator::format::WriteKind;
use percolator::gc::{GcOptions, GcReport, GcWorker};
use percolator::txn::{setup, CellKey, Client, LivenessConfig, TxnOptions};
use percolator::{Error, RetryClass};
use txn_support::faulty::FaultyStore;
use txn_support::{unique, Env};

const LIFE: Duration = Duration::from_secs(5);

/// A round left to find its own lock tables covers every transactional table in HBase, and on
/// a shared real HBase that includes the other tests' tables: it would decide a lock another
/// test is about to count. Such rounds and the tests that count their locks take turns.
static EVERY_TABLE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn every_table_turn() -> std::sync::MutexGuard<'static, ()> {
    EVERY_TABLE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn block<F: Future>(f: F) -> F::Output {
    tokio::runtime::Runtime::new().unwrap().block_on(f)
}

/// Transaction options whose meta table (and so safe point) and liveness table (and so
/// published transactions) belong to this test alone.
fn options(env: &Env) -> TxnOptions {
    options_with_liveness_ttl(env, env.liveness.ttl_secs)
}

/// [`options`] whose clients stay alive `ttl_secs` without a refresh: longer than a region
/// server's recovery, for a test whose live client must not look dead under the nemesis.
fn options_with_liveness_ttl(env: &Env, ttl_secs: i32) -> TxnOptions {
    let mut schema = env.schema.clone();
    schema.meta_table = unique("gc_meta");
    setup::create_meta_table(&env.hbase, &schema).unwrap();
    env.created(&schema.meta_table);
    let liveness = LivenessConfig {
        table: unique("gc_liveness"),
        ttl_secs,
        ..env.liveness.clone()
    };
    setup::create_liveness_table(&env.hbase, &liveness).unwrap();
    env.created(&liveness.table);
    env.options()
        .to_builder()
        .schema(schema)
        .liveness(liveness)
        .build()
}

/// A table of the fixture's granularity, recorded in the meta table of `opts`.
fn table(env: &Env, opts: &TxnOptions, prefix: &str) -> String {
    env.table_in(opts.schema(), prefix, env.granularity)
}

/// A fixture, options of this test's own, a table, a client and the cell `r` of the table.
fn setup(prefix: &str) -> (Env, TxnOptions, String, Client, CellKey) {
    let env = Env::start();
    let opts = options(&env);
    let table = table(&env, &opts, prefix);
    let client = env.client_with(opts.clone());
    let key = env.key(&table, "r");
    (env, opts, table, client, key)
}

fn worker(env: &Env, opts: &TxnOptions, tables: &[&str]) -> GcWorker {
    worker_with(env, opts, tables, GcOptions::default())
}

fn worker_with(env: &Env, opts: &TxnOptions, tables: &[&str], gc: GcOptions) -> GcWorker {
    let gc = gc
        .with_life_time(LIFE)
        .unwrap()
        .resolving_locks_in(tables.iter().map(|t| t.to_string()).collect());
    let client = env.client_with(opts.clone()).asynchronous();
    GcWorker::new(client, env.hbase.clone(), gc)
}

fn run(gc: &GcWorker, tables: &[&str]) -> percolator::Result<GcReport> {
    let tables: Vec<String> = tables.iter().map(|t| t.to_string()).collect();
    block(gc.run_once(&tables, &|_| {}))
}

/// `rounds` transactions, each writing `v<round>` to every one of `keys`: the versions a GC
/// round then finds to collect.
fn commit_rounds(client: &Client, keys: &[CellKey], rounds: usize) {
    for round in 0..rounds {
        client
            .run(|t| {
                for k in keys {
                    t.set(
                        &k.table,
                        &k.row,
                        &k.family,
                        &k.qualifier,
                        format!("v{round}"),
                    )?;
                }
                Ok(())
            })
            .unwrap();
    }
}

fn put(client: &Client, key: &CellKey, value: &str) {
    client
        .run(|t| t.set(&key.table, &key.row, &key.family, &key.qualifier, value))
        .unwrap();
}

fn get(client: &Client, key: &CellKey) -> Option<Vec<u8>> {
    let txn = client.begin().unwrap();
    txn.get(&key.table, &key.row, &key.family, &key.qualifier)
        .unwrap()
}

/// Waits until `client` no longer publishes a transaction at or below `ts`: its next
/// liveness refresh after the transaction ended, which a region in transition may delay.
fn until_unpublished(env: &Env, opts: &TxnOptions, client: &Client, ts: u64) {
    until_publication(env, opts, client, ts, false)
}

/// Waits until `client` publishes a transaction at or below `ts` (`published`), or no longer
/// does, as a round reading its liveness row would find.
fn until_publication(env: &Env, opts: &TxnOptions, client: &Client, ts: u64, published: bool) {
    let family = opts.liveness().publication_family().name;
    let get = percolator::hbase::Get::new(client.owner_id().as_bytes().to_vec()).family(family);
    let until = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        // A read that met a region in transition tells nothing: asked again.
        let row = env.hbase.get(&opts.liveness().table, &get);
        let holds = row.ok().map(|row| {
            row.cells.iter().any(|c| {
                <[u8; 8]>::try_from(c.value.as_slice()).is_ok_and(|v| u64::from_be_bytes(v) <= ts)
            })
        });
        if holds == Some(published) {
            return;
        }
        assert!(
            std::time::Instant::now() < until,
            "{ts} still {} a minute on",
            if published {
                "unpublished"
            } else {
                "published"
            }
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Write records at or below `safe_point`, and above it.
fn split_writes(env: &Env, key: &CellKey, safe_point: u64) -> (usize, usize) {
    let writes = env.writes(key);
    let below = writes
        .iter()
        .filter(|(v, _)| *v as u64 <= safe_point)
        .count();
    (below, writes.len() - below)
}

#[test]
fn gc_keeps_the_newest_version_at_or_below_the_safe_point_and_everything_above() {
    let (env, opts, table, client, key) = setup("gc_keep");
    for v in ["v1", "v2", "v3", "v4"] {
        put(&client, &key, v);
    }
    std::thread::sleep(LIFE + Duration::from_millis(500));
    // An open transaction holds the safe point at or below its start, so that v5, committed
    // after it, stays above however long the calls below wait for a region in transition.
    let pin = client.begin().unwrap();
    let after = pin.start_ts().unwrap();
    until_publication(&env, &opts, &client, after, true);
    put(&client, &key, "v5");
    let gc = worker(&env, &opts, &[&table]);
    let report = run(&gc, &[&table]).unwrap();
    assert!(report.safe_point <= after, "{report:?}");
    let (below, above) = split_writes(&env, &key, report.safe_point);
    assert_eq!(
        below, 1,
        "one record at or below the safe point stays: {report:?}"
    );
    assert_eq!(above, 1, "v5 was committed after the safe point");
    let kept = env.writes(&key);
    assert!(kept.iter().all(|(_, r)| r.kind == WriteKind::Put));
    assert_eq!(
        env.data_versions(&key).len(),
        2,
        "data of the two kept records only"
    );
    assert_eq!(report.tables[0].write_records_removed, 3);
    assert_eq!(report.tables[0].data_versions_removed, 3);
    assert_eq!(get(&client, &key), Some(b"v5".to_vec()));
    // A snapshot at the safe point still reads the value it had then.
    let at = client.snapshot(report.safe_point).unwrap();
    assert_eq!(at.get(&table, "r", "f", "q").unwrap(), Some(b"v4".to_vec()));
    pin.rollback();
    // A second round (its safe point higher still) leaves one version at or below it again.
    let again = run(&gc, &[&table]).unwrap();
    assert_eq!(split_writes(&env, &key, again.safe_point).0, 1, "{again:?}");
    assert_eq!(get(&client, &key), Some(b"v5".to_vec()));
    block(gc.shutdown());
}

/// docs/design.md invariant 13: GC waits until every client's cached safe point is younger
/// than the one it stored before it deletes, and readers check after reading. A reader whose
/// client had just cached the old safe point, reading right after GC deleted the version it
/// needs, must fail; it must never answer from what is left.
#[test]
fn a_reader_below_the_safe_point_fails_with_snapshot_too_old_never_a_wrong_answer() {
    let (env, opts, table, writer, key) = setup("gc_old");
    put(&writer, &key, "old");
    let old_snapshot = env.ts();
    put(&writer, &key, "new");
    std::thread::sleep(LIFE + Duration::from_millis(500));
    let reader = env.client_with(opts.clone());
    // The reader's client caches the safe point as it is before GC moves it.
    assert_eq!(
        reader
            .snapshot(old_snapshot)
            .unwrap()
            .get(&table, "r", "f", "q")
            .unwrap(),
        Some(b"old".to_vec())
    );
    // The snapshot ended; GC may pass it once the reader's next refresh says so.
    until_unpublished(&env, &opts, &reader, old_snapshot);
    let gc = worker(&env, &opts, &[&table]);
    let report = run(&gc, &[&table]).unwrap();
    assert!(report.safe_point > old_snapshot);
    assert_eq!(
        report.removed(),
        2,
        "the old record and its data: {report:?}"
    );
    let snap = reader.snapshot(old_snapshot).unwrap();
    match snap.get(&table, "r", "f", "q") {
        Err(e @ Error::SnapshotTooOld { .. }) => {
            assert_eq!(e.retry_class(), RetryClass::Retry);
            assert!(matches!(e, Error::SnapshotTooOld { start_ts, safe_point }
                if start_ts == old_snapshot && safe_point == report.safe_point));
        }
        other => panic!("a read below the safe point must fail, got {other:?}"),
    }
    // Scans below the safe point fail alike; a new transaction reads on.
    assert!(matches!(
        snap.scan(&table, "", "", 10),
        Err(Error::SnapshotTooOld { .. })
    ));
    assert_eq!(get(&reader, &key), Some(b"new".to_vec()));
    block(gc.shutdown());
}

#[test]
fn a_long_running_transaction_holds_the_safe_point_back() {
    let (env, opts, table, client, key) = setup("gc_long");
    put(&client, &key, "first");
    let long = env.client_with(opts.clone());
    let mut txn = long.begin().unwrap();
    assert_eq!(
        txn.get(&table, "r", "f", "q").unwrap(),
        Some(b"first".to_vec())
    );
    let start_ts = txn.start_ts().unwrap();
    // Published before a round may look: a refresh can wait out a region in transition.
    until_publication(&env, &opts, &long, start_ts, true);
    for v in ["a", "b", "c"] {
        put(&client, &key, v);
    }
    std::thread::sleep(LIFE + Duration::from_secs(1));
    let gc = worker(&env, &opts, &[&table]);
    let report = run(&gc, &[&table]).unwrap();
    assert!(
        report.safe_point <= start_ts,
        "safe point {} passed the open transaction at {start_ts}",
        report.safe_point
    );
    assert_eq!(report.removed(), 0, "{report:?}");
    // Older than the life time, the transaction still reads and commits.
    assert_eq!(
        txn.get(&table, "r", "f", "q").unwrap(),
        Some(b"first".to_vec())
    );
    txn.set(&table, "other", "f", "q", "x").unwrap();
    txn.commit().unwrap();
    // Ended, it no longer holds GC back (published at the next liveness refresh).
    until_unpublished(&env, &opts, &long, start_ts);
    let report = run(&gc, &[&table]).unwrap();
    assert!(report.safe_point > start_ts);
    assert_eq!(split_writes(&env, &key, report.safe_point).0, 1);
    block(gc.shutdown());
}

/// The long transaction's client keeps running while its liveness table's region is away
/// longer than the liveness TTL (a region server recovering): its refreshes fail, its liveness
/// lapses, and GC must still not pass its transaction. It fails if the publication lapses with
/// the liveness.
#[test]
fn a_long_transaction_stays_published_while_its_liveness_refreshes_fail() {
    let (env, opts, table, client, key) = setup("gc_lapse");
    put(&client, &key, "first");
    let store = FaultyStore::new(env.hbase.clone(), opts.schema().clone());
    let long = env.client_on(store.clone(), env.tso.clone(), opts.clone());
    let mut txn = long.begin().unwrap();
    assert_eq!(
        txn.get(&table, "r", "f", "q").unwrap(),
        Some(b"first".to_vec())
    );
    let start_ts = txn.start_ts().unwrap();
    // One refresh publishes the transaction, then the region goes away.
    std::thread::sleep(opts.liveness().refresh_interval() * 2);
    store.move_puts_to(&opts.liveness().table, usize::MAX);
    for v in ["a", "b", "c"] {
        put(&client, &key, v);
    }
    std::thread::sleep(LIFE + Duration::from_secs(1));
    let liveness = opts.liveness();
    let alive = percolator::hbase::Get::new(long.owner_id().as_bytes().to_vec())
        .column(liveness.liveness_family(), liveness.liveness_qualifier());
    assert!(
        env.hbase.get(&liveness.table, &alive).unwrap().is_empty(),
        "the long client's liveness should have lapsed by now"
    );
    let gc = worker(&env, &opts, &[&table]);
    let report = run(&gc, &[&table]).unwrap();
    assert!(
        report.safe_point <= start_ts,
        "safe point {} passed the open transaction at {start_ts} of a live client",
        report.safe_point
    );
    assert_eq!(report.removed(), 0, "{report:?}");

    store.puts_settle();
    assert_eq!(
        txn.get(&table, "r", "f", "q").unwrap(),
        Some(b"first".to_vec())
    );
    txn.set(&table, "other", "f", "q", "x").unwrap();
    txn.commit().unwrap();
    block(gc.shutdown());
    long.shutdown();
}

#[test]
fn a_crash_mid_gc_leaves_every_read_right_and_a_rerun_finishes() {
    let env = Env::start();
    let opts = options(&env);
    let table = table(&env, &opts, "gc_crash");
    let client = env.client_with(opts.clone());
    let keys: Vec<CellKey> = (0..12)
        .map(|i| env.key(&table, &format!("r{i:02}")))
        .collect();
    commit_rounds(&client, &keys, 4);
    std::thread::sleep(LIFE + Duration::from_millis(500));
    let crashing = worker_with(
        &env,
        &opts,
        &[&table],
        GcOptions::default().with_page_rows(3).crash_after_pages(2),
    );
    match run(&crashing, &[&table]) {
        Err(Error::ClientCrashed { seam, .. }) => assert_eq!(seam, "gc between pages"),
        other => panic!("the hook must crash the round, got {other:?}"),
    }
    block(crashing.shutdown());
    // Half collected: every value still reads right.
    let half: usize = keys.iter().map(|k| env.writes(k).len()).sum();
    assert!(half > keys.len() && half < 4 * keys.len(), "{half} records");
    for k in &keys {
        assert_eq!(get(&client, k), Some(b"v3".to_vec()));
    }
    let gc = worker(&env, &opts, &[&table]);
    let report = run(&gc, &[&table]).unwrap();
    for k in &keys {
        assert_eq!(env.writes(k).len(), 1, "{k}: {report:?}");
        assert_eq!(env.data_versions(k).len(), 1);
        assert_eq!(get(&client, k), Some(b"v3".to_vec()));
    }
    block(gc.shutdown());
}

#[test]
fn locks_below_the_safe_point_are_decided_before_anything_is_collected() {
    let _turn = every_table_turn();
    let env = Env::start();
    let opts = options(&env);
    let (t1, t2) = (
        table(&env, &opts, "gc_lock_a"),
        table(&env, &opts, "gc_lock_b"),
    );
    let client = env.client_with(opts.clone());
    let (primary, secondary) = (env.key(&t1, "p"), env.key(&t2, "s"));
    put(&client, &primary, "p0");
    put(&client, &secondary, "s0");
    // A client dies right after its commit point: the secondary stays locked.
    let dying = env.client_with(
        opts.to_builder()
            .crash_injector(std::sync::Arc::new(|seam| {
                seam == percolator::txn::Seam::AfterPrimaryCommit
            }))
            .build(),
    );
    let mut txn = dying.begin().unwrap();
    let dead_start = txn.start_ts().unwrap();
    txn.set(&t1, "p", "f", "q", "p1").unwrap();
    txn.set(&t2, "s", "f", "q", "s1").unwrap();
    assert!(matches!(txn.commit(), Err(Error::ClientCrashed { .. })));
    // The primary is then overwritten, so its record of the dead transaction is garbage.
    put(&client, &primary, "p2");
    std::thread::sleep(LIFE + Duration::from_millis(500));
    let gc = worker(&env, &opts, &[&t1, &t2]);
    let report = run(&gc, &[&t1]).unwrap();
    assert_eq!(report.locks_resolved, 1, "{report:?}");
    env.assert_no_locks(&t2);
    assert_eq!(get(&client, &secondary), Some(b"s1".to_vec()));
    assert_eq!(get(&client, &primary), Some(b"p2".to_vec()));
    // Its commit record is gone: asked about it, a client says it cannot tell.
    assert!(matches!(
        client.transaction_status(&primary, dead_start),
        Err(Error::SnapshotTooOld { .. })
    ));
    block(gc.shutdown());
}

#[test]
fn background_gc_is_drained_on_shutdown_and_a_short_life_time_is_refused() {
    let env = Env::start();
    let opts = options(&env);
    let table = table(&env, &opts, "gc_bg");
    assert!(matches!(
        GcOptions::default().with_life_time(Duration::from_secs(1)),
        Err(Error::IllegalArgument { .. })
    ));
    let client = env.client_with(opts.clone());
    let key = env.key(&table, "r");
    for v in ["a", "b", "c"] {
        put(&client, &key, v);
    }
    std::thread::sleep(LIFE + Duration::from_millis(500));
    let rt = tokio::runtime::Runtime::new().unwrap();
    let gc = worker(&env, &opts, &[&table]);
    let handle = rt.block_on(async { gc.spawn(vec![table.clone()], Duration::from_millis(200)) });
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while handle.last_report().is_none() {
        assert!(std::time::Instant::now() < deadline, "no round finished");
        std::thread::sleep(Duration::from_millis(100));
    }
    let last = rt.block_on(handle.shutdown()).expect("a finished round");
    assert_eq!(split_writes(&env, &key, last.safe_point).0, 1);
    assert_eq!(get(&client, &key), Some(b"c".to_vec()));
}

#[test]
fn percolator_gc_reports_a_round_as_json_and_refuses_bad_input_with_a_non_zero_exit() {
    let _turn = every_table_turn();
    let (env, opts, table, client, key) = setup("gc_cli");
    for v in ["a", "b", "c"] {
        put(&client, &key, v);
    }
    std::thread::sleep(LIFE + Duration::from_millis(500));
    let oracle = percolator::OracleServer::start_local(percolator::oracle::MemoryStore::new())
        .expect("oracle");
    let gc = |extra: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_percolator"))
            .args(["gc", "--hbase", &env.addr])
            .args(["--oracle", &oracle.local_addr().to_string()])
            .args(["--meta-table", &opts.schema().meta_table])
            .args(["--liveness-table", &opts.liveness().table])
            .args(extra)
            .output()
            .expect("run percolator gc")
    };
    let out = gc(&["--life-time", "5s", "--once", "--json", &table]);
    assert!(out.status.success(), "{out:?}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON report");
    assert!(report["safe_point"].as_u64().unwrap() > 0, "{report}");
    assert_eq!(report["tables"][0]["write_records_removed"], 2, "{report}");
    assert_eq!(report["tables"][0]["cells"], 1, "{report}");
    assert_eq!(get(&client, &key), Some(b"c".to_vec()));
    // Warnings may come (a region moved under a cluster's nemesis); progress lines may not.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains(&format!("gc {table}")),
        "no progress with --json: {stderr}"
    );
    // Without --json, a line per round and one per table; stderr is no terminal here, so the
    // progress of each table comes as plain lines (the last one when it is done).
    let text = gc(&["--life-time", "5s", "--once", &table]);
    assert!(text.status.success(), "{text:?}");
    let progress = String::from_utf8_lossy(&text.stderr).into_owned();
    assert!(
        progress.contains(&format!("gc {table}: 1 rows")) && progress.contains("(done)"),
        "{progress}"
    );
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    assert!(
        text.starts_with("safe point ") && text.contains("1 cells scanned"),
        "{text}"
    );
    assert!(text.contains(&format!("  {table}: 1 rows")), "{text}");

    let short = gc(&["--life-time", "1s", "--once", &table]);
    assert!(!short.status.success());
    assert!(String::from_utf8_lossy(&short.stderr).contains("below the minimum"));
    let missing = gc(&["--once", "no_such_table_for_gc"]);
    assert!(!missing.status.success(), "{missing:?}");
    assert!(!String::from_utf8_lossy(&missing.stderr).is_empty());
    for workers in ["0", "257", "many"] {
        let refused = gc(&["--workers", workers, "--once", &table]);
        assert!(
            !refused.status.success(),
            "--workers {workers}: {refused:?}"
        );
        assert!(
            String::from_utf8_lossy(&refused.stderr).contains("--workers"),
            "the error names the flag: {refused:?}"
        );
    }
}

#[test]
fn two_gc_processes_at_once_leave_one_version_below_the_safe_point_and_reads_right() {
    let (env, opts, table, client, key) = setup("gc_twice");
    let keys: Vec<CellKey> = (0..8).map(|i| env.key(&table, &format!("r{i}"))).collect();
    let all: Vec<CellKey> = keys.iter().chain([&key]).cloned().collect();
    commit_rounds(&client, &all, 3);
    std::thread::sleep(LIFE + Duration::from_millis(500));
    let paged = GcOptions::default().with_page_rows(2);
    let (a, b) = (
        worker_with(&env, &opts, &[&table], paged.clone()),
        worker_with(&env, &opts, &[&table], paged),
    );
    let tables = vec![table.clone()];
    let (ra, rb) =
        block(async { tokio::join!(a.run_once(&tables, &|_| {}), b.run_once(&tables, &|_| {})) });
    let (ra, rb) = (ra.unwrap(), rb.unwrap());
    // Between them every old version went once; a delete repeated by both is harmless.
    assert!(
        ra.removed() + rb.removed() >= 9 * 4,
        "each of the 9 cells loses 2 records and 2 data versions: {ra:?} {rb:?}"
    );
    let safe_point = ra.safe_point.max(rb.safe_point);
    for k in keys.iter().chain([&key]) {
        assert_eq!(split_writes(&env, k, safe_point), (1, 0), "{k}");
        assert_eq!(env.data_versions(k).len(), 1, "{k}");
        assert_eq!(get(&client, k), Some(b"v2".to_vec()));
    }
    block(a.shutdown());
    block(b.shutdown());
}

#[test]
fn a_table_of_several_regions_is_collected_region_by_region_as_a_whole_pass_would() {
    let env = Env::start();
    let opts = options(&env);
    let table = unique("gc_regions");
    let splits: Vec<Vec<u8>> = ["r2", "r4", "r6"]
        .iter()
        .map(|k| k.as_bytes().to_vec())
        .collect();
    let desc = opts.schema().table(&table, &["f"]);
    setup::create_split(&env.hbase, opts.schema(), &desc, env.granularity, &splits).unwrap();
    env.created(&table);
    let client = env.client_with(opts.clone());
    let keys: Vec<CellKey> = (0..8).map(|i| env.key(&table, &format!("r{i}"))).collect();
    commit_rounds(&client, &keys, 3);
    std::thread::sleep(LIFE + Duration::from_millis(500));
    // Two rows a page: every region takes pages of its own, four of them at once.
    let gc_options = GcOptions::default()
        .with_page_rows(2)
        .with_workers(4)
        .unwrap();
    let gc = worker_with(&env, &opts, &[&table], gc_options);
    let report = run(&gc, &[&table]).unwrap();
    let collected = &report.tables[0];
    assert_eq!(collected.ranges, 4, "one range per region: {collected:?}");
    assert_eq!(collected.rows, 8, "every row once: {collected:?}");
    assert_eq!(
        (
            collected.write_records_removed,
            collected.data_versions_removed
        ),
        (16, 16),
        "each cell loses its two older records and data versions: {collected:?}"
    );
    for k in &keys {
        assert_eq!(split_writes(&env, k, report.safe_point), (1, 0), "{k}");
        assert_eq!(env.data_versions(k).len(), 1, "{k}");
        assert_eq!(get(&client, k), Some(b"v2".to_vec()));
    }
    block(gc.shutdown());
    for workers in [0, percolator::gc::MAX_WORKERS + 1] {
        assert!(
            GcOptions::default().with_workers(workers).is_err(),
            "{workers} workers refused"
        );
    }
}

/// A raw prewrite of `key` for a transaction at `start_ts` with `primary`, owned by `owner`,
/// its wall time now and a long TTL (the parts of a commit a test needs to leave behind).
fn prewrite(env: &Env, key: &CellKey, start_ts: u64, primary: &CellKey, owner: &str) {
    use percolator::format::{Lock, MutationKind};
    let lock = Lock {
        start_ts,
        kind: MutationKind::Put,
        primary: primary.clone(),
        owner: owner.to_string(),
        wall_ms: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64,
        ttl_ms: 60_000,
        short_value: Some(b"x".to_vec()),
        row: None,
        primary_row: false,
    };
    // As the fixture's tables store it: a row lock when they lock rows.
    let lock = env.as_stored(key, lock);
    let cam = env.prewrite_cas(key, &lock, Some(b"x"), false);
    assert!(
        env.hbase.check_and_mutate(&key.table, &cam).unwrap(),
        "{key} prewrite"
    );
}

/// The live client's liveness row outlasts any region move or server crash the round may
/// meet (a long TTL), so that its lock is one GC must wait for.
#[test]
fn gc_never_rolls_back_a_live_transaction_above_the_safe_point() {
    let _turn = every_table_turn();
    let env = Env::start();
    let opts = options_with_liveness_ttl(&env, 60);
    let table = table(&env, &opts, "gc_live");
    let client = env.client_with(opts.clone());
    let (p, s) = (env.key(&table, "p"), env.key(&table, "s"));
    put(&client, &p, "p0");
    put(&client, &s, "s0");
    // An old transaction left a secondary lock; its primary prewrite never landed.
    prewrite(&env, &s, env.ts(), &p, "a-client-long-gone");
    std::thread::sleep(LIFE + Duration::from_millis(500));
    // A live transaction above the safe point holds that primary.
    let live = env.client_with(opts.clone());
    prewrite(&env, &p, env.ts(), &p, live.owner_id());
    let held = env.raw_lock(&p);
    let gc = worker(&env, &opts, &[&table]);
    match run(&gc, &[&table]) {
        Err(Error::KeyLocked { .. }) => {}
        other => panic!("the round must wait for the live transaction, got {other:?}"),
    }
    assert_eq!(
        env.raw_lock(&p),
        held,
        "the live transaction's lock is untouched"
    );
    block(gc.shutdown());
    live.shutdown();
}

/// A round's lock pass covers every transactional table; one that is disabled (under
/// maintenance, or being dropped) can hold no lock a reader could meet, and must not fail the
/// round for the tables that are in service.
#[test]
fn a_disabled_transactional_table_elsewhere_does_not_fail_a_round() {
    let _turn = every_table_turn();
    let (env, opts, in_service, client, key) = setup("gc_in_service");
    put(&client, &key, "a");
    let idle = table(&env, &opts, "gc_disabled");
    env.hbase.admin().disable_table(&idle).unwrap();
    let every_table = GcOptions::default().with_life_time(LIFE).unwrap();
    let gc = GcWorker::new(
        env.client_with(opts.clone()).asynchronous(),
        env.hbase.clone(),
        every_table,
    );
    let report = run(&gc, &[&in_service]).expect("the round skips the disabled table");
    assert_eq!(report.tables.len(), 1);
    assert_eq!(get(&client, &key), Some(b"a".to_vec()));
}
