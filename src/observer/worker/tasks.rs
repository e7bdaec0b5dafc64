//! The worker's tasks: the lease loop, the scanners, and one observer run per notified cell.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use futures::StreamExt;
use rand::seq::SliceRandom;
use rand::Rng;

use super::Inner;
use crate::error::Result;
use crate::format::observer::bucket;
use crate::hbase::RowResult;
use crate::metrics;
use crate::observer::lease::{Leases, Partition};
use crate::observer::model::{parse_notification, ObservedColumn};
use crate::observer::registry::notification_scan;
use crate::observer::run::{run_once, Outcome, WorkerSeam};
use crate::txn::store::next_page_start;

/// Fast lease rounds a joining worker runs at most, while it holds less than its share.
const FAST_ROUNDS: u32 = 10;

/// One notified (row, column) and the notification versions seen.
struct Job {
    column: ObservedColumn,
    row: Vec<u8>,
    versions: Vec<u64>,
}

impl Inner {
    pub(super) fn leases(&self) -> Leases<'_> {
        Leases {
            ctx: self.client.ctx(),
            owner: &self.id,
            ttl_ms: self.config.lease_ttl.as_millis() as u64,
            worker_ttl_ms: self.config.worker_ttl.as_millis() as u64,
        }
    }

    pub(super) fn die(&self) {
        if !self.dead.swap(true, Ordering::SeqCst) {
            tracing::info!(worker = %self.id, "observer worker dies");
        }
        self.stop.cancel();
    }

    fn stopping(&self) -> bool {
        self.stop.is_cancelled()
    }

    fn crash_at(&self, seam: WorkerSeam) -> bool {
        let fires = self.config.crash.as_ref().is_some_and(|f| f(seam));
        if fires {
            self.die();
        }
        fires || self.dead.load(Ordering::SeqCst)
    }

    /// The pause between lease rounds: a quarter of `worker_ttl`, at most a third of
    /// `lease_ttl` (leases are renewed in time).
    pub(super) fn round_period(&self) -> Duration {
        (self.config.worker_ttl / 4).min(self.config.lease_ttl / 3)
    }

    /// Lease rounds, every [`round_period`](Self::round_period). A worker that joined and does
    /// not hold its share yet (the others give up their surplus at their next round) runs its
    /// first rounds five times as often, so that it takes what they give up at once.
    pub(super) async fn lease_loop(&self, mut short: bool) {
        let period = self.round_period();
        let mut fast_rounds = FAST_ROUNDS;
        loop {
            let pause = if short && fast_rounds > 0 {
                fast_rounds -= 1;
                period / 5
            } else {
                period
            };
            tokio::select! {
                _ = self.stop.cancelled() => return,
                _ = tokio::time::sleep(pause) => {}
            }
            match self.leases_round().await {
                Ok(s) => short = s,
                Err(e) => tracing::debug!(error = %e, "lease round failed"),
            }
        }
    }

    /// Per table: heartbeat, renew, then give up or take partitions toward this worker's fair
    /// share of the table's partitions among its live workers. Returns whether this worker
    /// holds less than its share of some table.
    pub(super) async fn leases_round(&self) -> Result<bool> {
        let mut short = false;
        for table in self.observers.tables() {
            if self.stopping() {
                return Ok(false);
            }
            short |= self.table_leases_round(&table).await?;
        }
        Ok(short)
    }

    async fn table_leases_round(&self, table: &str) -> Result<bool> {
        let leases = self.leases();
        leases.heartbeat(table).await?;
        let workers = leases.workers(table).await?;
        for client in workers.abandoned_clients() {
            self.client.ctx().liveness().observer_workers_dead(client);
        }
        let mine = |p: &Partition| p.table == table;
        let partitions: Vec<Partition> = self
            .partitions
            .iter()
            .filter(|p| mine(p))
            .cloned()
            .collect();
        let target = partitions.len().div_ceil(workers.live);
        let held: Vec<(Partition, Vec<u8>)> = self
            .owned
            .lock()
            .iter()
            .filter(|(p, v)| mine(p) && leases.due(v))
            .map(|(p, v)| (p.clone(), v.clone()))
            .collect();
        for (p, value) in held {
            match leases.renew(&p, &value, &workers.dead).await? {
                Some(next) => self.owned.lock().insert(p, next),
                None => self.owned.lock().remove(&p),
            };
        }
        let count = || self.owned.lock().keys().filter(|p| mine(p)).count();
        let surplus = count().saturating_sub(target);
        let giving: Vec<Partition> = self
            .owned
            .lock()
            .keys()
            .filter(|p| mine(p))
            .take(surplus)
            .cloned()
            .collect();
        for p in giving {
            self.owned.lock().remove(&p);
            leases.release(&p).await?;
        }
        let mut candidates = partitions;
        candidates.shuffle(&mut rand::thread_rng());
        for p in candidates {
            if count() >= target || self.stopping() {
                break;
            }
            if self.owned.lock().contains_key(&p) {
                continue;
            }
            if let Some(value) = leases.acquire(&p, &workers.dead).await? {
                self.owned.lock().insert(p, value);
            }
        }
        Ok(count() < target)
    }

    pub(super) async fn scan_loop(&self) {
        let mut idle = self.config.min_idle;
        loop {
            if self.stopping() {
                return;
            }
            let mut found = 0;
            if let Some(table) = self.take_table() {
                let page = self.next_page(&table).await;
                self.fetching.lock().remove(&table);
                match page {
                    Ok(page) => found = self.run_page(&table, &page).await,
                    Err(e) => tracing::debug!(error = %e, "notification scan failed"),
                }
            }
            if found > 0 {
                idle = self.config.min_idle;
                continue;
            }
            tokio::select! {
                _ = self.stop.cancelled() => return,
                _ = tokio::time::sleep(idle) => {}
            }
            idle = (idle * 2).min(self.config.max_idle);
        }
    }

    /// The next table, in turn, in which this worker holds a partition and whose next page no
    /// other scanner of it is fetching.
    fn take_table(&self) -> Option<String> {
        // Partitions sort by table first, so each table's appear together.
        let mut tables: Vec<String> = self.owned.lock().keys().map(|p| p.table.clone()).collect();
        tables.dedup();
        let mut fetching = self.fetching.lock();
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let free = (0..tables.len())
            .map(|k| &tables[(start + k) % tables.len()])
            .find(|t| !fetching.contains(*t))?
            .clone();
        fetching.insert(free.clone());
        Some(free)
    }

    /// One page of `table`'s notifications from its cursor (a random row at first, then
    /// wrapping around: workers that start apart stay apart, so they do not clump on the same
    /// rows as the paper's "bus clumping" describes).
    async fn next_page(&self, table: &str) -> Result<Vec<RowResult>> {
        let from = self
            .cursors
            .lock()
            .entry(table.to_string())
            .or_insert_with(random_start)
            .clone();
        let scan = notification_scan(self.client.ctx().schema(), from, Vec::new());
        let page = self
            .client
            .ctx()
            .store()
            .scan_page(table, &scan, self.config.scan_rows)
            .await?;
        self.counters.scans.fetch_add(1, Ordering::Relaxed);
        let next = next_page_start(&page, self.config.scan_rows).unwrap_or_default();
        self.cursors.lock().insert(table.to_string(), next);
        Ok(page)
    }

    /// Runs what `page` holds for the partitions this worker owns. Returns the number of
    /// notified cells it started.
    async fn run_page(&self, table: &str, page: &[RowResult]) -> usize {
        let jobs = self.jobs(table, page);
        let found = jobs.len();
        metrics::gauge_add(metrics::key!(metrics::OBSERVER_PENDING), found as f64);
        futures::stream::iter(jobs)
            .for_each_concurrent(self.config.concurrency, |job| async move {
                let key = (job.column.clone(), job.row.clone());
                self.run_job(job).await;
                self.running.lock().remove(&key);
                metrics::gauge_add(metrics::key!(metrics::OBSERVER_PENDING), -1.0);
            })
            .await;
        if found > 0 && self.crash_at(WorkerSeam::MidScan) {
            return 0;
        }
        found
    }

    /// The notified cells of a page in partitions this worker owns, for columns it observes,
    /// not backing off and not running here already; they are marked running.
    fn jobs(&self, table: &str, page: &[RowResult]) -> Vec<Job> {
        // Every partition of a table this worker holds has the same count: the row's bucket is
        // computed once.
        let (count, owned) = {
            let held = self.owned.lock();
            let mine = held.keys().filter(|p| p.table == table);
            let count = mine.clone().next().map_or(1, |p| p.count);
            (count, mine.map(|p| p.index).collect::<HashSet<usize>>())
        };
        let now = Instant::now();
        let backoffs = self.backoffs.lock();
        let mut running = self.running.lock();
        let mut jobs: Vec<Job> = Vec::new();
        for row in page {
            if !owned.contains(&bucket(&row.row, count)) {
                continue;
            }
            for cell in &row.cells {
                let Some((family, qualifier)) = parse_notification(&cell.qualifier) else {
                    continue;
                };
                let column = ObservedColumn::new(table, family, qualifier);
                if !self.observers.observers.contains_key(&column) {
                    continue;
                }
                let key = (column, row.row.clone());
                let due = backoffs.get(&key).is_none_or(|(_, at)| *at <= now);
                match jobs.last_mut() {
                    Some(j) if j.row == row.row && j.column == key.0 => {
                        j.versions.push(cell.timestamp as u64)
                    }
                    _ if due && running.insert(key.clone()) => jobs.push(Job {
                        column: key.0,
                        row: key.1,
                        versions: vec![cell.timestamp as u64],
                    }),
                    _ => {}
                }
            }
        }
        jobs
    }

    async fn run_job(&self, job: Job) {
        // Stopped (shutdown, drop): the page's runs not started yet are left for the next scan.
        if self.stopping() || self.crash_at(WorkerSeam::BeforeProcess) {
            return;
        }
        let (name, observer) = &self.observers.observers[&job.column];
        let key = (job.column.clone(), job.row.clone());
        let failed_before = self.backoffs.lock().get(&key).map(|(n, _)| *n);
        if failed_before.is_some() {
            self.counters.retries.fetch_add(1, Ordering::Relaxed);
        }
        let die_at = |seam| self.crash_at(seam);
        let outcome = run_once(
            &self.client,
            name,
            observer.as_ref(),
            &job.column,
            &job.row,
            &job.versions,
            &die_at,
        )
        .await;
        let c = &self.counters;
        let runs = match &outcome {
            Ok(Outcome::Died) => None,
            Ok(Outcome::Processed) => {
                Some(metrics::key!(metrics::OBSERVER_RUNS, "outcome" => "processed"))
            }
            Ok(Outcome::AlreadyAcked) => {
                Some(metrics::key!(metrics::OBSERVER_RUNS, "outcome" => "already_acked"))
            }
            Ok(Outcome::Stale) => Some(metrics::key!(metrics::OBSERVER_RUNS, "outcome" => "stale")),
            Err(_) => Some(metrics::key!(metrics::OBSERVER_RUNS, "outcome" => "failed")),
        };
        if let Some(key) = runs {
            metrics::count(key);
        }
        match outcome {
            Ok(Outcome::Died) => return,
            Ok(Outcome::Processed) => c.processed.fetch_add(1, Ordering::Relaxed),
            Ok(Outcome::AlreadyAcked) => c.already_acked.fetch_add(1, Ordering::Relaxed),
            Ok(Outcome::Stale) => c.stale.fetch_add(1, Ordering::Relaxed),
            Err(e) => {
                c.failed(&e);
                let attempts = failed_before.unwrap_or(0) + 1;
                let pause = self
                    .config
                    .retry_base
                    .saturating_mul(1 << attempts.min(16))
                    .min(self.config.retry_max);
                let jitter = rand::thread_rng().gen_range(0.5..1.0);
                tracing::debug!(column = %job.column, attempts, error = %e, "observer run failed; retrying");
                self.backoffs
                    .lock()
                    .insert(key, (attempts, Instant::now() + pause.mul_f64(jitter)));
                return;
            }
        };
        self.backoffs.lock().remove(&key);
    }
}

/// A random row to start a table's first scan at, so that workers do not all start at the
/// same place and move together.
fn random_start() -> Vec<u8> {
    let mut rng = rand::thread_rng();
    vec![rng.r#gen(), rng.r#gen()]
}
