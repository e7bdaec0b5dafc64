//! The client around the protocol: `Client::run`'s retry rules, the async facade and the RPC
//! counters of the cost model.

use std::sync::Arc;
use std::time::Duration;

use percolator::format::{LockState, WriteKind};
use percolator::txn::Seam;
use percolator::{Error, RetryClass};

use crate::txn_support::faulty::{CasKind, Fault, FaultyStore, Gate};
use crate::txn_support::Env;
use crate::{get, value, FAMILY};

#[test]
fn run_retries_conflicts_until_every_increment_lands() {
    let env = Env::start();
    let t = env.table("counter");
    let clients = [env.client(), env.client()];
    std::thread::scope(|s| {
        for client in &clients {
            let t = &t;
            s.spawn(move || {
                for _ in 0..50 {
                    client
                        .run(|txn| {
                            let n: u64 = txn
                                .get(t, "n", FAMILY, "q")?
                                .map_or(0, |v| String::from_utf8(v).unwrap().parse().unwrap());
                            txn.set(t, "n", FAMILY, "q", (n + 1).to_string())
                        })
                        .unwrap();
                }
            });
        }
    });
    let total: u64 = clients.iter().map(|c| c.stats().committed).sum();
    assert_eq!(total, 100);
    assert_eq!(get(&clients[0].begin().unwrap(), &t, "n"), value("100"));
    for c in clients {
        c.shutdown();
    }
}

#[test]
fn run_stops_at_once_on_fatal_and_undetermined_errors() {
    let env = Env::start();
    let t = env.table("stops");
    let client = env.client();
    let mut attempts = 0;
    let err = client
        .run(|txn| {
            attempts += 1;
            txn.set(&t, "", FAMILY, "q", "v")
        })
        .unwrap_err();
    assert!(matches!(err, Error::IllegalArgument { .. }), "{err}");
    assert_eq!(attempts, 1);

    let crashing = env.client_with(
        env.options()
            .to_builder()
            .crash_injector(Arc::new(|at| at == Seam::BeforePrimaryCommit))
            .build(),
    );
    let mut attempts = 0;
    let err = crashing
        .run(|txn| {
            attempts += 1;
            txn.set(&t, "x", FAMILY, "q", "v")
        })
        .unwrap_err();
    assert!(matches!(err, Error::ClientCrashed { .. }), "{err}");
    assert_eq!((attempts, err.retry_class()), (1, RetryClass::Undetermined));
    client.shutdown();
}

/// One transaction's body waits until the test has finished many other async transactions on
/// the same single-threaded runtime: that can only happen if none of them blocks the runtime.
#[tokio::test(flavor = "current_thread")]
async fn async_transactions_never_block_the_runtime() {
    let env = Env::start();
    let t = env.table("async");
    let client = env.client();
    let facade = client.asynchronous();
    let (release, released) = tokio::sync::oneshot::channel::<()>();
    let waiter = {
        let (facade, t) = (facade.clone(), t.clone());
        let released = parking_lot::Mutex::new(Some(released));
        tokio::spawn(async move {
            facade
                .run(async |txn| {
                    let first = released.lock().take();
                    if let Some(released) = first {
                        tokio::time::timeout(Duration::from_secs(20), released)
                            .await
                            .map_err(|_| Error::IllegalArgument {
                                message: "never released: the runtime was blocked".into(),
                            })?
                            .map_err(|_| Error::Shutdown)?;
                    }
                    txn.set(&t, "waiter", FAMILY, "q", "done")
                })
                .await
        })
    };
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..48 {
        let (facade, t) = (facade.clone(), t.clone());
        tasks.spawn(async move {
            facade
                .run(async |txn| txn.set(&t, format!("row{i:02}"), FAMILY, "q", i.to_string()))
                .await
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap().unwrap();
    }
    release.send(()).unwrap();
    waiter.await.unwrap().unwrap();
    let read = facade.begin().await.unwrap();
    for i in [0, 17, 47] {
        let got = read
            .get(&t, format!("row{i:02}"), FAMILY, "q")
            .await
            .unwrap();
        assert_eq!(got, value(&i.to_string()));
    }
    assert_eq!(
        read.get(&t, "waiter", FAMILY, "q").await.unwrap(),
        value("done")
    );
    facade.shutdown().await;
}

#[test]
fn rpc_counters_follow_the_cost_model() {
    let env = Env::start();
    let (t1, t2) = (env.table("rpc_a"), env.table("rpc_b"));
    let client = env.client();
    let big = vec![b'b'; client.options().short_value_limit() + 1];
    client
        .run(|txn| {
            txn.set(&t1, "x", FAMILY, "q", "short")?;
            txn.set(&t1, "x", FAMILY, "q2", "second")?;
            txn.set(&t1, "y", FAMILY, "q", big.clone())?;
            txn.set(&t2, "z", FAMILY, "q", "other")
        })
        .unwrap();

    let before = client.stats();
    let txn = client.begin().unwrap();
    assert_eq!(get(&txn, &t1, "x"), value("short"));
    assert_eq!(txn.rpc_count(), 1, "a committed short value: one Get");
    assert_eq!(get(&txn, &t1, "y"), Some(big.clone()));
    assert_eq!(
        txn.rpc_count(),
        3,
        "a large value: the Get and one data read"
    );
    let same_row = [
        env.key(&t1, "x"),
        percolator::CellKey::new(&*t1, "x", "f", "q2").unwrap(),
    ];
    txn.get_many(&same_row).unwrap();
    assert_eq!(txn.rpc_count(), 4, "two columns of one row: one Get");
    txn.get_many(&[env.key(&t1, "x"), env.key(&t2, "z")])
        .unwrap();
    assert_eq!(txn.rpc_count(), 6, "two tables: one Get each");
    let after = client.stats();
    assert_eq!(after.hbase_rpcs - before.hbase_rpcs, txn.rpc_count());
    assert_eq!(
        (
            after.begun - before.begun,
            after.timestamps - before.timestamps
        ),
        (1, 1)
    );

    // A write of two existing cells: 2 prewrite + 2 commit CAS, start and commit timestamps.
    let before = client.stats();
    client
        .run(|txn| {
            txn.set(&t1, "x", FAMILY, "q", "2")?;
            txn.set(&t2, "z", FAMILY, "q", "2")
        })
        .unwrap();
    let after = client.stats();
    assert_eq!(after.hbase_rpcs - before.hbase_rpcs, 4);
    assert_eq!(after.timestamps - before.timestamps, 2);
    assert_eq!(after.committed - before.committed, 1);

    // A lost write-write race counts as aborted (the loser's snapshot is pinned first).
    let mut loser = crate::txn_support::begin_now(&client);
    client
        .run(|txn| txn.set(&t1, "x", FAMILY, "q", "3"))
        .unwrap();
    loser.set(&t1, "x", FAMILY, "q", "4").unwrap();
    let aborted = client.stats().aborted;
    assert!(matches!(loser.commit(), Err(Error::WriteConflict { .. })));
    assert_eq!(client.stats().aborted, aborted + 1);
    client.shutdown();
}

/// Timestamps from the real oracle, except that calls numbered in `fail_on` (from 1) fail.
struct FailingTso {
    real: Arc<dyn percolator::oracle::TimestampSource>,
    calls: std::sync::atomic::AtomicUsize,
    fail_on: Vec<usize>,
}

#[async_trait::async_trait]
impl percolator::oracle::TimestampSource for FailingTso {
    async fn timestamp(&self) -> percolator::Result<u64> {
        let n = self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        if self.fail_on.contains(&n) {
            return Err(Error::OracleUnavailable {
                addrs: vec!["test".into()],
                reason: format!("call {n} refused"),
            });
        }
        self.real.timestamp().await
    }
}

/// The first read and the commit point carry their timestamps in their requests. When the
/// oracle fails there, the request is never sent: the error is the oracle's, a failed commit
/// rolls its locks back, and the stored data is untouched.
#[test]
fn oracle_failures_where_timestamps_travel_with_requests_change_nothing() {
    let env = Env::start();
    let t = env.table("tso_fail");
    let (x, y) = (env.key(&t, "x"), env.key(&t, "y"));
    env.client()
        .run(|txn| {
            txn.set(&t, "x", FAMILY, "q", "1")?;
            txn.set(&t, "y", FAMILY, "q", "1")
        })
        .unwrap();
    // Call 1: the first read's start timestamp. Call 3: the commit timestamp (2 is the start of
    // the blind write below, which prewrites; 3 is its commit point).
    let tso = Arc::new(FailingTso {
        real: env.tso.clone(),
        calls: Default::default(),
        fail_on: vec![1, 3],
    });
    let client = env.client_on(Arc::new(env.hbase.clone()), tso, env.options());
    let reader = client.begin().unwrap();
    let err = reader.get(&t, "x", FAMILY, "q").unwrap_err();
    assert!(matches!(err, Error::OracleUnavailable { .. }), "{err}");
    assert_eq!(reader.get(&t, "x", FAMILY, "q").unwrap(), value("1"));

    let mut writer = client.begin().unwrap();
    writer.set(&t, "x", FAMILY, "q", "2").unwrap();
    writer.set(&t, "y", FAMILY, "q", "2").unwrap();
    let err = writer.commit().unwrap_err();
    assert!(matches!(err, Error::OracleUnavailable { .. }), "{err}");
    env.assert_no_locks(&t);
    for k in [&x, &y] {
        let puts = env
            .writes(k)
            .into_iter()
            .filter(|(_, w)| w.kind == WriteKind::Put);
        assert_eq!(puts.count(), 1, "{k}: only the first write committed");
    }
    let after = env.client().begin().unwrap();
    assert_eq!(get(&after, &t, "x"), value("1"));
    assert_eq!(get(&after, &t, "y"), value("1"));
    client.shutdown();
}

/// Background secondary commits: `commit` returns once the commit point is written, while a
/// secondary commit is still held; other transactions commit meanwhile. Every secondary
/// lands, and shutdown waits for the held one.
#[test]
fn background_secondaries_are_tracked_and_drained_by_shutdown() {
    let env = Env::start();
    let t = env.table("burst");
    let store = FaultyStore::new(env.hbase.clone(), env.schema.clone());
    let gate = Gate::new();
    store.inject(CasKind::Commit, "a2", Fault::Hold(gate.clone()), 1);
    let options = env.options().to_builder().sync_secondaries(false).build();
    let client = env.client_on(store.clone(), env.tso.clone(), options);
    let _release = gate.opens_on_drop();
    let commit_pair = |name: &str| {
        let mut txn = client.begin().unwrap();
        for row in [format!("{name}1"), format!("{name}2")] {
            txn.set(&t, &row, FAMILY, "q", name).unwrap();
        }
        txn.commit().unwrap();
    };

    commit_pair("a");
    assert!(
        gate.wait_reached(Duration::from_secs(10)),
        "a's secondary commit goes out in the background"
    );
    assert!(
        matches!(env.lock_state(&env.key(&t, "a2")), LockState::Locked(_)),
        "a2 is held, and commit returned anyway"
    );
    for name in ["b", "c", "d"] {
        commit_pair(name);
    }
    let opener = {
        let gate = gate.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            gate.open();
        })
    };
    // Returns only once the held commit has landed.
    client.shutdown();
    opener.join().unwrap();
    let reader = env.client();
    let txn = reader.begin().unwrap();
    for name in ["a", "b", "c", "d"] {
        let key = env.key(&t, &format!("{name}2"));
        assert!(
            !matches!(env.lock_state(&key), LockState::Locked(_)),
            "{name}2 was committed before shutdown returned"
        );
        assert_eq!(get(&txn, &t, &format!("{name}2")), value(name));
    }
    reader.shutdown();
}
