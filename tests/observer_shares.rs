//! How the work spreads over workers when the row keys share a long prefix, as most keys do
//! (`user000123`): partitions are buckets of a hash of the row key, so every worker gets a
//! share. The ignored test measures the shares over 100000 such keys (docs/observers.md).

mod txn_support;

use std::time::{Duration, Instant};

use percolator::observer::{ObservedColumn, Observer, ObserverSet, ObserverWorker, WorkerConfig};
use percolator::{AsyncTransaction, Client, Result};
use txn_support::{Env, FAMILY};

/// Copies `f:q` to `f:copy`.
struct Copy;

#[percolator::observer::async_trait]
impl Observer for Copy {
    async fn process(
        &self,
        txn: &mut AsyncTransaction,
        row: &[u8],
        col: &ObservedColumn,
    ) -> Result<()> {
        let v = txn.get(&col.table, row, FAMILY, "q").await?;
        txn.set(&col.table, row, FAMILY, "copy", v.unwrap_or_default())
    }
}

/// Starts `n` workers with the default configuration on `t`, and waits until the partitions
/// are shared evenly (16 / n each).
fn settled_workers(env: &Env, t: &str, n: usize) -> (Client, Vec<ObserverWorker>) {
    let client = env.client();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let workers: Vec<ObserverWorker> = (0..n)
        .map(|_| {
            let set = ObserverSet::new()
                .observe(ObservedColumn::new(t, FAMILY, "q"), "copy", Copy)
                .unwrap();
            rt.block_on(ObserverWorker::start(
                client.asynchronous(),
                set,
                WorkerConfig::default(),
            ))
            .unwrap()
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    while workers
        .iter()
        .any(|w| w.stats().partitions as usize != 16 / n)
    {
        let held: Vec<u64> = workers.iter().map(|w| w.stats().partitions).collect();
        assert!(
            Instant::now() < deadline,
            "partitions never shared: {held:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    (client, workers)
}

/// Commits `user000000`.. (`rows` of them, 50 per transaction), waits until every change is
/// processed, and returns the runs each worker made.
fn shares(rows: usize) -> Vec<u64> {
    let env = Env::start();
    let t = env.table("obs_shares");
    let (client, workers) = settled_workers(&env, &t, 4);
    let writer = env.client();
    let keys: Vec<String> = (0..rows).map(|i| format!("user{i:06}")).collect();
    for chunk in keys.chunks(50) {
        writer
            .run(|txn| {
                for key in chunk {
                    txn.set(&t, key, FAMILY, "q", "v")?;
                }
                Ok(())
            })
            .unwrap();
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(workers[0].wait_idle(Duration::from_secs(300)))
        .unwrap();
    // A worker counts a run once its commit returned, after wait_idle can see it cleared.
    let counted = || workers.iter().map(|w| w.stats().processed).sum::<u64>();
    let deadline = Instant::now() + Duration::from_secs(10);
    while counted() < rows as u64 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let runs: Vec<u64> = workers.iter().map(|w| w.stats().processed).collect();
    for worker in workers {
        rt.block_on(worker.shutdown());
    }
    writer.shutdown();
    client.shutdown();
    runs
}

/// With partitions by the first byte, every `user...` key fell in one partition, and one
/// worker made every run while the others had nothing to scan.
#[test]
fn keys_sharing_a_prefix_spread_over_every_worker() {
    let runs = shares(400);
    assert_eq!(
        runs.iter().sum::<u64>(),
        400,
        "one run per change: {runs:?}"
    );
    assert!(
        runs.iter().all(|&n| n > 0),
        "a worker made no run: {runs:?}"
    );
}

#[test]
#[ignore = "a measurement: cargo test --release --test observer_shares -- --ignored --nocapture"]
fn shares_of_100000_keys_with_a_shared_prefix() {
    let started = Instant::now();
    let runs = shares(100_000);
    let total: u64 = runs.iter().sum();
    let pct: Vec<String> = runs
        .iter()
        .map(|&n| format!("{:.1}%", 100.0 * n as f64 / total as f64))
        .collect();
    println!(
        "runs per worker: {runs:?} ({}), {total} in all, {:.1} s",
        pct.join(", "),
        started.elapsed().as_secs_f64()
    );
}
