//! Large transactions (docs/design.md, "Large transactions"): a commit sends a bounded window
//! of checkAndMutates at a time whatever its size, a failed prewrite stops the prewrites and
//! rolls back what it locked, and a transaction past `TxnOptions::max_txn_bytes` is refused
//! before anything of it is written.

mod txn_support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use percolator::hbase::{CheckAndMutate, Delete, Get, Put, RowResult, Scan, TableDescriptor};
use percolator::txn::{HBaseAccess, Seam};
use percolator::{Error, Result, RetryClass};
use txn_support::Env;

/// The most checkAndMutates a commit has in flight at once (`txn::batches::WINDOW`).
const WINDOW: usize = 256;

/// A store that counts the checkAndMutates in flight, and the most there ever were.
struct InFlight {
    inner: Arc<dyn HBaseAccess>,
    now: AtomicUsize,
    most: AtomicUsize,
    calls: AtomicUsize,
}

impl InFlight {
    fn new(env: &Env) -> Arc<InFlight> {
        Arc::new(InFlight {
            inner: Arc::new(env.hbase.clone()),
            now: AtomicUsize::new(0),
            most: AtomicUsize::new(0),
            calls: AtomicUsize::new(0),
        })
    }

    /// The most in flight since the last call, and how many were made.
    fn take(&self) -> (usize, usize) {
        (
            self.most.swap(0, Ordering::SeqCst),
            self.calls.swap(0, Ordering::SeqCst),
        )
    }
}

#[async_trait]
impl HBaseAccess for InFlight {
    async fn get_many(&self, table: &str, gets: &[Get]) -> Result<Vec<RowResult>> {
        self.inner.get_many(table, gets).await
    }

    async fn check_and_mutate(&self, table: &str, cam: &CheckAndMutate) -> Result<bool> {
        let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        self.calls.fetch_add(1, Ordering::SeqCst);
        let done = self.inner.check_and_mutate(table, cam).await;
        self.now.fetch_sub(1, Ordering::SeqCst);
        done
    }

    async fn scan_page(&self, table: &str, scan: &Scan, rows: i32) -> Result<Vec<RowResult>> {
        self.inner.scan_page(table, scan, rows).await
    }

    async fn put(&self, table: &str, put: &Put) -> Result<()> {
        self.inner.put(table, put).await
    }

    async fn delete(&self, table: &str, delete: &Delete) -> Result<()> {
        self.inner.delete(table, delete).await
    }

    async fn table_descriptor(&self, table: &str) -> Result<TableDescriptor> {
        self.inner.table_descriptor(table).await
    }
}

fn row(i: usize) -> String {
    format!("r{i:06}")
}

/// Before: every cell's prewrite was sent at once, each holding its own request, and so were
/// the secondaries' commits: 4,000 checkAndMutates in flight for 4,000 cells.
#[test]
fn a_commit_of_many_cells_keeps_at_most_a_window_of_requests_in_flight() {
    let env = Env::start();
    let t = env.table("wide");
    let store = InFlight::new(&env);
    // The heartbeat's CAS on the primary lock (after a third of the TTL) is not the commit's
    // own request: a slow machine's commit outlives a 3 s TTL's third, so the TTL is long here.
    let options = env
        .options()
        .to_builder()
        .lock_ttl(Duration::from_secs(600));
    let client = env.client_on(store.clone(), env.tso.clone(), options.build());
    let cells = 4_000;
    let mut txn = client.begin().unwrap();
    for i in 0..cells {
        txn.set(&t, row(i), "f", "q", format!("v{i}")).unwrap();
    }
    store.take();
    txn.commit().unwrap();
    let (most, calls) = store.take();
    // Each cell once in each phase, and a prewrite whose guess of the lock cell's variant was
    // wrong (those sent before the table's first answers came back) one CAS more.
    assert!(calls >= 2 * cells, "{calls} checkAndMutates");
    assert!(
        (2..=WINDOW).contains(&most),
        "{most} checkAndMutates in flight at once"
    );

    let reader = client.begin().unwrap();
    let keys: Vec<_> = (0..cells).map(|i| env.key(&t, &row(i))).collect();
    let values = reader.get_many(&keys).unwrap();
    for (i, v) in values.iter().enumerate() {
        assert_eq!(v.as_deref(), Some(format!("v{i}").as_bytes()), "cell {i}");
    }
    client.shutdown();
}

/// A prewrite refused midway (a cell locked by a live transaction) stops the prewrites: the
/// cells after it are never sent, and every lock taken is rolled back. Before: all 4,000
/// prewrites went out, and 3,999 rollbacks after them.
#[test]
fn a_refused_prewrite_stops_the_rest_and_leaves_no_lock_of_ours() {
    let env = Env::start();
    let t = env.table("refused");
    let cells = 4_000;
    let blocked = row(1_000);
    // A live transaction holds `blocked`: its commit waits before its commit point until told.
    let (reached, wait) = (std::sync::mpsc::channel(), std::sync::mpsc::channel::<()>());
    let (reached_tx, wait_rx) = (reached.0, parking_lot::Mutex::new(wait.1));
    let holding = env
        .options()
        .to_builder()
        .crash_injector(Arc::new(move |seam| {
            if seam == Seam::BeforePrimaryCommit {
                let _ = reached_tx.send(());
                let _ = wait_rx.lock().recv();
            }
            false
        }));
    let holder = env.client_with(holding.build());
    let (t2, blocked2) = (t.clone(), blocked.clone());
    let holder_commit = std::thread::spawn(move || {
        let mut txn = holder.begin().unwrap();
        txn.set(&t2, blocked2, "f", "q", "theirs").unwrap();
        let committed = txn.commit();
        holder.shutdown();
        committed
    });
    reached.1.recv().unwrap();

    let store = InFlight::new(&env);
    let client = env.client_on(store.clone(), env.tso.clone(), env.options());
    let mut txn = client.begin().unwrap();
    for i in 0..cells {
        txn.set(&t, row(i), "f", "q", "ours").unwrap();
    }
    store.take();
    let refused = txn.commit().unwrap_err();
    assert!(matches!(refused, Error::KeyLocked { .. }), "{refused:?}");
    let (_, calls) = store.take();
    assert!(
        calls < 2 * cells,
        "{calls} checkAndMutates: prewrites went on after the refusal"
    );
    let locks = percolator::locks::list_locks(&env.hbase, &env.schema, &t).unwrap();
    let ours: Vec<_> = locks
        .iter()
        .filter(|l| l.key.row != blocked.as_bytes())
        .map(|l| l.key.to_string())
        .collect();
    assert!(ours.is_empty(), "locks of ours left: {ours:?}");

    wait.0.send(()).unwrap();
    holder_commit.join().unwrap().unwrap();
    let reader = client.begin().unwrap();
    assert_eq!(
        reader.get(&t, &blocked, "f", "q").unwrap().as_deref(),
        Some(&b"theirs"[..])
    );
    assert_eq!(reader.get(&t, row(0), "f", "q").unwrap(), None);
    client.shutdown();
}

/// A write past the byte limit is refused where it is made, with the sizes, as fatal; the
/// transaction's commit then writes nothing, and `run` does not retry it.
#[test]
fn a_transaction_past_its_byte_limit_is_refused_before_anything_is_written() {
    let env = Env::start();
    let t = env.table("limited");
    let options = env.options().to_builder().max_txn_bytes(10_000).build();
    let client = env.client_with(options);
    let mut attempts = 0;
    let refused = client
        .run(|txn| {
            attempts += 1;
            for i in 0..1_000 {
                txn.set(&t, row(i), "f", "q", vec![b'x'; 100])?;
            }
            Ok(())
        })
        .unwrap_err();
    assert_eq!(refused.retry_class(), RetryClass::Fatal);
    let Error::TransactionTooLarge {
        cells,
        bytes,
        limit,
    } = refused
    else {
        panic!("{refused:?}")
    };
    // Each cell: a 7-byte row, a 1-byte family and qualifier, 100 bytes of value.
    assert_eq!((cells, bytes, limit), (92, 92 * 109, 10_000));
    assert_eq!(attempts, 1, "a fatal error is not retried");

    let rows = env.hbase.scan(&t, &Scan::new()).unwrap().count();
    assert_eq!(rows, 0, "nothing of the transaction reached the table");
    client.shutdown();
}
