//! Throughput and latency benchmark: N requesters, each a tokio task asking for one timestamp
//! at a time through one shared [`OracleClient`], against a given oracle or one started
//! in-process on the memory store.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::client::{ClientConfig, OracleClient};
use super::server::{OracleServer, ServerConfig};
use super::store::MemoryStore;
use crate::{Error, Result};

#[derive(Clone, Debug)]
pub struct BenchConfig {
    /// The oracle to measure; `None` starts one in-process on the memory store.
    pub addrs: Option<Vec<String>>,
    pub concurrency: usize,
    pub duration: Duration,
    /// Run before measuring, to open connections and warm caches.
    pub warmup: Duration,
    pub client: ClientConfig,
    /// Runtime threads for the requesters.
    pub threads: usize,
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
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    pub concurrency: usize,
    pub connections: usize,
    pub seconds: f64,
    pub timestamps: u64,
    pub timestamps_per_s: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
    pub errors: u64,
    /// Times a requester got a timestamp not above its previous one (must be 0).
    pub order_violations: u64,
    /// Requests the server answered while measuring, and timestamps per request.
    pub server_requests: u64,
    pub mean_batch: f64,
    pub in_process_server: bool,
}

const WARMUP: u8 = 0;
const MEASURE: u8 = 1;
const STOP: u8 = 2;

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
    let client = Arc::new(OracleClient::connect(&addrs, config.client.clone())?);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.threads.max(1))
        .enable_all()
        .build()
        .map_err(|e| Error::io("building the bench runtime", e))?;
    let phase = Arc::new(AtomicU8::new(WARMUP));
    let (tallies, before, seconds) = runtime.block_on(async {
        let requesters: Vec<_> = (0..config.concurrency)
            .map(|_| tokio::spawn(requester(Arc::clone(&client), Arc::clone(&phase))))
            .collect();
        tokio::time::sleep(config.warmup).await;
        let before = stats_of(&client).await;
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
        Ok::<_, Error>((tallies, before, seconds))
    })?;
    let after = runtime.block_on(stats_of(&client));
    let mut total = Tally::default();
    for t in &tallies {
        total.merge(t);
    }
    let (server_requests, mean_batch) = match (before, after) {
        (Some(b), Some(a)) if a.requests > b.requests => {
            let requests = a.requests - b.requests;
            (
                requests,
                (a.timestamps - b.timestamps) as f64 / requests as f64,
            )
        }
        _ => (0, 0.0),
    };
    let us = |ns: u64| ns as f64 / 1000.0;
    Ok(BenchReport {
        concurrency: config.concurrency,
        connections: config.client.connections,
        seconds,
        timestamps: total.latency.count(),
        timestamps_per_s: total.latency.count() as f64 / seconds,
        p50_us: us(total.latency.quantile(0.50)),
        p99_us: us(total.latency.quantile(0.99)),
        p999_us: us(total.latency.quantile(0.999)),
        max_us: us(total.latency.max()),
        errors: total.errors,
        order_violations: total.order_violations,
        server_requests,
        mean_batch,
        in_process_server: server.is_some(),
    })
}

async fn stats_of(client: &Arc<OracleClient>) -> Option<super::StatsSnapshot> {
    let client = Arc::clone(client);
    tokio::task::spawn_blocking(move || client.server_stats().ok())
        .await
        .ok()
        .flatten()
}

#[derive(Default)]
struct Tally {
    latency: Histogram,
    errors: u64,
    order_violations: u64,
}

impl Tally {
    fn merge(&mut self, other: &Tally) {
        self.latency.merge(&other.latency);
        self.errors += other.errors;
        self.order_violations += other.order_violations;
    }
}

async fn requester(client: Arc<OracleClient>, phase: Arc<AtomicU8>) -> Tally {
    let mut tally = Tally::default();
    let mut last = 0u64;
    loop {
        let p = phase.load(Ordering::Relaxed);
        if p == STOP {
            return tally;
        }
        let started = Instant::now();
        let result = client.get_timestamp_async().await;
        let elapsed = started.elapsed();
        match result {
            Ok(ts) => {
                if ts <= last {
                    tally.order_violations += 1;
                }
                last = ts;
                if p == MEASURE {
                    tally.latency.record(elapsed.as_nanos() as u64);
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

/// Log-linear latency histogram: 32 buckets per power of two (about 3% resolution).
pub struct Histogram {
    counts: Vec<u64>,
    count: u64,
    max: u64,
}

const SUB_BITS: u32 = 5;
const SUB: u64 = 1 << SUB_BITS;

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: vec![0; ((64 - SUB_BITS as usize) + 1) * SUB as usize],
            count: 0,
            max: 0,
        }
    }
}

impl Histogram {
    fn index(v: u64) -> usize {
        if v < SUB {
            return v as usize;
        }
        let exp = 63 - v.leading_zeros();
        let sub = (v >> (exp - SUB_BITS)) & (SUB - 1);
        ((exp - SUB_BITS + 1) as u64 * SUB + sub) as usize
    }

    /// Middle of bucket `i`'s value range.
    fn value_at(i: usize) -> u64 {
        let (group, sub) = (i as u64 / SUB, i as u64 % SUB);
        if group == 0 {
            return sub;
        }
        let shift = group - 1;
        ((SUB + sub) << shift) + ((1u64 << shift) >> 1)
    }

    pub fn record(&mut self, v: u64) {
        self.counts[Self::index(v)] += 1;
        self.count += 1;
        self.max = self.max.max(v);
    }

    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.count += other.count;
        self.max = self.max.max(other.max);
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn max(&self) -> u64 {
        self.max
    }

    /// The value at quantile `q` (0..=1), to bucket resolution; 0 if empty.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Self::value_at(i).min(self.max);
            }
        }
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_quantiles_are_within_bucket_resolution() {
        let mut h = Histogram::default();
        for v in 1..=100_000u64 {
            h.record(v);
        }
        for (q, exact) in [(0.5, 50_000.0), (0.99, 99_000.0), (0.999, 99_900.0)] {
            let got = h.quantile(q) as f64;
            assert!((got - exact).abs() / exact < 0.04, "q{q}: {got} vs {exact}");
        }
        assert_eq!(h.quantile(1.0), 100_000);
        assert_eq!(h.count(), 100_000);
    }

    #[test]
    fn histogram_buckets_cover_every_value_in_order() {
        let samples = [0u64, 1, 31, 32, 33, 63, 64, 1000, 1 << 40, u64::MAX];
        let idx: Vec<usize> = samples.iter().map(|&v| Histogram::index(v)).collect();
        assert!(idx.windows(2).all(|w| w[0] <= w[1]), "{idx:?}");
        assert!(*idx.last().unwrap() < Histogram::default().counts.len());
    }
}
