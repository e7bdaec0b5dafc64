//! The `notify` bench workload: each task commits a change to an observed column and waits
//! for the observer's transaction on it to commit; latency is from the writer's commit to the
//! observer's commit, throughput is processed notifications per second. One `ObserverWorker`
//! with the default configuration runs in the bench process; `notify_kill` runs two, and
//! kills one (as a crash: its leases and worker row stay behind) and starts a replacement
//! every `KILL_EVERY`, so its lag includes the handovers.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::sync::oneshot;

use percolator::observer::{
    CommittedRun, ObservedColumn, Observer, ObserverSet, ObserverWorker, WorkerConfig,
};
use percolator::{AsyncClient, AsyncTransaction};
use percolator::{Error, Result};

const F: &str = "f";
const Q: &str = "q";
const OUT: &str = "out";
/// A writer gives up waiting for its observer after this long (counted as an error).
const WAIT: Duration = Duration::from_secs(10);
/// How often `notify_kill` kills a worker and starts another.
pub const KILL_EVERY: Duration = Duration::from_secs(5);

type Waiters = Arc<Mutex<HashMap<Vec<u8>, oneshot::Sender<()>>>>;

/// Copies the value to `f:out` and wakes the writer waiting for this row.
struct Echo {
    waiters: Waiters,
}

#[percolator::observer::async_trait]
impl Observer for Echo {
    async fn process(
        &self,
        txn: &mut AsyncTransaction,
        row: &[u8],
        col: &ObservedColumn,
    ) -> Result<()> {
        let v = txn.get(&col.table, row, F, Q).await?.unwrap_or_default();
        txn.set(&col.table, row, F, OUT, v)
    }

    fn committed(&self, row: &[u8], _: &ObservedColumn, _: &CommittedRun) {
        if let Some(tx) = self.waiters.lock().remove(row) {
            let _ = tx.send(());
        }
    }
}

/// Makes a client of its own for each worker of `notify_kill`, so that killing the worker
/// can kill its client as a crash would (its liveness row then expires and its locks go stale).
pub type ClientFactory =
    Arc<dyn Fn() -> futures::future::BoxFuture<'static, Result<AsyncClient>> + Send + Sync>;

pub struct NotifyBench {
    table: String,
    client: AsyncClient,
    new_client: Option<ClientFactory>,
    waiters: Waiters,
    next: AtomicU64,
    /// The workers, each with the client of its own it runs on (`notify_kill`).
    workers: tokio::sync::Mutex<Vec<(ObserverWorker, Option<AsyncClient>)>>,
    /// The task that kills and replaces workers (`notify_kill`), and its stop signal.
    replacer: Mutex<Option<(oneshot::Sender<()>, tokio::task::JoinHandle<()>)>>,
}

impl NotifyBench {
    /// Starts one worker on `table` (transactional, family `f`) through `client`.
    pub async fn start(client: AsyncClient, table: &str) -> Result<Arc<NotifyBench>> {
        Self::with_workers(client, None, table, 1).await
    }

    async fn with_workers(
        client: AsyncClient,
        new_client: Option<ClientFactory>,
        table: &str,
        workers: usize,
    ) -> Result<Arc<NotifyBench>> {
        let bench = Arc::new(NotifyBench {
            table: table.to_string(),
            client,
            new_client,
            waiters: Waiters::default(),
            next: AtomicU64::new(0),
            workers: tokio::sync::Mutex::new(Vec::new()),
            replacer: Mutex::new(None),
        });
        for _ in 0..workers {
            let worker = bench.start_worker().await?;
            bench.workers.lock().await.push(worker);
        }
        Ok(bench)
    }

    /// Starts two workers, each on a client of its own from `new_client`, and a task that
    /// every `every` kills the older one with its client (a crash) and starts a replacement
    /// (stopped by [`shutdown`](Self::shutdown)). `client` writes the changes.
    pub async fn start_killing(
        client: AsyncClient,
        new_client: ClientFactory,
        table: &str,
        every: Duration,
    ) -> Result<Arc<NotifyBench>> {
        let bench = Self::with_workers(client, Some(new_client), table, 2).await?;
        let (stop, mut stopped) = oneshot::channel();
        let replacing = Arc::clone(&bench);
        let task = tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = &mut stopped => return,
                    _ = tokio::time::sleep(every) => {}
                }
                let mut workers = replacing.workers.lock().await;
                let (victim, its_client) = workers.remove(0);
                victim.kill();
                if let Some(client) = &its_client {
                    client.kill();
                }
                victim.shutdown().await;
                match replacing.start_worker().await {
                    Ok(worker) => workers.push(worker),
                    // The bench's writers then time out, and report it as errors.
                    Err(e) => tracing::warn!(error = %e, "could not start a replacement worker"),
                }
            }
        });
        *bench.replacer.lock() = Some((stop, task));
        Ok(bench)
    }

    async fn start_worker(&self) -> Result<(ObserverWorker, Option<AsyncClient>)> {
        let own = match &self.new_client {
            Some(new_client) => Some(new_client().await?),
            None => None,
        };
        let set = ObserverSet::new().observe(
            ObservedColumn::new(&self.table, F, Q),
            "bench_echo",
            Echo {
                waiters: Arc::clone(&self.waiters),
            },
        )?;
        let client = own.clone().unwrap_or_else(|| self.client.clone());
        let worker = ObserverWorker::start(client, set, WorkerConfig::default()).await?;
        Ok((worker, own))
    }

    /// One change and its observer run: when the change committed, and the outcome.
    pub async fn op(&self, client: &AsyncClient) -> (Instant, Result<()>) {
        // A fresh row each time: keys in sequence, which the partitions' hash spreads.
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let row = n.to_be_bytes().to_vec();
        let (tx, rx) = oneshot::channel();
        self.waiters.lock().insert(row.clone(), tx);
        let committed = async {
            let mut txn = client.begin().await?;
            txn.set(&self.table, &row, F, Q, n.to_be_bytes().to_vec())?;
            txn.commit().await
        }
        .await;
        let t0 = Instant::now();
        if let Err(e) = committed {
            self.waiters.lock().remove(&row);
            return (t0, Err(e));
        }
        let outcome = match tokio::time::timeout(WAIT, rx).await {
            Ok(Ok(())) => Ok(()),
            _ => {
                self.waiters.lock().remove(&row);
                Err(Error::Timeout {
                    what: "the observer run of a bench change".into(),
                    after: WAIT,
                })
            }
        };
        (t0, outcome)
    }

    /// Stops the replacing task, then drains every worker.
    pub async fn shutdown(&self) {
        let replacer = self.replacer.lock().take();
        if let Some((stop, task)) = replacer {
            let _ = stop.send(());
            let _ = task.await;
        }
        let workers = std::mem::take(&mut *self.workers.lock().await);
        for (worker, own) in workers {
            worker.shutdown().await;
            if let Some(client) = own {
                client.shutdown().await;
            }
        }
    }
}
