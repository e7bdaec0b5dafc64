//! Throughput and latency benchmark: N requesters, each a tokio task asking for one timestamp
//! at a time through one shared [`OracleClient`], against a given oracle or one started
//! in-process on the memory store.

mod histogram;

pub use histogram::Histogram;

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use self::histogram::Recorder;

use percolator::oracle::MemoryStore;
use percolator::oracle::{ClientConfig, OracleClient};
use percolator::oracle::{OracleServer, ServerConfig};
use percolator::{Error, Result};

/// What [`run_bench`] measures and for how long (`percolator-oracle bench`).
///
/// ```
/// use std::time::Duration;
/// use percolator::oracle::{MemoryStore, OracleServer};
/// use percolator_cli::oracle_bench::{run_bench, BenchConfig};
/// let oracle = OracleServer::start_local(MemoryStore::new())?;
/// let config = BenchConfig {
///     addrs: Some(vec![oracle.local_addr().to_string()]),
///     concurrency: 8,
///     duration: Duration::from_millis(100),
///     warmup: Duration::from_millis(20),
///     ..BenchConfig::default()
/// };
/// let report = run_bench(&config)?;
/// assert!(!report.in_process_server);
/// assert!(report.timestamps > 0);
/// # Ok::<(), percolator::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct BenchConfig {
    /// The oracle to measure; `None` starts one in-process on the memory store.
    pub addrs: Option<Vec<String>>,
    /// Requesters, each asking for one timestamp at a time.
    pub concurrency: usize,
    /// How long to measure, after the warm-up.
    pub duration: Duration,
    /// Run before measuring, to open connections and warm caches.
    pub warmup: Duration,
    /// The shared client's settings (its `connections` are the lanes requesters batch on).
    pub client: ClientConfig,
    /// Runtime threads for the requesters.
    pub threads: usize,
    /// Run the client's lanes on a thread of their own ([`OracleClient::connect`]) instead of
    /// on the requesters' runtime ([`OracleClient::connect_async`]).
    pub client_thread: bool,
    /// Time one request in this many per requester: reading the clock twice per request
    /// would otherwise be a tenth of the work measured. Sampling every k-th request does not
    /// bias the distribution.
    pub sample_every: u32,
}

impl Default for BenchConfig {
    fn default() -> Self {
        BenchConfig {
            addrs: None,
            concurrency: 64,
            duration: Duration::from_secs(5),
            warmup: Duration::from_millis(500),
            client: ClientConfig::default(),
            threads: 2,
            client_thread: false,
            sample_every: 4,
        }
    }
}

/// What [`run_bench`] measured; serializes to the JSON line of `percolator-oracle bench --json`.
///
/// ```
/// use std::time::Duration;
/// use percolator_cli::oracle_bench::{run_bench, BenchConfig};
/// let report = run_bench(&BenchConfig {
///     concurrency: 4,
///     duration: Duration::from_millis(100),
///     warmup: Duration::from_millis(20),
///     ..BenchConfig::default()
/// })?;
/// assert!(report.in_process_server);
/// assert!(report.p50_us <= report.max_us);
/// # Ok::<(), percolator::Error>(())
/// ```
#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    /// Requesters, as configured.
    pub concurrency: usize,
    /// The client's connections (lanes), as configured.
    pub connections: usize,
    /// Measured time.
    pub seconds: f64,
    /// Timestamps received while measuring.
    pub timestamps: u64,
    /// Throughput while measuring.
    pub timestamps_per_s: f64,
    /// Latency quantiles of one request, in microseconds (from sampled requests).
    pub p50_us: f64,
    /// 99th percentile latency, in microseconds.
    pub p99_us: f64,
    /// 99.9th percentile latency, in microseconds.
    pub p999_us: f64,
    /// Slowest sampled request, in microseconds.
    pub max_us: f64,
    /// Failed requests (each logged).
    pub errors: u64,
    /// Times a requester got a timestamp not above its previous one (must be 0).
    pub order_violations: u64,
    /// Requests the server answered while measuring (0 if its counters were unreachable).
    pub server_requests: u64,
    /// Timestamps per server request: how well the client batched.
    pub mean_batch: f64,
    /// Whether the bench started its own oracle (no `addrs` given).
    pub in_process_server: bool,
}

const WARMUP: u8 = 0;
const MEASURE: u8 = 1;
const STOP: u8 = 2;

/// Runs the benchmark to completion (warm-up, then `duration`) and reports throughput,
/// latency and whether every requester saw increasing timestamps.
///
/// ```
/// use std::time::Duration;
/// use percolator_cli::oracle_bench::{run_bench, BenchConfig};
/// let report = run_bench(&BenchConfig {
///     concurrency: 2,
///     duration: Duration::from_millis(100),
///     warmup: Duration::from_millis(20),
///     ..BenchConfig::default()
/// })?;
/// assert!(report.timestamps > 0);
/// assert_eq!((report.errors, report.order_violations), (0, 0));
/// # Ok::<(), percolator::Error>(())
/// ```
pub fn run_bench(config: &BenchConfig) -> Result<BenchReport> {
    if config.concurrency == 0 {
        return Err(Error::IllegalArgument {
            message: "bench needs at least one requester".into(),
        });
    }
    let server = match &config.addrs {
        Some(_) => None,
        None => Some(OracleServer::start(
            "127.0.0.1:0",
            MemoryStore::new(),
            ServerConfig::default(),
        )?),
    };
    let addrs = match (&config.addrs, &server) {
        (Some(addrs), _) => addrs.clone(),
        (None, Some(s)) => vec![s.local_addr().to_string()],
        (None, None) => unreachable!("a server was started above"),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.threads.max(1))
        .enable_all()
        .build()
        .map_err(|e| Error::io("building the bench runtime", e))?;
    let phase = Arc::new(AtomicU8::new(WARMUP));
    let recorder = Arc::new(Recorder::new());
    let (tallies, seconds, server_requests, mean_batch) = runtime.block_on(async {
        let client = Arc::new(if config.client_thread {
            let (addrs, client_config) = (addrs.clone(), config.client.clone());
            tokio::task::spawn_blocking(move || OracleClient::connect(&addrs, client_config))
                .await
                .map_err(|e| Error::OracleStore {
                    message: format!("bench client setup failed: {e}"),
                })??
        } else {
            OracleClient::connect_async(&addrs, config.client.clone()).await?
        });
        let requesters: Vec<_> = (0..config.concurrency)
            .map(|_| {
                tokio::spawn(requester(
                    Arc::clone(&client),
                    Arc::clone(&phase),
                    Arc::clone(&recorder),
                    config.sample_every.max(1),
                ))
            })
            .collect();
        tokio::time::sleep(config.warmup).await;
        let before = client.server_stats_async().await.ok();
        phase.store(MEASURE, Ordering::Relaxed);
        let started = Instant::now();
        tokio::time::sleep(config.duration).await;
        phase.store(STOP, Ordering::Relaxed);
        let seconds = started.elapsed().as_secs_f64();
        let mut tallies = Vec::with_capacity(requesters.len());
        for r in requesters {
            tallies.push(r.await.map_err(|e| Error::OracleStore {
                message: format!("bench requester failed: {e}"),
            })?);
        }
        let after = client.server_stats_async().await.ok();
        if let Ok(client) = Arc::try_unwrap(client) {
            client.close().await;
        }
        let (server_requests, mean_batch) = match (before, after) {
            (Some(b), Some(a)) if a.requests > b.requests => {
                let requests = a.requests - b.requests;
                let mean = (a.timestamps - b.timestamps) as f64 / requests as f64;
                (requests, mean)
            }
            _ => (0, 0.0),
        };
        Ok::<_, Error>((tallies, seconds, server_requests, mean_batch))
    })?;
    let mut total = Tally::default();
    for t in &tallies {
        total.merge(t);
    }
    let latency = recorder.merged();
    let us = |ns: u64| ns as f64 / 1000.0;
    Ok(BenchReport {
        concurrency: config.concurrency,
        connections: config.client.connections,
        seconds,
        timestamps: total.timestamps,
        timestamps_per_s: total.timestamps as f64 / seconds,
        p50_us: us(latency.quantile(0.50)),
        p99_us: us(latency.quantile(0.99)),
        p999_us: us(latency.quantile(0.999)),
        max_us: us(latency.max()),
        errors: total.errors,
        order_violations: total.order_violations,
        server_requests,
        mean_batch,
        in_process_server: server.is_some(),
    })
}

#[derive(Default)]
struct Tally {
    timestamps: u64,
    errors: u64,
    order_violations: u64,
}

impl Tally {
    fn merge(&mut self, other: &Tally) {
        self.timestamps += other.timestamps;
        self.errors += other.errors;
        self.order_violations += other.order_violations;
    }
}

async fn requester(
    client: Arc<OracleClient>,
    phase: Arc<AtomicU8>,
    recorder: Arc<Recorder>,
    sample_every: u32,
) -> Tally {
    let mut tally = Tally::default();
    let mut last = 0u64;
    let mut countdown = sample_every;
    loop {
        let p = phase.load(Ordering::Relaxed);
        if p == STOP {
            return tally;
        }
        countdown -= 1;
        let timed = countdown == 0;
        if timed {
            countdown = sample_every;
        }
        let started = timed.then(Instant::now);
        let result = client.get_timestamp_async().await;
        let elapsed = started.map(|s| s.elapsed());
        match result {
            Ok(ts) => {
                if ts <= last {
                    tally.order_violations += 1;
                }
                last = ts;
                if p == MEASURE {
                    tally.timestamps += 1;
                    if let Some(elapsed) = elapsed {
                        recorder.record(elapsed.as_nanos() as u64);
                    }
                }
            }
            Err(e) => {
                tally.errors += 1;
                tracing::warn!(error = %e, "bench request failed");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}
