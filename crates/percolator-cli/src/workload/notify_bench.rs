//! The `notify` bench workload: each task commits a change to an observed column and waits
//! for the observer's transaction on it to commit; latency is from the writer's commit to the
//! observer's commit, throughput is processed notifications per second. One `ObserverWorker`
//! with the default configuration runs in the bench process.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::Rng;
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

pub struct NotifyBench {
    table: String,
    waiters: Waiters,
    next: AtomicU64,
    worker: Mutex<Option<ObserverWorker>>,
}

impl NotifyBench {
    /// Starts the worker on `table` (transactional, family `f`) through `client`.
    pub async fn start(client: AsyncClient, table: &str) -> Result<NotifyBench> {
        let waiters = Waiters::default();
        let set = ObserverSet::new().observe(
            ObservedColumn::new(table, F, Q),
            "bench_echo",
            Echo {
                waiters: Arc::clone(&waiters),
            },
        )?;
        let worker = ObserverWorker::start(client, set, WorkerConfig::default()).await?;
        Ok(NotifyBench {
            table: table.to_string(),
            waiters,
            next: AtomicU64::new(0),
            worker: Mutex::new(Some(worker)),
        })
    }

    /// One change and its observer run: when the change committed, and the outcome.
    pub async fn op(&self, client: &AsyncClient, rng: &mut StdRng) -> (Instant, Result<()>) {
        // A fresh row each time, its first byte random so rows spread over the partitions.
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let mut row = vec![rng.gen::<u8>()];
        row.extend_from_slice(&n.to_be_bytes());
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

    pub async fn shutdown(&self) {
        let worker = self.worker.lock().take();
        if let Some(worker) = worker {
            worker.shutdown().await;
        }
    }
}
