//! The protocol's floor: the HBase calls and timestamps a transaction of the bench makes, built by
//! the protocol's own pieces (the stored lock and its encoding, the prewrite and commit actions,
//! the snapshot reader's Gets and its read decision) and issued straight through the HBase client,
//! with none of the transaction layer around them (no session, committer, liveness, lock guessing,
//! read fusion or background-commit tracking).
//!
//! `floor_get` is `txn_get`'s work (a start_ts, one Get of the cell's lock and write columns);
//! `floor_put1` is `txn_put1`'s work (a start_ts from the oracle's spares, the prewrite CAS, a
//! commit_ts, the commit CAS); `floor_transfer2` is `txn_transfer2`'s (a start_ts, one
//! getMultiple of the two rows' lock and write columns, the two prewrites side by side, a
//! commit_ts, the primary's commit, and the secondary's in the background, as a transaction
//! commits its secondaries once its commit point is passed). `txn_X / floor_X` is what the
//! transaction layer costs on top of the protocol, and `floor_X / raw_Y` the most any client of
//! this protocol could reach against the same gateway: "two round trips against one", measured
//! with the real requests instead of assumed.
//!
//! Every bench task writes only the rows of its own slice, so floor operations never conflict
//! and never need the recovery paths a real transaction has; a failed CAS or a lock that stays
//! means something else wrote the table, and the operation fails (counted as an error).

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use rand::Rng;
use tokio::task::JoinHandle;

use percolator::format::{encode_lock, Lock, MutationKind};
use percolator::hbase::{AsyncHBaseClient, CheckAndMutate, Get};
use percolator::internals::{fetched_column, row_gets, FIRST_VERSIONS};
use percolator::oracle::TimestampSource;
use percolator::txn::actions::{self, ReadDecision};
use percolator::txn::LockGranularity::Cell;
use percolator::txn::{CellKey, TxnOptions};
use percolator::{Error, Result};

use crate::rows::{one_row, two_rows};

pub const FLOOR_GET: &str = "floor_get";
pub const FLOOR_PUT1: &str = "floor_put1";
pub const FLOOR_TRANSFER2: &str = "floor_transfer2";
/// Run by default on the async API, after the raw and transactional workloads.
pub const FLOOR_WORKLOADS: [&str; 3] = [FLOOR_GET, FLOOR_PUT1, FLOOR_TRANSFER2];

/// How long, and how often, a read waits for a lock left by the table's filling to go.
const LOCK_WAIT: Duration = Duration::from_millis(1);
const LOCK_WAIT_TRIES: usize = 5_000;

/// What the floor workloads share.
pub(crate) struct Floor {
    pub hbase: AsyncHBaseClient,
    pub tso: Arc<dyn TimestampSource>,
    /// The bench clients' options: schema, lock TTL, short-value limit, blind-write start age,
    /// clock.
    pub options: TxnOptions,
    pub table: String,
    pub family: &'static str,
    pub qualifier: &'static str,
    /// The owner its locks name: the bench client's own, so that a floor lock carries the
    /// bytes a transaction's does (a client's owner is host, process and a UUID, some 45
    /// bytes), and each CAS sends and compares as much.
    pub owner: String,
}

/// One bench task's part: its rows (`rows::task_rows`, its alone for the floors), and its
/// secondary commit under way (with the row it commits).
pub(crate) struct FloorTask {
    pub rows: Range<usize>,
    secondary: Option<(usize, JoinHandle<Result<()>>)>,
}

impl FloorTask {
    pub fn new(rows: Range<usize>) -> FloorTask {
        FloorTask {
            rows,
            secondary: None,
        }
    }

    /// Waits for the secondary commit under way, if any: before the task ends, or starts
    /// another.
    pub async fn settle(&mut self) -> Result<()> {
        match self.secondary.take() {
            None => Ok(()),
            Some((_, commit)) => commit.await.map_err(|e| Error::IllegalArgument {
                message: format!("floor workload: a secondary commit did not finish: {e}"),
            })?,
        }
    }

    /// Waits for the secondary commit under way if it is of one of `rows`: a prewrite of that
    /// row must find it released.
    async fn settle_any_of(&mut self, rows: &[usize]) -> Result<()> {
        match &self.secondary {
            Some((row, _)) if rows.contains(row) => self.settle().await,
            _ => Ok(()),
        }
    }
}

/// One cell a floor operation writes: its key, its lock as stored (and the lock's bytes, which
/// the prewrite writes and the commit compares) and its value.
struct CellWrite {
    key: CellKey,
    lock: Lock,
    bytes: Vec<u8>,
    value: Vec<u8>,
}

impl Floor {
    /// `txn_get`'s calls on a row of this task's slice: a start_ts, then one Get of the cell's
    /// lock and write columns (a short value is in the write record).
    pub async fn get(&self, task: &mut FloorTask, rng: &mut impl Rng) -> Result<()> {
        let key = self.key(one_row(rng, &task.rows))?;
        let start_ts = self.tso.timestamp().await?;
        let (gets, _) = self.snapshot_gets(&[key], start_ts);
        self.hbase.get(&self.table, &gets[0]).await.map(drop)
    }

    /// `txn_put1`'s calls on a row of this task's slice: a blind write, so no read.
    pub async fn put1(&self, task: &mut FloorTask, rng: &mut impl Rng) -> Result<()> {
        let row = one_row(rng, &task.rows);
        task.settle_any_of(&[row]).await?;
        let key = self.key(row)?;
        let start_ts = match self
            .tso
            .recent_timestamp(self.options.blind_write_start_age())
        {
            Some(ts) => ts,
            None => self.tso.timestamp().await?,
        };
        let [w] = self.writes(start_ts, [(key, b"7".to_vec())]);
        self.cas(&self.prewrite_cas(&w), &w.key).await?;
        let commit_ts = self.tso.timestamp().await?;
        self.cas(&self.commit_cas(&w, commit_ts), &w.key).await
    }

    /// `txn_transfer2`'s calls on two rows of this task's slice.
    pub async fn transfer2(&self, task: &mut FloorTask, rng: &mut impl Rng) -> Result<()> {
        let (a, b) = two_rows(rng, &task.rows);
        let rows = [a, b];
        task.settle_any_of(&rows).await?;
        let keys = [self.key(rows[0])?, self.key(rows[1])?];
        let start_ts = self.tso.timestamp().await?;
        let values = self.read_released(&keys, start_ts).await?;
        let mut values = values.into_iter();
        let [primary, secondary] = self.writes(
            start_ts,
            keys.map(|key| {
                let next = crate::rows::add_one(values.next().flatten().as_deref());
                (key, next)
            }),
        );
        let (first, second) = futures::future::join(
            self.cas(&self.prewrite_cas(&primary), &primary.key),
            self.cas(&self.prewrite_cas(&secondary), &secondary.key),
        )
        .await;
        first.and(second)?;
        let commit_ts = self.tso.timestamp().await?;
        self.cas(&self.commit_cas(&primary, commit_ts), &primary.key)
            .await?;
        let commit = self.commit_cas(&secondary, commit_ts);
        // Three round trips ago at least: done by now but for a rare straggler.
        task.settle().await?;
        let (hbase, table) = (self.hbase.clone(), self.table.clone());
        let commit =
            tokio::spawn(async move { cas(&hbase, &table, &commit, &secondary.key).await });
        task.secondary = Some((rows[1], commit));
        Ok(())
    }

    /// The values of `keys` at `start_ts`, read as the snapshot reader does, again until no
    /// row holds a lock. Floor operations never meet each other's locks; the only ones they can
    /// meet are those of the transaction that filled the table, whose secondaries commit in the
    /// background just after it returns.
    async fn read_released(&self, keys: &[CellKey], start_ts: u64) -> Result<Vec<Option<Vec<u8>>>> {
        let schema = &self.options.schema();
        let (gets, qualifiers) = self.snapshot_gets(keys, start_ts);
        'read: for _ in 0..LOCK_WAIT_TRIES {
            let got = self.hbase.get_many(&self.table, &gets).await?;
            let mut values = Vec::with_capacity(keys.len());
            for ((row, q), key) in got.iter().zip(&qualifiers).zip(keys) {
                match fetched_column(schema, Cell, row, q, key, start_ts, FIRST_VERSIONS)?.decision
                {
                    ReadDecision::Value(v) => values.push(Some(v)),
                    ReadDecision::Missing => values.push(None),
                    ReadDecision::Blocked(_) => {
                        tokio::time::sleep(LOCK_WAIT).await;
                        continue 'read;
                    }
                    // The bench's values are short, so the write record carries them.
                    ReadDecision::FetchData { .. } | ReadDecision::NeedMoreVersions => {
                        return Err(Error::IllegalArgument {
                            message: format!("floor workload: no short value at {key}"),
                        })
                    }
                }
            }
            return Ok(values);
        }
        Err(Error::IllegalArgument {
            message: format!("floor workload: a row of {} stayed locked", self.table),
        })
    }

    /// The snapshot reader's Gets for `keys` (one row each) at `start_ts`, and their columns'
    /// qualifiers.
    fn snapshot_gets(&self, keys: &[CellKey], start_ts: u64) -> (Vec<Get>, Vec<Vec<u8>>) {
        let schema = &self.options.schema();
        let qualifiers: Vec<Vec<u8>> = keys.iter().map(|k| schema.qualifier(k)).collect();
        let pending: Vec<usize> = (0..keys.len()).collect();
        let (gets, _) = row_gets(
            schema,
            Cell,
            keys,
            &qualifiers,
            &pending,
            Some(start_ts),
            FIRST_VERSIONS,
        );
        (gets, qualifiers)
    }

    /// The cells of one floor operation at `start_ts`, the first one its primary, each with
    /// its lock as a committer builds it: one wall time for all, the value inline when short.
    fn writes<const N: usize>(
        &self,
        start_ts: u64,
        writes: [(CellKey, Vec<u8>); N],
    ) -> [CellWrite; N] {
        let primary = writes[0].0.clone();
        let wall_ms = self.options.clock().now_ms();
        writes.map(|(key, value)| {
            let lock = Lock {
                start_ts,
                kind: MutationKind::Put,
                primary: primary.clone(),
                owner: self.owner.clone(),
                wall_ms,
                ttl_ms: self.options.lock_ttl().as_millis() as u64,
                short_value: Some(value.clone())
                    .filter(|v| v.len() <= self.options.short_value_limit()),
                row: None,
                primary_row: false,
            };
            let bytes = encode_lock(&lock);
            CellWrite {
                key,
                lock,
                bytes,
                value,
            }
        })
    }

    /// The prewrite CAS of a cell that has a lock cell (the table's filling wrote every row).
    fn prewrite_cas(&self, w: &CellWrite) -> CheckAndMutate {
        let schema = self.options.schema();
        actions::prewrite(schema, &w.key, &w.lock, &w.bytes, Some(&w.value), false)
    }

    fn commit_cas(&self, w: &CellWrite, commit_ts: u64) -> CheckAndMutate {
        actions::commit(self.options.schema(), &w.key, &w.lock, &w.bytes, commit_ts)
    }

    fn key(&self, row: usize) -> Result<CellKey> {
        Ok(CellKey::new(
            self.table.as_str(),
            crate::rows::row(row),
            self.family,
            self.qualifier,
        )?)
    }

    async fn cas(&self, cam: &CheckAndMutate, key: &CellKey) -> Result<()> {
        cas(&self.hbase, &self.table, cam, key).await
    }
}

/// Applies `cam`; its failure is an error, since floor operations never conflict.
async fn cas(
    hbase: &AsyncHBaseClient,
    table: &str,
    cam: &CheckAndMutate,
    key: &CellKey,
) -> Result<()> {
    if hbase.check_and_mutate(table, cam).await? {
        return Ok(());
    }
    Err(Error::IllegalArgument {
        message: format!(
            "floor workload: a CAS on {key} failed (rows are per task, so nothing should conflict)"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rows::task_rows;
    use crate::stack::Stack;
    use percolator::format::{decode_lock_state, LockState};
    use percolator::hbase::Get;
    use percolator::txn::{self, LivenessConfig};
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    const ROWS: usize = 8;
    const TASKS: usize = 2;
    const OPS: usize = 25;

    /// The floor's calls are the protocol's: what they write, a transaction reads, and they
    /// leave every lock released.
    #[test]
    fn floor_operations_commit_what_a_transaction_then_reads_and_leave_no_lock() {
        let _failpoints_off = crate::failpoints_off();
        let stack = Stack::start(None, None).expect("embedded stack");
        let options = stack
            .txn_options(LivenessConfig {
                table: "floor_liveness".into(),
                ..LivenessConfig::default()
            })
            .expect("liveness table");
        let table = "floor_test";
        txn::setup::create_table(&stack.hbase, options.schema(), table, &["f"]).expect("table");
        let client = stack.client(options.clone()).expect("client");
        client
            .run(|t| {
                for i in 0..ROWS {
                    t.set(table, crate::rows::row(i), "f", "q", "100")?;
                }
                Ok(())
            })
            .expect("populate");
        let floor = Arc::new(Floor {
            hbase: stack.hbase.asynchronous(),
            tso: stack.tso.clone(),
            options: options.clone(),
            table: table.into(),
            family: "f",
            qualifier: "q",
            owner: client.owner_id().to_string(),
        });
        let runtime = percolator::internals::client_runtime(&client.asynchronous()).clone();
        let tasks: Vec<_> = (0..TASKS)
            .map(|i| {
                let floor = Arc::clone(&floor);
                runtime.spawn(async move {
                    let mut task = FloorTask::new(task_rows(i, TASKS, ROWS));
                    let mut rng = StdRng::seed_from_u64(i as u64);
                    for _ in 0..OPS {
                        floor.transfer2(&mut task, &mut rng).await?;
                        floor.get(&mut task, &mut rng).await?;
                    }
                    task.settle().await
                })
            })
            .collect();
        for outcome in percolator::internals::wait(&runtime, futures::future::join_all(tasks)) {
            outcome.expect("task").expect("floor operations");
        }

        // Each transfer added one to both of its rows.
        let total: i64 = client
            .run(|t| {
                let mut sum = 0;
                for i in 0..ROWS {
                    let v = t.get(table, crate::rows::row(i), "f", "q")?;
                    sum += std::str::from_utf8(&v.expect("a value"))
                        .expect("utf-8")
                        .parse::<i64>()
                        .expect("a number");
                }
                Ok(sum)
            })
            .expect("read back");
        assert_eq!(total, (100 * ROWS + 2 * TASKS * OPS) as i64);
        let schema = &options.schema();
        for i in 0..ROWS {
            let key = CellKey::new(table, crate::rows::row(i), "f", "q").unwrap();
            let q = schema.qualifier(&key);
            let row = stack
                .hbase
                .get(
                    table,
                    &Get::new(key.row.clone()).column(schema.lock_family.clone(), q.clone()),
                )
                .expect("lock cell");
            let state = decode_lock_state(row.value(&schema.lock_family, &q)).expect("decodes");
            assert!(
                matches!(state, LockState::Released { .. }),
                "row {i}: {state:?}"
            );
        }

        // A blind write: the value is the transaction's next read.
        let mut task = FloorTask::new(0..1);
        percolator::internals::wait(&runtime, async {
            floor.put1(&mut task, &mut StdRng::seed_from_u64(9)).await?;
            task.settle().await
        })
        .expect("put1");
        let got = client
            .run(|t| t.get(table, crate::rows::row(0), "f", "q"))
            .expect("read");
        assert_eq!(got.as_deref(), Some(&b"7"[..]));
        client.shutdown();
    }
}
