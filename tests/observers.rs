//! Observers (docs/observers.md): every committed change of an observed column is followed by
//! a committed observer run, at most one run commits per acknowledged change, and a worker
//! that dies at any seam loses nothing. The observer under test counts its committed runs in
//! the same transaction (`f:runs`), so a second commit for one change shows in the count.
//! Emulator by default; a real HBase with `HBASE_THRIFT`.

mod txn_support;

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use percolator::observer::{
    pending_notifications, CommittedRun, ObservedColumn, Observer, ObserverSet, ObserverWorker,
    WorkerConfig, WorkerSeam,
};
use percolator::txn::{CrashInjector, Seam};
use percolator::{AsyncTransaction, Client, Result};
use txn_support::faulty::{CasKind, Fault, FaultyStore, Gate};
use txn_support::{Env, FAMILY};

/// What `Observer::committed` reported: the row and the run.
type Reported = Arc<Mutex<Vec<(Vec<u8>, CommittedRun)>>>;

/// Copies `f:q` to `f:copy` and counts its committed runs in `f:runs`; fails its first
/// `failures` runs, then returns the errors of `errors` (last first) from its next runs;
/// keeps what `committed` reported.
struct CopyCounter {
    to: &'static str,
    failures: AtomicU32,
    errors: Mutex<Vec<percolator::Error>>,
    committed: Reported,
}

impl CopyCounter {
    fn new(to: &'static str) -> CopyCounter {
        CopyCounter::failing(to, 0)
    }

    fn failing(to: &'static str, failures: u32) -> CopyCounter {
        CopyCounter {
            to,
            failures: AtomicU32::new(failures),
            errors: Mutex::default(),
            committed: Arc::default(),
        }
    }

    fn failing_with(to: &'static str, errors: Vec<percolator::Error>) -> CopyCounter {
        CopyCounter {
            errors: Mutex::new(errors),
            ..CopyCounter::new(to)
        }
    }
}

#[percolator::observer::async_trait]
impl Observer for CopyCounter {
    async fn process(
        &self,
        txn: &mut AsyncTransaction,
        row: &[u8],
        col: &ObservedColumn,
    ) -> Result<()> {
        if self
            .failures
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
        {
            return Err(percolator::Error::IllegalArgument {
                message: "observer failure injected by the test".into(),
            });
        }
        if let Some(e) = self.errors.lock().unwrap().pop() {
            return Err(e);
        }
        let value = txn
            .get(&col.table, row, &col.family, &col.qualifier)
            .await?;
        match value {
            Some(v) => txn.set(&col.table, row, FAMILY, self.to, v)?,
            None => txn.delete(&col.table, row, FAMILY, self.to)?,
        }
        let runs_q = format!("runs_{}", self.to);
        let runs = txn.get(&col.table, row, FAMILY, &runs_q).await?;
        let runs = runs.map_or(0, |v| {
            String::from_utf8_lossy(&v).parse::<u64>().unwrap_or(0)
        });
        txn.set(&col.table, row, FAMILY, &runs_q, (runs + 1).to_string())
    }

    fn committed(&self, row: &[u8], _: &ObservedColumn, run: &CommittedRun) {
        self.committed.lock().unwrap().push((row.to_vec(), *run));
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Runtime::new().unwrap()
}

fn config() -> WorkerConfig {
    WorkerConfig::default().with_lease_ttl(Duration::from_millis(900))
}

fn start(client: &Client, set: ObserverSet, config: WorkerConfig) -> ObserverWorker {
    rt().block_on(ObserverWorker::start(client.asynchronous(), set, config))
        .expect("start worker")
}

fn copy_set(t: &str, observer: CopyCounter) -> ObserverSet {
    ObserverSet::new()
        .observe(ObservedColumn::new(t, FAMILY, "q"), "copy", observer)
        .unwrap()
}

fn read(client: &Client, t: &str, row: &str, q: &str) -> Option<String> {
    let txn = client.begin().unwrap();
    txn.get(t, row, FAMILY, q)
        .unwrap()
        .map(|v| String::from_utf8(v).unwrap())
}

fn pending(client: &Client, t: &str) -> usize {
    rt().block_on(pending_notifications(&client.asynchronous(), t))
        .unwrap()
}

/// Waits until every notification of `t` is cleared and `done` holds.
fn wait_until(client: &Client, t: &str, what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !(pending(client, t) == 0 && done()) {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Marks `t`'s `f:q` observed by "copy" without running a worker.
fn register_copy(client: &Client, t: &str) {
    let column = ObservedColumn::new(t, FAMILY, "q");
    rt().block_on(percolator::observer::register(
        &client.asynchronous(),
        &column,
        "copy",
    ))
    .unwrap();
}

fn runs(client: &Client, t: &str, row: &str) -> u64 {
    read(client, t, row, "runs_copy").map_or(0, |v| v.parse().unwrap())
}

fn set(client: &Client, t: &str, row: &str, v: &str) {
    client.run(|txn| txn.set(t, row, FAMILY, "q", v)).unwrap();
}

#[test]
fn every_committed_change_is_processed_and_each_acknowledged_change_runs_once() {
    let env = Env::start();
    let t = env.table("obs_basic");
    let client = env.client();
    let worker = start(&client, copy_set(&t, CopyCounter::new("copy")), config());
    // Sequential changes, each awaited: exactly one committed run per change.
    for i in 0..5 {
        set(&client, &t, "r1", &i.to_string());
        wait_until(&client, &t, "the copy", || {
            read(&client, &t, "r1", "copy") == Some(i.to_string())
        });
        assert_eq!(
            runs(&client, &t, "r1"),
            i + 1,
            "one committed run per change"
        );
    }
    // A burst: several changes may collapse into one run, never more runs than changes.
    for i in 0..10 {
        set(&client, &t, "r2", &i.to_string());
    }
    wait_until(&client, &t, "the last value", || {
        read(&client, &t, "r2", "copy").as_deref() == Some("9")
    });
    let burst = runs(&client, &t, "r2");
    assert!((1..=10).contains(&burst), "{burst} runs for 10 changes");
    // A delete is a change too.
    client.run(|txn| txn.delete(&t, "r1", FAMILY, "q")).unwrap();
    wait_until(&client, &t, "the deleted copy", || {
        read(&client, &t, "r1", "copy").is_none()
    });
    assert_eq!(runs(&client, &t, "r1"), 6);
    // A worker counts a run once its commit returned, after readers can see it.
    wait_until(&client, &t, "the runs counted", || {
        worker.stats().processed >= 6 + burst
    });
    let stats = worker.stats();
    assert_eq!(stats.processed, 6 + burst);
    rt().block_on(worker.shutdown());
    client.shutdown();
}

#[test]
fn a_write_to_an_unobserved_column_leaves_no_notification() {
    let env = Env::start();
    let t = env.table("obs_unobserved");
    let client = env.client();
    register_copy(&client, &t);
    client
        .run(|txn| txn.set(&t, "r", FAMILY, "other", "1"))
        .unwrap();
    assert_eq!(pending(&client, &t), 0);
    set(&client, &t, "r", "1");
    assert_eq!(pending(&client, &t), 1, "the observed write left one");
    client.shutdown();
}

/// A table made transactional before observers existed has no notify family: a commit that
/// would leave a notification there fails before it writes anything, whether the client found
/// the table in its cache or had to read it.
#[test]
fn an_observed_write_to_a_table_without_the_notify_family_is_refused_and_writes_nothing() {
    let env = Env::start();
    let t = env.table("obs_no_notify_family");
    register_copy(&env.client(), &t);
    env.hbase
        .admin()
        .delete_family(&t, &env.schema.notify_family)
        .unwrap();
    // A fresh client caches the descriptor (without the family) and the meta row (with the
    // observed column) on a write that leaves no notification.
    let client = env.client();
    client
        .run(|txn| txn.set(&t, "r", FAMILY, "other", "1"))
        .unwrap();
    for attempt in ["cached", "again"] {
        let mut txn = client.begin().unwrap();
        txn.set(&t, "r", FAMILY, "q", "1").unwrap();
        match txn.commit() {
            Err(percolator::Error::FamilyNotFound { table, family, .. }) => {
                assert_eq!(
                    (table.as_str(), family.as_bytes()),
                    (t.as_str(), &b"_pn"[..]),
                    "{attempt}"
                );
            }
            other => panic!("{attempt}: expected FamilyNotFound, got {other:?}"),
        }
    }
    env.assert_no_locks(&t);
    let q = percolator::CellKey::new(t.as_str(), "r", FAMILY, "q").unwrap();
    assert!(
        env.writes(&q).is_empty(),
        "nothing of the refused commit was written"
    );
    client.shutdown();
}

#[test]
fn a_weak_notification_runs_the_observer_without_changing_the_value() {
    let env = Env::start();
    let t = env.table("obs_weak");
    let client = env.client();
    let worker = start(&client, copy_set(&t, CopyCounter::new("copy")), config());
    set(&client, &t, "r", "v");
    wait_until(&client, &t, "the first run", || runs(&client, &t, "r") == 1);
    client.run(|txn| txn.notify(&t, "r", FAMILY, "q")).unwrap();
    wait_until(&client, &t, "the weak run", || runs(&client, &t, "r") == 2);
    assert_eq!(read(&client, &t, "r", "q").as_deref(), Some("v"));
    rt().block_on(worker.shutdown());
    client.shutdown();
}

#[test]
fn chained_observers_carry_a_change_through_the_pipeline() {
    let env = Env::start();
    let t = env.table("obs_chain");
    let client = env.client();
    // q -> copy (observed) -> copy2.
    let set = copy_set(&t, CopyCounter::new("copy"))
        .observe(
            ObservedColumn::new(&t, FAMILY, "copy"),
            "copy2",
            CopyCounter::new("copy2"),
        )
        .unwrap();
    let worker = start(&client, set, config());
    self::set(&client, &t, "r", "hello");
    wait_until(&client, &t, "the end of the chain", || {
        read(&client, &t, "r", "copy2").as_deref() == Some("hello")
    });
    rt().block_on(worker.shutdown());
    client.shutdown();
}

#[test]
fn a_failing_observer_is_retried_with_backoff_and_never_dropped() {
    let env = Env::start();
    let t = env.table("obs_retry");
    let client = env.client();
    let worker = start(
        &client,
        copy_set(&t, CopyCounter::failing("copy", 3)),
        config(),
    );
    set(&client, &t, "r", "v");
    // The worker counts a run once its commit has returned, which a reader can see first.
    wait_until(&client, &t, "the run after the failures", || {
        runs(&client, &t, "r") == 1 && worker.stats().processed == 1
    });
    let stats = worker.stats();
    assert_eq!((stats.errors, stats.processed), (3, 1));
    assert_eq!(stats.other_errors, 3, "the observer's own errors");
    assert!(stats.retries >= 3, "{stats:?}");
    rt().block_on(worker.shutdown());
    client.shutdown();
}

/// A worker dies at `seam` on its first time there; a second worker (after the first one's
/// leases expire) finishes the work: the change is processed exactly once. With
/// `drop_commit`, the first worker's commit point CAS is lost on its way (its outcome unknown
/// to the worker), so the worker settles its commit by re-reading the primary and committing
/// again without the notifications' delete, which otherwise rides in that CAS: they stay.
fn dies_at(seam: WorkerSeam, drop_commit: bool) {
    let env = Env::start();
    let t = env.table("obs_crash");
    let client = env.client();
    let fired = Arc::new(AtomicU32::new(0));
    let crash = {
        let fired = Arc::clone(&fired);
        Arc::new(move |s: WorkerSeam| s == seam && fired.fetch_add(1, Ordering::SeqCst) == 0)
    };
    let store = FaultyStore::new(env.hbase.clone(), env.schema.clone());
    if drop_commit {
        store.inject(CasKind::Commit, "r", Fault::DropRequest, 1);
    }
    let worker_client = env.client_on(store.clone(), env.tso.clone(), env.options());
    let first = start(
        &worker_client,
        copy_set(&t, CopyCounter::new("copy")),
        config().with_crash(crash),
    );
    set(&client, &t, "r", "v");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !first.is_dead() {
        assert!(
            Instant::now() < deadline,
            "the worker never reached {seam:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(!store.fired().is_empty(), drop_commit);
    let committed_before = runs(&client, &t, "r");
    match seam {
        WorkerSeam::BeforeProcess => assert_eq!(committed_before, 0),
        WorkerSeam::AfterCommit => {
            assert_eq!(committed_before, 1);
            assert_eq!(pending(&client, &t), usize::from(drop_commit));
        }
        // The page's run may have committed, or given up (the notification is written with
        // the writer's prewrite, so a scan can meet it before the writer commits): either
        // way its notification is gone exactly when the run committed.
        WorkerSeam::MidScan => {
            assert!(committed_before <= 1);
            assert_eq!(
                pending(&client, &t),
                usize::from(drop_commit || committed_before == 0)
            );
        }
    }
    rt().block_on(first.shutdown());
    let second = start(&client, copy_set(&t, CopyCounter::new("copy")), config());
    wait_until(&client, &t, "the second worker", || {
        read(&client, &t, "r", "copy").as_deref() == Some("v")
    });
    assert_eq!(
        runs(&client, &t, "r"),
        1,
        "at most one committed run per change"
    );
    if drop_commit {
        assert_eq!(second.stats().already_acked, 1, "the rerun found the ack");
    }
    rt().block_on(second.shutdown());
    worker_client.shutdown();
    client.shutdown();
}

#[test]
fn a_worker_dying_before_processing_loses_nothing() {
    dies_at(WorkerSeam::BeforeProcess, false);
}

#[test]
fn a_worker_dying_after_its_commit_leaves_nothing_to_run_again() {
    dies_at(WorkerSeam::AfterCommit, false);
}

#[test]
fn a_worker_dying_after_a_commit_it_had_to_settle_runs_nothing_twice() {
    dies_at(WorkerSeam::AfterCommit, true);
}

#[test]
fn a_worker_dying_mid_scan_loses_nothing() {
    dies_at(WorkerSeam::MidScan, false);
}

/// A `CopyCounter` that records when it has run: its writes are buffered in the run's
/// transaction, nothing of the run is committed yet.
struct Flagging {
    inner: CopyCounter,
    ran: Arc<AtomicBool>,
}

#[async_trait::async_trait]
impl Observer for Flagging {
    async fn process(
        &self,
        txn: &mut AsyncTransaction,
        row: &[u8],
        col: &ObservedColumn,
    ) -> Result<()> {
        self.inner.process(txn, row, col).await?;
        self.ran.store(true, Ordering::SeqCst);
        Ok(())
    }
}

/// The acknowledgment commits in the observer's own transaction, with what `process` wrote. A
/// worker that dies after `process` and before that transaction's commit point leaves the
/// change unacknowledged, and the next worker processes it. Were the acknowledgment committed
/// on its own before `process`, the next worker would find the change acknowledged and clear
/// its notification: the copy would never be written.
#[test]
fn a_worker_dying_between_acknowledging_and_committing_loses_nothing() {
    let env = Env::start();
    let t = env.table("obs_ack");
    let client = env.client();
    let ran = Arc::new(AtomicBool::new(false));
    let died = Arc::new(AtomicBool::new(false));
    // The worker's client dies at the first commit point it reaches once the observer has run.
    let injector: CrashInjector = {
        let (ran, died) = (Arc::clone(&ran), Arc::clone(&died));
        Arc::new(move |seam| {
            seam == Seam::BeforePrimaryCommit
                && ran.load(Ordering::SeqCst)
                && !died.swap(true, Ordering::SeqCst)
        })
    };
    let worker_client =
        env.client_with(env.options().to_builder().crash_injector(injector).build());
    let observer = Flagging {
        inner: CopyCounter::new("copy"),
        ran: Arc::clone(&ran),
    };
    let set_of = ObserverSet::new()
        .observe(ObservedColumn::new(&t, FAMILY, "q"), "copy", observer)
        .unwrap();
    let first = start(&worker_client, set_of, config());
    set(&client, &t, "r", "v");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !died.load(Ordering::SeqCst) {
        assert!(
            Instant::now() < deadline,
            "the worker never reached its commit"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    first.kill();
    rt().block_on(first.shutdown());
    assert_eq!(
        read(&client, &t, "r", "copy"),
        None,
        "the dying run left no copy"
    );
    let second = start(&client, copy_set(&t, CopyCounter::new("copy")), config());
    wait_until(&client, &t, "the notification to clear", || true);
    assert_eq!(
        read(&client, &t, "r", "copy").as_deref(),
        Some("v"),
        "the change was processed"
    );
    assert_eq!(runs(&client, &t, "r"), 1, "by exactly one committed run");
    rt().block_on(second.shutdown());
    worker_client.shutdown();
    client.shutdown();
}

/// A run whose commit point's reply was lost settles its commit by re-reading the primary; the
/// notifications' delete did not ride in that CAS, so the run clears them itself right after.
/// The change is not run a second time (not even as a run that finds it acknowledged).
#[test]
fn a_run_that_settled_its_commit_clears_its_notifications_itself() {
    let env = Env::start();
    let t = env.table("obs_settled");
    let client = env.client();
    let store = FaultyStore::new(env.hbase.clone(), env.schema.clone());
    store.inject(CasKind::Commit, "r", Fault::DropRequest, 1);
    let worker_client = env.client_on(store.clone(), env.tso.clone(), env.options());
    // One scanner: a page fetched by another scanner while the run was under way could still
    // hold the notification, and start a run that finds the change acknowledged.
    let worker = start(
        &worker_client,
        copy_set(&t, CopyCounter::new("copy")),
        config().with_scanners(1, 4),
    );
    set(&client, &t, "r", "v");
    wait_until(&client, &t, "the copy", || {
        read(&client, &t, "r", "copy").as_deref() == Some("v") && worker.stats().processed == 1
    });
    assert!(
        !store.fired().is_empty(),
        "the commit point's request was dropped"
    );
    // A run that cleared the notifications counts itself just after: give it time to.
    std::thread::sleep(Duration::from_millis(300));
    let stats = worker.stats();
    assert_eq!(
        (stats.processed, stats.already_acked),
        (1, 0),
        "one run, and no second one to clear: {stats:?}"
    );
    assert_eq!(runs(&client, &t, "r"), 1);
    rt().block_on(worker.shutdown());
    worker_client.shutdown();
    client.shutdown();
}

#[test]
fn a_writer_that_dies_after_prewrite_leaves_a_notification_the_worker_settles() {
    let env = Env::start();
    let t = env.table("obs_rolled_back");
    let client = env.client();
    register_copy(&client, &t);
    let options = percolator::TxnOptions::builder()
        .liveness(env.liveness.clone())
        .lock_ttl(Duration::from_secs(1))
        .crash_injector(Arc::new(|s| s == Seam::BeforePrimaryCommit))
        .build();
    let dying = env.client_with(options);
    let mut txn = dying.begin().unwrap();
    txn.set(&t, "r", FAMILY, "q", "never").unwrap();
    assert!(txn.commit().is_err());
    assert_eq!(
        pending(&client, &t),
        1,
        "the notification came with the lock"
    );
    let worker = start(&client, copy_set(&t, CopyCounter::new("copy")), config());
    wait_until(&client, &t, "the notification to clear", || true);
    assert_eq!(read(&client, &t, "r", "q"), None, "rolled back");
    assert_eq!(
        runs(&client, &t, "r"),
        0,
        "a rolled-back write is no change"
    );
    rt().block_on(worker.shutdown());
    client.shutdown();
}

#[test]
fn two_workers_share_the_partitions_through_leases() {
    let env = Env::start();
    let t = env.table("obs_leases");
    let client = env.client();
    let a = start(&client, copy_set(&t, CopyCounter::new("copy")), config());
    let b = start(&client, copy_set(&t, CopyCounter::new("copy")), config());
    let deadline = Instant::now() + Duration::from_secs(20);
    while a.stats().partitions + b.stats().partitions != 16
        || a.stats().partitions > 8
        || b.stats().partitions > 8
    {
        assert!(
            Instant::now() < deadline,
            "no fair split: {} and {}",
            a.stats().partitions,
            b.stats().partitions
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    for i in 0..40u8 {
        let row = format!("{}row{i}", char::from(b'0' + i % 75));
        set(&client, &t, &row, "v");
    }
    wait_until(&client, &t, "every row", || true);
    rt().block_on(a.shutdown());
    rt().block_on(b.shutdown());
    client.shutdown();
}

/// Rows of `t`'s workers in the meta table (alive or not).
fn worker_rows(env: &Env, t: &str) -> usize {
    let scan = percolator::hbase::Scan::prefix(format!("obs-hash-worker/{t}/"));
    env.hbase
        .scan(&env.schema.meta_table, &scan)
        .unwrap()
        .count()
}

/// A killed worker leaves its row and leases behind: the survivor takes every partition once
/// the leases expire, and deletes the dead worker's row, so killed workers do not pile up.
#[test]
fn a_dead_workers_row_and_leases_are_taken_over() {
    let env = Env::start();
    let t = env.table("obs_dead_row");
    let client = env.client();
    let dead = start(&client, copy_set(&t, CopyCounter::new("copy")), config());
    let survivor = start(&client, copy_set(&t, CopyCounter::new("copy")), config());
    assert_eq!(worker_rows(&env, &t), 2);
    dead.kill();
    rt().block_on(dead.shutdown());
    let deadline = Instant::now() + Duration::from_secs(20);
    while survivor.stats().partitions != 16 || worker_rows(&env, &t) != 1 {
        assert!(
            Instant::now() < deadline,
            "{} partitions, {} worker rows",
            survivor.stats().partitions,
            worker_rows(&env, &t)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    set(&client, &t, "r", "v");
    wait_until(&client, &t, "the survivor's run", || {
        read(&client, &t, "r", "copy").is_some()
    });
    rt().block_on(survivor.shutdown());
    assert_eq!(worker_rows(&env, &t), 0, "a clean shutdown removes the row");
    client.shutdown();
}

/// Waits (up to 30 s) until `done` holds; returns how long that took.
fn wait_for(what: impl Fn() -> String, done: impl Fn() -> bool) -> Duration {
    let begun = Instant::now();
    while !done() {
        assert!(begun.elapsed() < Duration::from_secs(30), "{}", what());
        std::thread::sleep(Duration::from_millis(10));
    }
    begun.elapsed()
}

/// Leases of a minute (renewed every 20 s) and worker rows of `worker_ttl`: a lease round
/// every quarter of `worker_ttl`. Before workers rebalanced at every round, taking a share
/// waited for a renewal period (20 s) and a killed worker's leases for their expiry (60 s).
fn rounds_config(worker_ttl: Duration) -> WorkerConfig {
    WorkerConfig::default()
        .with_lease_ttl(Duration::from_secs(60))
        .with_worker_ttl(worker_ttl)
}

/// Writes rows of `t` until the returned flag is set (a busy table).
fn busy_writer(env: &Env, t: &str) -> (Arc<AtomicBool>, std::thread::JoinHandle<()>) {
    let stop = Arc::new(AtomicBool::new(false));
    let client = env.client();
    let (flag, t) = (Arc::clone(&stop), t.to_string());
    let writer = std::thread::spawn(move || {
        let mut i = 0u32;
        while !flag.load(Ordering::SeqCst) {
            let row = format!("{}busy{i}", char::from(b'0' + (i % 75) as u8));
            set(&client, &t, &row, "v");
            i += 1;
        }
        client.shutdown();
    });
    (stop, writer)
}

/// A worker that joins a busy table holds its share within two lease rounds of the worker
/// already there (which gives up its surplus at its next round), and a worker that shuts down
/// hands its partitions over within one round.
#[test]
fn a_joining_worker_takes_its_share_and_a_leaving_one_hands_over_at_once() {
    let env = Env::start();
    let t = env.table("obs_join");
    let client = env.client();
    let config = rounds_config(Duration::from_secs(4)); // a round every second
    let first = start(
        &client,
        copy_set(&t, CopyCounter::new("copy")),
        config.clone(),
    );
    assert_eq!(
        first.stats().partitions,
        16,
        "alone, it takes every partition"
    );
    let (stop, writer) = busy_writer(&env, &t);
    std::thread::sleep(Duration::from_millis(300));

    let second = start(
        &client,
        copy_set(&t, CopyCounter::new("copy")),
        config.clone(),
    );
    let split = || (first.stats().partitions, second.stats().partitions);
    let took = wait_for(
        || format!("no fair split: {:?}", split()),
        || split() == (8, 8),
    );
    // Two rounds (the first worker's, then the joining one's fast round), with slack for a
    // loaded machine; a renewal period is 20 s.
    assert!(took < Duration::from_secs(4), "split after {took:?}");

    rt().block_on(second.shutdown());
    let took = wait_for(
        || format!("{} partitions after the shutdown", first.stats().partitions),
        || first.stats().partitions == 16,
    );
    assert!(took < Duration::from_secs(3), "handed over after {took:?}");

    stop.store(true, Ordering::SeqCst);
    writer.join().unwrap();
    wait_until(&client, &t, "every row", || true);
    rt().block_on(first.shutdown());
    client.shutdown();
}

/// A killed worker stops counting as live once its row expires (`worker_ttl`), and the
/// survivor takes every partition within `worker_ttl` plus one round, long before the dead
/// worker's leases expire; the dead worker's row stays until they would have.
#[test]
fn a_killed_workers_partitions_move_within_the_worker_ttl() {
    let env = Env::start();
    let t = env.table("obs_killed");
    let client = env.client();
    let config = rounds_config(Duration::from_secs(1)); // a round every 250 ms
    let survivor = start(
        &client,
        copy_set(&t, CopyCounter::new("copy")),
        config.clone(),
    );
    let dead = start(&client, copy_set(&t, CopyCounter::new("copy")), config);
    let split = || (survivor.stats().partitions, dead.stats().partitions);
    wait_for(
        || format!("no fair split: {:?}", split()),
        || split() == (8, 8),
    );
    let (stop, writer) = busy_writer(&env, &t);

    dead.kill();
    let took = wait_for(
        || format!("{} partitions", survivor.stats().partitions),
        || survivor.stats().partitions == 16,
    );
    // worker_ttl + a round (1.25 s), with slack; the dead worker's leases last 60 s.
    assert!(took < Duration::from_secs(5), "taken over after {took:?}");
    assert_eq!(worker_rows(&env, &t), 2, "the dead row stays, counted dead");

    stop.store(true, Ordering::SeqCst);
    writer.join().unwrap();
    wait_until(&client, &t, "every row", || true);
    rt().block_on(dead.shutdown());
    rt().block_on(survivor.shutdown());
    client.shutdown();
}

/// A worker killed inside a run's commit leaves the run's locks, owned by a client that may live
/// on (here it does, and its locks stay fresh for a minute). The other workers learn from the
/// killed worker's expired row that its runs are abandoned, and clean those locks at once
/// instead of waiting for them to go stale: the change is processed within seconds, by one
/// committed run.
#[test]
fn a_killed_workers_run_is_cleaned_without_waiting_for_its_client() {
    let env = Env::start();
    let t = env.table("obs_abandoned");
    let client = env.client();
    let store = FaultyStore::new(env.hbase.clone(), env.schema.clone());
    let commit_point = Gate::new();
    store.inject(CasKind::Commit, "r", Fault::Hold(commit_point.clone()), 1);
    let minute_locks = env
        .options()
        .to_builder()
        .lock_ttl(Duration::from_secs(60))
        .build();
    let first_client = env.client_on(store.clone(), env.tso.clone(), minute_locks);
    let config = rounds_config(Duration::from_secs(1));
    let first = start(
        &first_client,
        copy_set(&t, CopyCounter::new("copy")),
        config.clone(),
    );
    let release = commit_point.opens_on_drop();
    set(&client, &t, "r", "v");
    assert!(
        commit_point.wait_reached(Duration::from_secs(20)),
        "the run reached its commit point"
    );
    first.kill();
    let second = start(&client, copy_set(&t, CopyCounter::new("copy")), config);
    let took = wait_for(
        || format!("copy = {:?}", read(&client, &t, "r", "copy")),
        || read(&client, &t, "r", "copy").as_deref() == Some("v"),
    );
    // worker_ttl and a round (1.25 s), then the run's retry backoff; the locks last 60 s.
    assert!(took < Duration::from_secs(15), "processed after {took:?}");
    drop(release);
    rt().block_on(first.shutdown());
    wait_until(&client, &t, "the notification to clear", || true);
    assert_eq!(runs(&client, &t, "r"), 1, "one committed run");
    rt().block_on(second.shutdown());
    first_client.shutdown();
    client.shutdown();
}

/// Correctness never rests on the leases: two workers whose partitions overlap (one splits the
/// table in one partition, the other in two, so both run the rows of one of the halves) run the
/// same notifications at once, and still exactly one run per change commits.
#[test]
fn overlapping_workers_commit_one_run_per_change() {
    let env = Env::start();
    let t = env.table("obs_overlap");
    let client = env.client();
    let halves = start(
        &client,
        copy_set(&t, CopyCounter::new("copy")),
        config().with_partitions(2),
    );
    let whole = start(
        &client,
        copy_set(&t, CopyCounter::new("copy")),
        config().with_partitions(1),
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while (halves.stats().partitions, whole.stats().partitions) != (1, 1) {
        assert!(Instant::now() < deadline, "leases never settled");
        std::thread::sleep(Duration::from_millis(20));
    }
    let rows: Vec<String> = (0..30).map(|i| format!("row{i}")).collect();
    for row in &rows {
        set(&client, &t, row, "v");
    }
    wait_until(&client, &t, "every row", || {
        rows.iter().all(|r| read(&client, &t, r, "copy").is_some())
    });
    for row in &rows {
        assert_eq!(runs(&client, &t, row), 1, "{row}");
    }
    wait_until(&client, &t, "the runs counted", || {
        halves.stats().processed + whole.stats().processed >= 30
    });
    let (a, b) = (halves.stats(), whole.stats());
    assert_eq!(a.processed + b.processed, 30, "{a:?} {b:?}");
    rt().block_on(halves.shutdown());
    rt().block_on(whole.shutdown());
    client.shutdown();
}

/// `pending_notifications` counts rows with something to process, however many changes (each
/// leaving a notification version) a row has pending.
#[test]
fn pending_notifications_counts_rows_not_versions() {
    let env = Env::start();
    let t = env.table("obs_pending_rows");
    let client = env.client();
    register_copy(&client, &t);
    for v in ["1", "2", "3"] {
        set(&client, &t, "r", v);
    }
    set(&client, &t, "s", "1");
    assert_eq!(pending(&client, &t), 2, "rows r and s");
    client.shutdown();
}

/// A dropped worker stops: a change committed after the drop is left to the next worker, and
/// the dropped one gives its leases and its worker row back on its own.
#[test]
fn dropping_the_worker_stops_it() {
    let env = Env::start();
    let t = env.table("obs_drop");
    let client = env.client();
    let worker = start(&client, copy_set(&t, CopyCounter::new("copy")), config());
    set(&client, &t, "r1", "v");
    wait_until(&client, &t, "the run before the drop", || {
        runs(&client, &t, "r1") == 1
    });
    drop(worker);
    std::thread::sleep(Duration::from_millis(300));
    set(&client, &t, "r2", "v");
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(runs(&client, &t, "r2"), 0, "no run after the drop");
    assert_eq!(pending(&client, &t), 1, "the change waits for a worker");
    assert_eq!(worker_rows(&env, &t), 0, "the dropped worker left");
    let next = start(&client, copy_set(&t, CopyCounter::new("copy")), config());
    wait_until(&client, &t, "the next worker's run", || {
        runs(&client, &t, "r2") == 1
    });
    rt().block_on(next.shutdown());
    client.shutdown();
}

/// `wait_idle` returns once every change committed before the call has been processed, and
/// times out when no worker runs the column.
#[test]
fn wait_idle_returns_once_every_change_committed_before_it_is_processed() {
    let env = Env::start();
    let t = env.table("obs_wait_idle");
    let client = env.client();
    let worker = start(&client, copy_set(&t, CopyCounter::new("copy")), config());
    let rows: Vec<String> = (0..40).map(|i| format!("{}row{i}", i % 10)).collect();
    for row in &rows {
        set(&client, &t, row, "v");
    }
    rt().block_on(worker.wait_idle(Duration::from_secs(30)))
        .expect("idle");
    for row in &rows {
        assert_eq!(
            read(&client, &t, row, "copy").as_deref(),
            Some("v"),
            "{row}"
        );
        assert_eq!(runs(&client, &t, row), 1, "{row}");
    }
    assert_eq!(pending(&client, &t), 0);
    worker.kill();
    set(&client, &t, "late", "v");
    let waited = rt().block_on(worker.wait_idle(Duration::from_millis(300)));
    assert!(
        matches!(waited, Err(percolator::Error::Timeout { .. })),
        "{waited:?}"
    );
    rt().block_on(worker.shutdown());
    client.shutdown();
}

/// `WorkerStats` counts failed runs by kind, beside their total.
#[test]
fn failed_runs_are_counted_by_kind() {
    let env = Env::start();
    let t = env.table("obs_error_kinds");
    let client = env.client();
    let conflict = || percolator::Error::WriteConflict {
        table: t.clone(),
        row: b"r".to_vec(),
        column: b"f:q".to_vec(),
        start_ts: 1,
        conflict_ts: 2,
    };
    let locked = percolator::Error::KeyLocked {
        table: t.clone(),
        row: b"r".to_vec(),
        column: b"f:q".to_vec(),
        lock_ts: 1,
        primary: None,
    };
    let lost = percolator::Error::OutcomeUnknown {
        method: "checkAndMutate",
        table: t.clone(),
        row: b"r".to_vec(),
        source: Box::new(percolator::Error::Shutdown),
    };
    let observer = CopyCounter::failing_with("copy", vec![lost, locked, conflict(), conflict()]);
    let worker = start(&client, copy_set(&t, observer), config());
    set(&client, &t, "r", "v");
    wait_until(&client, &t, "the run after the failures", || {
        runs(&client, &t, "r") == 1
    });
    let stats = worker.stats();
    assert_eq!(
        (
            stats.errors,
            stats.write_conflicts,
            stats.locked,
            stats.undetermined,
            stats.other_errors
        ),
        (4, 2, 1, 1, 0),
        "{stats:?}"
    );
    rt().block_on(worker.shutdown());
    client.shutdown();
}

/// `Observer::committed` reports the run's timestamps and the commit_ts of the change it
/// processed, so the lag is measurable.
#[test]
fn committed_reports_the_processed_changes_commit_ts() {
    let env = Env::start();
    let t = env.table("obs_committed");
    let client = env.client();
    let observer = CopyCounter::new("copy");
    let reported = Arc::clone(&observer.committed);
    let worker = start(&client, copy_set(&t, observer), config());
    let mut txn = client.begin().unwrap();
    txn.set(&t, "r", FAMILY, "q", "v").unwrap();
    let change_ts = txn.commit().unwrap();
    // The hook is called once the run's commit returns, which a reader may see committed a
    // moment before.
    wait_until(&client, &t, "the run and its report", || {
        runs(&client, &t, "r") == 1 && !reported.lock().unwrap().is_empty()
    });
    let reported = reported.lock().unwrap().clone();
    assert_eq!(reported.len(), 1, "{reported:?}");
    let (row, run) = &reported[0];
    assert_eq!(row, b"r");
    assert_eq!(run.change_commit_ts, change_ts);
    assert!(
        change_ts < run.start_ts && run.start_ts < run.commit_ts,
        "{run:?}"
    );
    assert!(run.lag() < Duration::from_secs(30), "{run:?}");
    rt().block_on(worker.shutdown());
    client.shutdown();
}

/// Lag (change commit to the observer's commit, `CommittedRun::lag`) with two workers on
/// default settings and 4 writers of fresh rows spread over the first byte, for 15 s: without
/// kills, then with one worker killed and replaced every 5 s. Prints p50/p99/max; asserts
/// nothing about them (a measurement, run by hand: `cargo test --release --test observers
/// ownership_lag -- --ignored --nocapture`).
#[test]
#[ignore]
fn ownership_lag() {
    for kills in [false, true] {
        let env = Env::start();
        let t = env.table(if kills { "obs_lag_kills" } else { "obs_lag" });
        let client = env.client();
        let reported = Reported::default();
        let observer = || CopyCounter {
            committed: Arc::clone(&reported),
            ..CopyCounter::new("copy")
        };
        let mut workers = vec![
            start(&client, copy_set(&t, observer()), WorkerConfig::default()),
            start(&client, copy_set(&t, observer()), WorkerConfig::default()),
        ];
        let stop = Arc::new(AtomicBool::new(false));
        let writers: Vec<_> = (0..4u8)
            .map(|w| {
                let client = env.client();
                let (stop, t) = (Arc::clone(&stop), t.clone());
                std::thread::spawn(move || {
                    let mut i = 0u32;
                    while !stop.load(Ordering::SeqCst) {
                        let mut row = vec![(i.wrapping_mul(97) as u8) ^ (w * 61)];
                        row.extend_from_slice(format!("w{w}-{i}").as_bytes());
                        client
                            .run(|txn| txn.set(&t, &row, FAMILY, "q", "v"))
                            .unwrap();
                        i += 1;
                    }
                    client.shutdown();
                })
            })
            .collect();
        let begun = Instant::now();
        while begun.elapsed() < Duration::from_secs(15) {
            std::thread::sleep(Duration::from_secs(5));
            if kills && begun.elapsed() < Duration::from_secs(15) {
                let dead = workers.remove(0);
                dead.kill();
                rt().block_on(dead.shutdown());
                workers.push(start(
                    &client,
                    copy_set(&t, observer()),
                    WorkerConfig::default(),
                ));
            }
        }
        stop.store(true, Ordering::SeqCst);
        for w in writers {
            w.join().unwrap();
        }
        wait_until(&client, &t, "every row", || true);
        for w in workers {
            rt().block_on(w.shutdown());
        }
        let mut lags: Vec<Duration> = reported
            .lock()
            .unwrap()
            .iter()
            .map(|(_, r)| r.lag())
            .collect();
        lags.sort();
        let at = |q: f64| lags[((lags.len() - 1) as f64 * q) as usize];
        println!(
            "kills={kills}: {} runs, lag p50 {:?} p99 {:?} max {:?}",
            lags.len(),
            at(0.5),
            at(0.99),
            lags[lags.len() - 1]
        );
        client.shutdown();
    }
}

/// Workers of the earlier layouts kept rows `obs-worker/<id>` and `obs-worker/<table>/<id>`,
/// which no current worker reads: one killed after the upgrade would leave its row for good.
/// A worker that starts deletes those expired long ago and keeps those of older workers still
/// running.
#[test]
fn a_starting_worker_removes_rows_that_killed_older_workers_left() {
    let env = Env::start();
    let t = env.table("obs_legacy_rows");
    let client = env.client();
    let meta = &env.schema.meta_table;
    let alive_until = (std::time::SystemTime::now() + Duration::from_secs(600))
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    let rows = [
        (format!("obs-worker/killed-first-layout-{t}"), 1u128),
        (format!("obs-worker/{t}/killed-ranges-layout"), 1),
        (format!("obs-worker/{t}/running"), alive_until),
    ];
    for (row, expires) in &rows {
        let put =
            percolator::hbase::Put::new(row.as_str()).add("m", "obs:alive", expires.to_string());
        env.hbase.put(meta, &put).unwrap();
    }
    let legacy_rows = || -> Vec<String> {
        let scan = percolator::hbase::Scan::prefix("obs-worker/");
        env.hbase
            .scan(meta, &scan)
            .unwrap()
            .map(|r| String::from_utf8_lossy(&r.unwrap().row).into_owned())
            .filter(|r| r == &rows[0].0 || r.starts_with(&format!("obs-worker/{t}/")))
            .collect()
    };
    let worker = start(&client, copy_set(&t, CopyCounter::new("copy")), config());
    assert_eq!(
        legacy_rows(),
        [rows[2].0.clone()],
        "only the running one stays"
    );
    rt().block_on(worker.shutdown());
    client.shutdown();
}

/// A worker started (or replaced) while the meta table's region moves waits it out, within
/// its start timeout, instead of failing the service that starts it; past that timeout the
/// error is the gateway's, retryable, and nothing is half-registered that a later start cannot
/// finish.
#[test]
fn a_worker_started_while_the_meta_region_moves_starts_once_it_is_back() {
    let env = Env::start();
    let t = env.table("obs_moving_meta");
    let client = env.client();
    let store = FaultyStore::new(env.hbase.clone(), env.schema.clone());
    let worker_client = env.client_on(store.clone(), env.tso.clone(), env.options());

    store.move_puts_to(&env.schema.meta_table, usize::MAX);
    let stuck = rt().block_on(ObserverWorker::start(
        worker_client.asynchronous(),
        copy_set(&t, CopyCounter::new("copy")),
        config().with_start_timeout(Duration::from_millis(300)),
    ));
    let err = stuck.err().expect("the region never came back");
    assert_eq!(err.retry_class(), percolator::RetryClass::Retry, "{err}");

    let store = FaultyStore::new(env.hbase.clone(), env.schema.clone());
    let worker_client = env.client_on(store.clone(), env.tso.clone(), env.options());
    store.move_puts_to(&env.schema.meta_table, 3);
    let worker = start(
        &worker_client,
        copy_set(&t, CopyCounter::new("copy")),
        config(),
    );
    assert_eq!(
        store.moving_puts_left(),
        0,
        "the start met the moving region"
    );
    set(&client, &t, "r", "v");
    wait_until(&client, &t, "the copy", || {
        read(&client, &t, "r", "copy").as_deref() == Some("v")
    });
    rt().block_on(worker.shutdown());
    worker_client.shutdown();
    client.shutdown();
}
