//! `percolator-workloads bench`: raw HBase operations and the same work done in transactions, in
//! one process against one gateway and oracle, so the ratios are fair. Prints ops/s, p50, p99 and
//! HBase RPCs per operation.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::SeedableRng;
use serde::Serialize;

pub use crate::floor::FLOOR_WORKLOADS;
use crate::floor::{Floor, FloorTask, FLOOR_GET, FLOOR_PUT1, FLOOR_TRANSFER2};
use crate::notify_bench::{ClientFactory, NotifyBench, KILL_EVERY};
use crate::rows::{add_one, one_row, row, task_rows, two_rows};
use crate::stack::Stack;
use crate::usage::{ServerProcess, ServerUsage, Usage};
use percolator::hbase::{
    AsyncHBaseClient, CheckAndMutate, CompareOp, FamilyDescriptor, FamilyWrites, Get, Put,
    TableDescriptor,
};
use percolator::txn::{
    self, AsyncClient, CellKey, Client, HBaseAccess, LivenessConfig, LockGranularity,
};
use percolator::Result;
use percolator_cli::oracle_bench::Histogram;

/// Which API the workloads run through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Api {
    /// Tasks on the client's tokio runtime, through `AsyncClient` and `AsyncHBaseClient`.
    Async,
    /// Threads, through the blocking `Client` and `HBaseClient`.
    Sync,
}

pub const WORKLOADS: [&str; 7] = [
    "raw_get",
    "raw_put",
    RAW_CAS,
    "raw_rmw2",
    "txn_get",
    "txn_put1",
    "txn_transfer2",
];

/// Observer notifications processed (see `notify_bench`); run only when named.
pub const NOTIFY: &str = "notify";

/// `notify` with two workers, one of them killed and replaced every
/// [`KILL_EVERY`](crate::notify_bench::KILL_EVERY); run only when named.
pub const NOTIFY_KILL: &str = "notify_kill";

/// One checkAndMutate that always passes: what the gateway charges for the call every
/// transactional write makes at least twice.
pub const RAW_CAS: &str = "raw_cas";

/// One put of [`ROW_COLUMNS`] columns of a row: how HBase applications write an entity.
pub const RAW_ROW10: &str = "raw_row10";

/// A transaction writing the same columns as [`RAW_ROW10`], blind, in the txn table's lock
/// granularity (`--lock-granularity`): one prewrite and one commit checkAndMutate when it
/// locks rows, one of each per column when it locks cells.
pub const TXN_ROW10: &str = "txn_row10";

/// The wide-row workloads; run only when named.
pub const ROW_WORKLOADS: [&str; 2] = [RAW_ROW10, TXN_ROW10];

/// Columns written by the wide-row workloads.
const ROW_COLUMNS: usize = 10;

/// Every workload `--workloads` may name.
fn known_workloads() -> impl Iterator<Item = &'static str> {
    WORKLOADS
        .into_iter()
        .chain(FLOOR_WORKLOADS)
        .chain(ROW_WORKLOADS)
        .chain([NOTIFY, NOTIFY_KILL])
}

/// The wide-row workloads' put: every column of row `r` set to `value`.
fn wide_put(r: String, value: &str) -> Put {
    (0..ROW_COLUMNS).fold(Put::new(r), |put, i| put.add(F, wide_column(i), value))
}

fn wide_column(i: usize) -> String {
    format!("c{i}")
}

fn unknown_workload(name: &str) -> percolator::Error {
    percolator::Error::IllegalArgument {
        message: format!(
            "unknown workload {name:?}; known: {}",
            known_workloads().collect::<Vec<_>>().join(", ")
        ),
    }
}

#[derive(Clone, Debug)]
pub struct BenchConfig {
    /// Measured time per workload, over all rounds.
    pub duration: Duration,
    pub threads: usize,
    pub rows: usize,
    pub workloads: Vec<String>,
    /// The workloads take turns this many times, each turn `duration / rounds` long, so that
    /// a machine whose speed drifts (a shared VM) slows every workload alike and the ratios
    /// stay fair.
    pub rounds: usize,
    /// Async tasks or blocking threads (`threads` of them either way).
    pub api: Api,
    /// The lock granularity of the table the `txn_` workloads write.
    pub lock_granularity: LockGranularity,
    /// Regions each table is created with, split at even steps of the row range, so that a
    /// cluster's region servers share the load from the first operation.
    pub regions: usize,
    /// The gateway's process, when it runs on this machine apart from the bench (a real
    /// HBase, the cluster profile's emulator): what each workload costs it is measured too.
    pub server: Option<ServerProcess>,
}

#[derive(Clone, Debug, Serialize)]
pub struct WorkloadResult {
    pub ops_per_s: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    /// The slowest op: where a rare stall (a killed observer worker's handover) shows, which
    /// p99 of a closed loop hides.
    pub max_us: f64,
    pub rpcs_per_op: f64,
    /// Requests the oracle answered per op (one request carries many callers' timestamps);
    /// absent with local timestamps.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oracle_requests_per_op: Option<f64>,
    /// CPU time of this whole process (client, and the embedded gateway and oracle) per op:
    /// what bounds throughput on a small machine, and steadier than ops/s when it is shared.
    pub cpu_us_per_op: f64,
    /// The part of `cpu_us_per_op` the in-process gateway's threads spent (the embedded
    /// emulator's); absent when the gateway runs elsewhere. What no client can save: where the
    /// cores are the limit, `raw_X.cpu_us_per_op / txn_X.gateway_cpu_us_per_op` bounds the
    /// throughput ratio even for a client that cost nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gateway_cpu_us_per_op: Option<f64>,
    /// CPU time of the gateway's process per op, when it is another process on this machine
    /// (the HBase JVM: region server, master and gateway alike; or the cluster profile's
    /// emulator).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_cpu_us_per_op: Option<f64>,
    /// The part of `server_cpu_us_per_op` its Thrift gateway's threads spent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_gateway_cpu_us_per_op: Option<f64>,
    /// Cells and bytes written per op, by family, as the client saw HBase apply them (the
    /// populating of the tables excluded).
    pub written_per_op: Vec<WrittenPerOp>,
    /// Context switches of this process per op (each is a thread going to sleep).
    pub switches_per_op: f64,
    /// How busy the machine's cores were, from this process's CPU time: below ~95%, the
    /// workload waited on round trips with cores idle, and more threads would raise its ops/s.
    pub cpu_busy_pct: f64,
    pub ops: u64,
    pub errors: u64,
}

/// What one family got per op.
#[derive(Clone, Debug, Serialize)]
pub struct WrittenPerOp {
    pub family: String,
    pub cells: f64,
    pub bytes: f64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct BenchReport {
    pub workloads: BTreeMap<String, WorkloadResult>,
}

const F: &str = "f";
const Q: &str = "q";

struct Tables {
    raw: String,
    txn: String,
    notify: String,
    notify_kill: String,
    floor: String,
}

pub fn run(
    stack: &Stack,
    config: &BenchConfig,
    mut each: impl FnMut(&str, &WorkloadResult),
) -> Result<BenchReport> {
    if let Some(unknown) = config
        .workloads
        .iter()
        .find(|w| !known_workloads().any(|k| k == w.as_str()))
    {
        return Err(unknown_workload(unknown));
    }
    let wants = |name: &str| config.workloads.iter().any(|w| w == name);
    let (wants_notify, wants_notify_kill) = (wants(NOTIFY), wants(NOTIFY_KILL));
    let wants_floor = config
        .workloads
        .iter()
        .any(|w| FLOOR_WORKLOADS.contains(&w.as_str()));
    if (wants_notify || wants_notify_kill || wants_floor) && config.api == Api::Sync {
        return Err(percolator::Error::IllegalArgument {
            message: "the notify and floor workloads run on the async API only (--api async)"
                .into(),
        });
    }
    if wants_floor && config.rows < 2 * config.threads {
        return Err(percolator::Error::IllegalArgument {
            message: format!(
                "the floor workloads give each of the {} tasks two rows or more: --rows {} is too few",
                config.threads, config.rows
            ),
        });
    }
    let suffix = format!("{}_{}", std::process::id(), rand::random::<u32>());
    let tables = Tables {
        raw: format!("bench_raw_{suffix}"),
        txn: format!("bench_txn_{suffix}"),
        notify: format!("bench_notify_{suffix}"),
        notify_kill: format!("bench_notify_kill_{suffix}"),
        floor: format!("bench_floor_{suffix}"),
    };
    let liveness = LivenessConfig {
        table: "percolator_liveness".into(),
        ..LivenessConfig::default()
    };
    let options = stack.txn_options(liveness)?;
    let splits = split_keys(config.rows, config.regions);
    stack.hbase.admin().create_table_with_splits(
        &TableDescriptor::new(tables.raw.clone()).family(FamilyDescriptor::new(F)),
        &splits,
    )?;
    let schema = options.schema();
    let txn_table = |name: &str, granularity| {
        let table = schema.table(name, &[F]);
        txn::setup::create_split(&stack.hbase, schema, &table, granularity, &splits).map(drop)
    };
    txn_table(&tables.txn, config.lock_granularity)?;
    if wants_notify {
        txn::setup::create_table(&stack.hbase, options.schema(), &tables.notify, &[F])?;
    }
    if wants_notify_kill {
        txn::setup::create_table(&stack.hbase, options.schema(), &tables.notify_kill, &[F])?;
    }
    if wants_floor {
        txn_table(&tables.floor, LockGranularity::Cell)?;
    }
    let client = stack.client(options.clone())?;
    let floor = wants_floor.then(|| {
        Arc::new(Floor {
            hbase: stack.hbase.asynchronous(),
            tso: stack.tso.clone(),
            options: options.clone(),
            table: tables.floor.clone(),
            family: F,
            qualifier: Q,
            owner: client.owner_id().to_string(),
        })
    });
    populate(stack, &client, &tables.raw, &tables.txn, config.rows)?;
    if wants_floor {
        populate_txn(&client, &tables.floor, config.rows)?;
    }
    let runtime = percolator::internals::client_runtime(&client.asynchronous()).clone();
    let notify = if wants_notify {
        let bench = NotifyBench::start(client.asynchronous(), &tables.notify);
        Some(percolator::internals::wait(&runtime, bench)?)
    } else {
        None
    };
    let notify_kill = if wants_notify_kill {
        let store: Arc<dyn HBaseAccess> = Arc::new(stack.hbase.asynchronous());
        let (tso, opts) = (stack.tso.clone(), options.clone());
        let new_client: ClientFactory = Arc::new(move || {
            let (store, tso, opts) = (Arc::clone(&store), Arc::clone(&tso), opts.clone());
            Box::pin(async move { AsyncClient::new(store, tso, opts).await })
        });
        let bench = NotifyBench::start_killing(
            client.asynchronous(),
            new_client,
            &tables.notify_kill,
            KILL_EVERY,
        );
        Some(percolator::internals::wait(&runtime, bench)?)
    } else {
        None
    };
    let tables = Arc::new(tables);
    let clients = Clients {
        hbase: stack.hbase.asynchronous(),
        txn: client.asynchronous(),
        tables: Arc::clone(&tables),
        rows: config.rows,
        notify: notify.clone(),
        notify_kill: notify_kill.clone(),
        floor,
    };
    let rounds = config.rounds.max(1);
    let turn = config.duration / rounds as u32;
    let empty = || Sample {
        oracle_requests: Some(0),
        gateway_cpu_us: Some(0.0),
        server_cpu_us: config.server.as_ref().map(|_| 0.0),
        server_gateway_cpu_us: config.server.as_ref().map(|_| 0.0),
        ..Sample::default()
    };
    let mut samples: Vec<Sample> = config.workloads.iter().map(|_| empty()).collect();
    for round in 0..rounds {
        for (name, sample) in config.workloads.iter().zip(&mut samples) {
            let warm_up = round == 0;
            let sample_of_turn = match config.api {
                Api::Sync => measure(stack, config, turn, warm_up, |stop, errors| {
                    on_threads(config.threads, config.rows, stop, errors, |rng, rows| {
                        op(name, stack, &client, &tables, rows, rng)
                    })
                }),
                Api::Async => measure(stack, config, turn, warm_up, |stop, errors| {
                    on_tasks(config.threads, stop, errors, name, &clients)
                }),
            };
            sample.add(sample_of_turn);
        }
    }
    let mut report = BenchReport::default();
    for (name, sample) in config.workloads.iter().zip(samples) {
        let result = sample.result();
        each(name, &result);
        report.workloads.insert(name.clone(), result);
    }
    for bench in notify.into_iter().chain(notify_kill) {
        percolator::internals::wait(&runtime, bench.shutdown());
    }
    client.shutdown();
    Ok(report)
}

/// The keys that start regions 2..=`regions` of `rows` rows, at even steps.
fn split_keys(rows: usize, regions: usize) -> Vec<Vec<u8>> {
    let regions = regions.clamp(1, rows.max(1));
    (1..regions)
        .map(|i| row(rows * i / regions).into_bytes())
        .collect()
}

fn populate(stack: &Stack, client: &Client, raw: &str, txn: &str, rows: usize) -> Result<()> {
    let puts: Vec<Put> = (0..rows)
        .map(|i| Put::new(row(i)).add(F, Q, "100"))
        .collect();
    for chunk in puts.chunks(500) {
        stack.hbase.put_many(raw, chunk)?;
    }
    populate_txn(client, txn, rows)
}

/// Fills `table` in transactions of 100 rows, and waits for their secondaries: an operation
/// timed later must not find a lock of the filling and pay for rolling it forward.
fn populate_txn(client: &Client, table: &str, rows: usize) -> Result<()> {
    for start in (0..rows).step_by(100) {
        client.run(|t| {
            for i in start..(start + 100).min(rows) {
                t.set(table, row(i), F, Q, "100")?;
            }
            Ok(())
        })?;
    }
    client.drain();
    Ok(())
}

/// One operation of workload `name`.
fn op(
    name: &str,
    stack: &Stack,
    client: &Client,
    tables: &Tables,
    rows: &Range<usize>,
    rng: &mut StdRng,
) -> Result<()> {
    let hbase = &stack.hbase;
    match name {
        "raw_get" => hbase
            .get(&tables.raw, &Get::new(row(one_row(rng, rows))).column(F, Q))
            .map(drop),
        // A checkAndMutate that always passes: column `f:c` stays empty, and an empty expected
        // value matches an absent or empty cell.
        RAW_CAS => {
            let r = row(one_row(rng, rows));
            let cam = CheckAndMutate::new(r.clone(), F, "c", CompareOp::Equal, "")
                .put(Put::new(r).add(F, "c", ""));
            hbase.check_and_mutate(&tables.raw, &cam).map(drop)
        }
        "raw_put" => hbase.put(
            &tables.raw,
            &Put::new(row(one_row(rng, rows))).add(F, Q, "7"),
        ),
        RAW_ROW10 => hbase.put(&tables.raw, &wide_put(row(one_row(rng, rows)), "7")),
        TXN_ROW10 => {
            let r = row(one_row(rng, rows));
            let mut t = client.begin()?;
            for i in 0..ROW_COLUMNS {
                t.set(&tables.txn, &r, F, wide_column(i), "7")?;
            }
            t.commit().map(drop)
        }
        "raw_rmw2" => {
            let (a, b) = two_rows(rng, rows);
            let got = hbase.get_many(
                &tables.raw,
                &[Get::new(row(a)).column(F, Q), Get::new(row(b)).column(F, Q)],
            )?;
            let puts = [
                Put::new(row(a)).add(F, Q, add_one(got[0].value(F.as_bytes(), Q.as_bytes()))),
                Put::new(row(b)).add(F, Q, add_one(got[1].value(F.as_bytes(), Q.as_bytes()))),
            ];
            hbase.put_many(&tables.raw, &puts)
        }
        "txn_get" => client
            .begin()?
            .get(&tables.txn, row(one_row(rng, rows)), F, Q)
            .map(drop),
        "txn_put1" => {
            let mut t = client.begin()?;
            t.set(&tables.txn, row(one_row(rng, rows)), F, Q, "7")?;
            t.commit().map(drop)
        }
        "txn_transfer2" => {
            let (a, b) = two_rows(rng, rows);
            let keys = [key(&tables.txn, a)?, key(&tables.txn, b)?];
            let mut t = client.begin()?;
            let got = t.get_many(&keys)?;
            for (k, v) in keys.iter().zip(&got) {
                t.set(
                    &k.table,
                    &k.row,
                    &k.family,
                    &k.qualifier,
                    add_one(v.as_deref()),
                )?;
            }
            t.commit().map(drop)
        }
        other => Err(unknown_workload(other)),
    }
}

fn key(table: &str, i: usize) -> Result<CellKey> {
    Ok(CellKey::new(table, row(i), F, Q)?)
}

fn cores() -> f64 {
    std::thread::available_parallelism().map_or(1, |n| n.get()) as f64
}

/// What one or more turns of a workload measured.
#[derive(Default)]
struct Sample {
    histogram: Histogram,
    elapsed_s: f64,
    cpu_us: f64,
    /// `None` once any turn could not tell.
    gateway_cpu_us: Option<f64>,
    /// The gateway's process, when it is another one (`None` once any turn could not tell).
    server_cpu_us: Option<f64>,
    server_gateway_cpu_us: Option<f64>,
    /// Written, by family.
    writes: Vec<FamilyWrites>,
    switches: f64,
    rpcs: u64,
    /// Counted from `Some(0)`; `None` once any turn could not count them.
    oracle_requests: Option<u64>,
    errors: u64,
}

impl Sample {
    fn add(&mut self, other: Sample) {
        self.oracle_requests = self
            .oracle_requests
            .zip(other.oracle_requests)
            .map(|(a, b)| a + b);
        self.histogram.merge(&other.histogram);
        self.elapsed_s += other.elapsed_s;
        self.cpu_us += other.cpu_us;
        self.gateway_cpu_us = self
            .gateway_cpu_us
            .zip(other.gateway_cpu_us)
            .map(|(a, b)| a + b);
        let sum = |a: Option<f64>, b: Option<f64>| a.zip(b).map(|(a, b)| a + b);
        self.server_cpu_us = sum(self.server_cpu_us, other.server_cpu_us);
        self.server_gateway_cpu_us = sum(self.server_gateway_cpu_us, other.server_gateway_cpu_us);
        self.writes = merge_writes(&self.writes, &other.writes, 1);
        self.switches += other.switches;
        self.rpcs += other.rpcs;
        self.errors += other.errors;
    }

    fn result(&self) -> WorkloadResult {
        let ops = self.histogram.count();
        let per_op = |v: f64| if ops == 0 { 0.0 } else { v / ops as f64 };
        let per_s = |v: f64| {
            if self.elapsed_s > 0.0 {
                v / self.elapsed_s
            } else {
                0.0
            }
        };
        WorkloadResult {
            cpu_us_per_op: per_op(self.cpu_us),
            gateway_cpu_us_per_op: self.gateway_cpu_us.map(per_op),
            server_cpu_us_per_op: self.server_cpu_us.map(per_op),
            server_gateway_cpu_us_per_op: self.server_gateway_cpu_us.map(per_op),
            written_per_op: self
                .writes
                .iter()
                .map(|f| WrittenPerOp {
                    family: f.family.clone(),
                    cells: per_op(f.cells as f64),
                    bytes: per_op(f.bytes as f64),
                })
                .collect(),
            switches_per_op: per_op(self.switches),
            cpu_busy_pct: per_s(self.cpu_us) / (1e4 * cores()),
            ops_per_s: per_s(ops as f64),
            p50_us: self.histogram.quantile(0.5) as f64 / 1000.0,
            p99_us: self.histogram.quantile(0.99) as f64 / 1000.0,
            max_us: self.histogram.max() as f64 / 1000.0,
            rpcs_per_op: per_op(self.rpcs as f64),
            oracle_requests_per_op: self.oracle_requests.map(|n| per_op(n as f64)),
            ops,
            errors: self.errors,
        }
    }
}

/// `a` plus `sign` times `b`, family by family (in `a`'s order, then `b`'s new ones).
fn merge_writes(a: &[FamilyWrites], b: &[FamilyWrites], sign: i64) -> Vec<FamilyWrites> {
    let mut out = a.to_vec();
    for f in b {
        let i = match out.iter().position(|o| o.family == f.family) {
            Some(i) => i,
            None => {
                out.push(FamilyWrites {
                    family: f.family.clone(),
                    ..FamilyWrites::default()
                });
                out.len() - 1
            }
        };
        let add = |x: u64, y: u64| (x as i64 + sign * y as i64).max(0) as u64;
        out[i].cells = add(out[i].cells, f.cells);
        out[i].bytes = add(out[i].bytes, f.bytes);
    }
    out.retain(|f| f.cells > 0);
    out
}

/// What the async workloads share, cheap to hand to each task.
#[derive(Clone)]
struct Clients {
    hbase: AsyncHBaseClient,
    txn: AsyncClient,
    tables: Arc<Tables>,
    rows: usize,
    notify: Option<Arc<NotifyBench>>,
    notify_kill: Option<Arc<NotifyBench>>,
    floor: Option<Arc<Floor>>,
}

impl Clients {
    /// The floor workloads' state, set up when one of them was asked for.
    fn floor(&self, name: &str) -> Result<&Floor> {
        self.floor
            .as_deref()
            .ok_or_else(|| percolator::Error::IllegalArgument {
                message: format!("workload {name} was not set up"),
            })
    }
}

/// One operation of workload `name`, through the async API.
async fn op_async(name: &str, c: &Clients, rng: &mut StdRng, part: &mut FloorTask) -> Result<()> {
    let (hbase, tables, rows) = (&c.hbase, &c.tables, &part.rows);
    match name {
        "raw_get" => {
            let get = Get::new(row(one_row(rng, rows))).column(F, Q);
            hbase.get(&tables.raw, &get).await.map(drop)
        }
        RAW_CAS => {
            let r = row(one_row(rng, rows));
            let cam = CheckAndMutate::new(r.clone(), F, "c", CompareOp::Equal, "")
                .put(Put::new(r).add(F, "c", ""));
            hbase.check_and_mutate(&tables.raw, &cam).await.map(drop)
        }
        "raw_put" => {
            let put = Put::new(row(one_row(rng, rows))).add(F, Q, "7");
            hbase.put(&tables.raw, &put).await
        }
        RAW_ROW10 => {
            let put = wide_put(row(one_row(rng, rows)), "7");
            hbase.put(&tables.raw, &put).await
        }
        TXN_ROW10 => {
            let r = row(one_row(rng, rows));
            let mut txn = c.txn.begin().await?;
            for i in 0..ROW_COLUMNS {
                txn.set(&tables.txn, &r, F, wide_column(i), "7")?;
            }
            txn.commit().await.map(drop)
        }
        "raw_rmw2" => {
            let (a, b) = two_rows(rng, rows);
            let gets = [Get::new(row(a)).column(F, Q), Get::new(row(b)).column(F, Q)];
            let got = hbase.get_many(&tables.raw, &gets).await?;
            let puts = [
                Put::new(row(a)).add(F, Q, add_one(got[0].value(F.as_bytes(), Q.as_bytes()))),
                Put::new(row(b)).add(F, Q, add_one(got[1].value(F.as_bytes(), Q.as_bytes()))),
            ];
            hbase.put_many(&tables.raw, &puts).await
        }
        "txn_get" => {
            let txn = c.txn.begin().await?;
            let r = row(one_row(rng, rows));
            txn.get(&tables.txn, r, F, Q).await.map(drop)
        }
        "txn_put1" => {
            let mut txn = c.txn.begin().await?;
            txn.set(&tables.txn, row(one_row(rng, rows)), F, Q, "7")?;
            txn.commit().await.map(drop)
        }
        "txn_transfer2" => {
            let (a, b) = two_rows(rng, rows);
            let keys = [key(&tables.txn, a)?, key(&tables.txn, b)?];
            let mut txn = c.txn.begin().await?;
            let got = txn.get_many(&keys).await?;
            for (k, v) in keys.iter().zip(&got) {
                let next = add_one(v.as_deref());
                txn.set(&k.table, &k.row, &k.family, &k.qualifier, next)?;
            }
            txn.commit().await.map(drop)
        }
        FLOOR_GET => c.floor(name)?.get(part, rng).await,
        FLOOR_PUT1 => c.floor(name)?.put1(part, rng).await,
        FLOOR_TRANSFER2 => c.floor(name)?.transfer2(part, rng).await,
        other => Err(unknown_workload(other)),
    }
}

/// Records one operation's latency, or counts its failure.
fn record(h: &mut Histogram, errors: &AtomicU64, t0: Instant, outcome: Result<()>) {
    match outcome {
        Ok(()) => h.record(t0.elapsed().as_nanos() as u64),
        Err(e) => {
            if errors.fetch_add(1, Ordering::Relaxed) == 0 {
                tracing::debug!(error = %e, "bench operation failed");
            }
        }
    }
}

/// `threads` threads running `op` until `stop`, each on its slice of `rows`.
fn on_threads(
    threads: usize,
    rows: usize,
    stop: &AtomicBool,
    errors: &AtomicU64,
    op: impl Fn(&mut StdRng, &Range<usize>) -> Result<()> + Sync,
) -> Vec<Histogram> {
    std::thread::scope(|s| {
        let op = &op;
        let workers: Vec<_> = (0..threads)
            .map(|thread| {
                let rows = task_rows(thread, threads, rows);
                s.spawn(move || {
                    let mut rng = StdRng::from_entropy();
                    let mut h = Histogram::default();
                    while !stop.load(Ordering::Relaxed) {
                        let t0 = Instant::now();
                        record(&mut h, errors, t0, op(&mut rng, &rows));
                    }
                    h
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("bench thread"))
            .collect()
    })
}

/// `tasks` tasks on the client's runtime running workload `name` until `stop`.
fn on_tasks(
    tasks: usize,
    stop: &AtomicBool,
    errors: &AtomicU64,
    name: &str,
    clients: &Clients,
) -> Vec<Histogram> {
    let runtime = percolator::internals::client_runtime(&clients.txn).clone();
    // The tasks are 'static; they report through these, and the caller's flag is copied in.
    let (done, failed) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicU64::new(0)),
    );
    let handles: Vec<_> = (0..tasks)
        .map(|task| {
            let (done, failed, clients, name) = (
                Arc::clone(&done),
                Arc::clone(&failed),
                clients.clone(),
                name.to_string(),
            );
            let mut part = FloorTask::new(task_rows(task, tasks, clients.rows));
            runtime.spawn(async move {
                let mut rng = StdRng::from_entropy();
                let mut h = Histogram::default();
                while !done.load(Ordering::Relaxed) {
                    let bench = match name.as_str() {
                        NOTIFY => clients.notify.as_ref(),
                        NOTIFY_KILL => clients.notify_kill.as_ref(),
                        _ => None,
                    };
                    let (t0, outcome) = match bench {
                        // Timed from the change's commit to its observer's commit.
                        Some(bench) => bench.op(&clients.txn).await,
                        None => {
                            let t0 = Instant::now();
                            (t0, op_async(&name, &clients, &mut rng, &mut part).await)
                        }
                    };
                    record(&mut h, &failed, t0, outcome);
                }
                if part.settle().await.is_err() {
                    failed.fetch_add(1, Ordering::Relaxed);
                }
                h
            })
        })
        .collect();
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(5));
    }
    done.store(true, Ordering::Relaxed);
    let histograms = percolator::internals::wait(&runtime, futures::future::join_all(handles));
    errors.fetch_add(failed.load(Ordering::Relaxed), Ordering::Relaxed);
    histograms
        .into_iter()
        .map(|h| h.expect("bench task"))
        .collect()
}

/// Runs `drive` (threads or tasks doing the work until told to stop) for `duration`, after a
/// short warm-up if asked, and measures what it cost.
fn measure(
    stack: &Stack,
    config: &BenchConfig,
    duration: Duration,
    warm_up: bool,
    drive: impl Fn(&AtomicBool, &AtomicU64) -> Vec<Histogram> + Sync,
) -> Sample {
    if warm_up {
        // Connections and caches, outside the measurement.
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(300));
                stop.store(true, Ordering::Relaxed);
            });
            drive(&stop, &AtomicU64::new(0));
        });
    }
    let stop = AtomicBool::new(false);
    let errors = AtomicU64::new(0);
    let rpcs_before = stack.hbase.rpc_count();
    let oracle_before = stack.oracle_requests();
    let writes_before = stack.hbase.asynchronous().writes_by_family();
    let server_before = config.server.as_ref().map(ServerUsage::now);
    let usage_before = Usage::now();
    let started = Instant::now();
    let histograms = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(duration);
            stop.store(true, Ordering::Relaxed);
        });
        drive(&stop, &errors)
    });
    let elapsed_s = started.elapsed().as_secs_f64();
    let usage = Usage::now();
    let server = config.server.as_ref().map(ServerUsage::now);
    let (server_cpu_us, server_gateway_cpu_us) = server
        .zip(server_before)
        .map_or((None, None), |(now, before)| now.since(&before));
    let writes = stack.hbase.asynchronous().writes_by_family();
    let oracle_requests = oracle_before
        .zip(stack.oracle_requests())
        .map(|(before, after)| after.saturating_sub(before));
    let mut histogram = Histogram::default();
    for h in &histograms {
        histogram.merge(h);
    }
    Sample {
        histogram,
        elapsed_s,
        cpu_us: usage.cpu_us - usage_before.cpu_us,
        gateway_cpu_us: usage.gateway_us_since(&usage_before),
        server_cpu_us,
        server_gateway_cpu_us,
        writes: merge_writes(&writes, &writes_before, -1),
        switches: usage.switches - usage_before.switches,
        rpcs: stack.hbase.rpc_count() - rpcs_before,
        oracle_requests,
        errors: errors.load(Ordering::Relaxed),
    }
}
