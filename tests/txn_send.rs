//! The async API inside `tokio::spawn`: the future of `AsyncClient::run`, with a body that
//! borrows the task's locals, and of every other public async method is `Send`, so a service
//! can spawn its request handlers.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use percolator::oracle::{MemoryStore, TimestampSource};
use percolator::txn::{HBaseAccess, RowStream};
use percolator::{
    AsyncClient, AsyncTransaction, CellKey, HBaseClient, HBaseConfig, OracleServer, TxnOptions,
};

const ACCOUNTS: u64 = 8;
const TASKS: u64 = 4;
const ROUNDS: u64 = 25;
const START: i64 = 100;

fn balance(value: Option<Vec<u8>>) -> i64 {
    value
        .and_then(|v| String::from_utf8(v).ok()?.parse().ok())
        .unwrap_or(0)
}

/// Each spawned task loops over `client.run(async |txn| ...)` with a body that borrows the
/// task's locals (`from`, `to`, `amount`, a shared counter), as a service's request handler
/// does. The tasks overlap on accounts, so some attempts conflict and are retried.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_inside_tokio_spawn_moves_money_and_keeps_the_total() {
    let emulator = hbase_emulator::start_local().unwrap();
    let oracle = OracleServer::start_local(MemoryStore::new()).unwrap();
    let hbase = HBaseConfig::new(emulator.local_addr().to_string());
    let admin = HBaseClient::connect(hbase.clone()).unwrap();
    percolator::txn::setup::create_table(&admin, &Default::default(), "accounts", &["f"]).unwrap();
    let oracles = [oracle.local_addr().to_string()];
    let client = AsyncClient::connect(hbase, &oracles, TxnOptions::default())
        .await
        .unwrap();
    client
        .run(async |txn| {
            for i in 0..ACCOUNTS {
                txn.set(
                    "accounts",
                    format!("acct{i}"),
                    "f",
                    "balance",
                    START.to_string(),
                )?;
            }
            Ok(())
        })
        .await
        .unwrap();
    let committed_before = client.stats().committed;

    // Bodies that reached their end (attempts, not commits: a retried body counts again).
    let attempts = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for task in 0..TASKS {
        let client = client.clone();
        let attempts = Arc::clone(&attempts);
        tasks.push(tokio::spawn(async move {
            let mut moved = 0i64;
            for round in 0..ROUNDS {
                let source = (task + round) % ACCOUNTS;
                let from = format!("acct{source}");
                let to = format!("acct{}", (source + 1 + round % (ACCOUNTS - 1)) % ACCOUNTS);
                let amount = (round % 3 + 1) as i64;
                let sent = client
                    .run(async |txn| {
                        let a = balance(txn.get("accounts", &from, "f", "balance").await?);
                        let b = balance(txn.get("accounts", &to, "f", "balance").await?);
                        txn.set("accounts", &from, "f", "balance", (a - amount).to_string())?;
                        txn.set("accounts", &to, "f", "balance", (b + amount).to_string())?;
                        attempts.fetch_add(1, Ordering::Relaxed);
                        Ok(amount)
                    })
                    .await?;
                moved += sent;
            }
            Ok::<i64, percolator::Error>(moved)
        }));
    }
    let mut moved = 0;
    for task in tasks {
        moved += task
            .await
            .expect("a task panicked")
            .expect("a transfer failed");
    }
    assert!(moved > 0, "some money moved");

    let committed = client.stats().committed - committed_before;
    assert_eq!(committed, TASKS * ROUNDS, "every transfer committed once");
    let attempts = attempts.load(Ordering::Relaxed);
    assert!(
        attempts >= committed,
        "every committed transfer ran its body: {attempts} attempts, {committed} commits"
    );

    let txn = client.begin().await.unwrap();
    let mut total = 0;
    for i in 0..ACCOUNTS {
        let value = txn.get("accounts", format!("acct{i}"), "f", "balance");
        total += balance(value.await.unwrap());
    }
    assert_eq!(total, START * ACCOUNTS as i64, "transfers keep the total");
    client.shutdown().await;
}

/// A body may also be an `async fn`, and a spawned task may run it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_async_fn_is_a_body() {
    async fn open(txn: &mut AsyncTransaction) -> percolator::Result<u64> {
        txn.set("accounts", "carol", "f", "balance", "7")?;
        txn.start_ts().await
    }
    let emulator = hbase_emulator::start_local().unwrap();
    let oracle = OracleServer::start_local(MemoryStore::new()).unwrap();
    let hbase = HBaseConfig::new(emulator.local_addr().to_string());
    let admin = HBaseClient::connect(hbase.clone()).unwrap();
    percolator::txn::setup::create_table(&admin, &Default::default(), "accounts", &["f"]).unwrap();
    let oracles = [oracle.local_addr().to_string()];
    let client = AsyncClient::connect(hbase, &oracles, TxnOptions::default())
        .await
        .unwrap();
    let spawned = tokio::spawn({
        let client = client.clone();
        async move { client.run(open).await }
    });
    let start_ts = spawned.await.unwrap().unwrap();
    let txn = client.begin().await.unwrap();
    assert!(txn.start_ts().await.unwrap() > start_ts);
    let value = txn.get("accounts", "carol", "f", "balance").await.unwrap();
    assert_eq!(value, Some(b"7".to_vec()));
    client.shutdown().await;
}

/// Compile-time checks, never run: `public_futures_are_send` only names them.
fn send_checks(
    client: AsyncClient,
    txn: AsyncTransaction,
    store: Arc<dyn HBaseAccess>,
    tso: Arc<dyn TimestampSource>,
) {
    fn send<F: Future + Send>(_: F) {}
    /// What `tokio::spawn` asks. Checking a task that awaits the futures with borrowed
    /// arguments is stricter than checking each future: the task's `Send` check is the one
    /// that failed for `run` with an `AsyncFnMut` body.
    fn spawnable<F: Future + Send + 'static>(_: F) {}
    fn send_sync<T: Send + Sync>() {}
    send_sync::<AsyncClient>();
    send_sync::<AsyncTransaction>();
    send_sync::<RowStream<'static>>();

    // Each future on its own, over the caller's borrows.
    let table = String::from("t");
    let key = CellKey::new(&table, "r", "f", "q").unwrap();
    let keys = [key.clone()];
    let counter = AtomicU64::new(0);
    send(AsyncClient::new(
        store.clone(),
        tso.clone(),
        TxnOptions::default(),
    ));
    send(AsyncClient::connect(
        HBaseConfig::new("127.0.0.1:1"),
        &[String::from("127.0.0.1:2")],
        TxnOptions::default(),
    ));
    send(client.begin());
    send(client.run(async |txn| {
        counter.fetch_add(1, Ordering::Relaxed);
        txn.set(&table, "r", "f", "q", "v")
    }));
    send(client.transaction_status(&key, 1));
    send(client.drain());
    send(client.shutdown());
    let mut txn = txn;
    send(txn.start_ts());
    send(txn.get(&table, "r", "f", "q"));
    send(txn.get_many(&keys));
    send(txn.key_exists(&table, "r", "f", "q"));
    send(txn.scan(&table, "", "", 10));
    send(txn.scan_reverse(&table, "", "", 10));
    send(txn.get_for_update(&table, "r", "f", "q"));
    send(txn.insert(&table, "r", "f", "q", "v"));
    let mut rows = txn.scan_stream(&table, "", "").unwrap();
    send(rows.next());
    send(rows.take(3));
    send(txn.scan_reverse_stream(&table, "", "").unwrap().next());
    send(txn.commit());

    // The same futures awaited inside a task, over the task's own borrows.
    spawnable(async move {
        let table = String::from("t");
        let (from, to, amount) = (String::from("a"), String::from("b"), 5i64);
        let counter = Arc::new(AtomicU64::new(0));
        let key = CellKey::new(&table, "r", "f", "q")?;
        let keys = [key.clone()];
        let mut txn = client.begin().await?;
        txn.start_ts().await?;
        txn.get(&table, &from, "f", "q").await?;
        txn.get_many(&keys).await?;
        txn.key_exists(&table, &to, "f", "q").await?;
        txn.scan(&table, &from, &to, 10).await?;
        txn.scan_reverse(&table, &from, &to, 10).await?;
        txn.get_for_update(&table, &from, "f", "q").await?;
        txn.insert(&table, &to, "f", "q", amount.to_string())
            .await?;
        let mut rows = txn.scan_stream(&table, &from, &to)?;
        while rows.next().await?.is_some() {}
        txn.scan_reverse_stream(&table, "", "")?.take(2).await?;
        txn.commit().await?;
        let snapshot = client.snapshot(1)?;
        snapshot.get(&table, &from, "f", "q").await?;
        client
            .run(async |txn| {
                let a = txn.get(&table, &from, "f", "q").await?;
                txn.set(&table, &to, "f", "q", a.unwrap_or_default())?;
                txn.set(&table, &from, "f", "q", amount.to_string())?;
                counter.fetch_add(1, Ordering::Relaxed);
                Ok(())
            })
            .await?;
        client.transaction_status(&key, 1).await?;
        client.drain().await;
        client.shutdown().await;
        let other = AsyncClient::new(store, tso, TxnOptions::default()).await?;
        other.shutdown().await;
        let oracles = [String::from("127.0.0.1:2")];
        let connected = AsyncClient::connect(
            HBaseConfig::new("127.0.0.1:1"),
            &oracles,
            Default::default(),
        )
        .await?;
        connected.shutdown().await;
        Ok::<(), percolator::Error>(())
    });
}

/// The checks in `send_checks` are made when this file compiles; this names them so that they
/// are compiled.
#[test]
fn public_futures_are_send() {
    let _checks: fn(AsyncClient, AsyncTransaction, Arc<dyn HBaseAccess>, Arc<dyn TimestampSource>) =
        send_checks;
}
