//! Partitions of the notify space and their leases, kept in meta table rows: no coordinator
//! besides HBase. A table's rows are split into `partitions` buckets by a hash of the row key
//! ([`bucket`]), so keys that share a prefix spread over all of them; a worker holds a
//! partition while its lease cell (owner and expiry, wall clock) is its own and unexpired,
//! renews it by checkAndMutate on the exact bytes it wrote, and takes over a lease that
//! expired. Live workers announce themselves in rows holding an expiry a short `worker ttl`
//! ahead, refreshed at every lease round: a worker whose row has expired is dead, and its
//! leases are taken over at once, without waiting for them to expire (any worker deletes the
//! row once it has been expired for another lease ttl, when its leases have expired too). Each
//! worker holds at most ceil(partitions / live workers), so a worker that joins gets a share
//! as the others give theirs up. Leases only spread the work: correctness never depends on
//! them (see `run`).
//!
//! The lease and worker rows are named for the hash layout (`obs-hash-...`). Workers of the
//! earlier first-byte layout use other rows (`obs-lease/`, `obs-worker/`), so while both kinds
//! run, each kind covers every row by itself: their runs overlap, which is safe, and none
//! waits on a partition that only the other kind could take. A worker that starts deletes
//! the earlier layouts' worker rows that expired long ago, since no current worker reads them.

use std::collections::HashSet;

use crate::error::{Error, Result};
use crate::format::meta::META_FAMILY;
use crate::hbase::{CheckAndMutate, CompareOp, Delete, HBaseClient, Put, RowResult, Scan};
use crate::txn::context::Context;
use crate::txn::store::next_page_start;
use crate::txn::Schema;

#[cfg(test)]
use crate::format::observer::bucket;
pub(super) use crate::format::observer::LEASE_QUALIFIER as LEASE_Q;
use crate::format::observer::{
    lease_row, lease_value, parse_lease, worker_expiry as expiry, worker_prefix,
    ALIVE_QUALIFIER as ALIVE_Q, LEGACY_WORKER_ROWS,
};
/// Worker rows read per call.
const WORKER_PAGE: i32 = 1000;

/// A partition: the rows of one table whose [`bucket`] among `count` is `index`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Partition {
    pub table: String,
    pub index: usize,
    pub count: usize,
}

impl Partition {
    /// The `count` partitions of `table`.
    pub fn all(table: &str, count: usize) -> Vec<Partition> {
        let count = count.clamp(1, 256);
        (0..count)
            .map(|index| Partition {
                table: table.to_string(),
                index,
                count,
            })
            .collect()
    }

    pub(super) fn lease_row(&self) -> Vec<u8> {
        lease_row(&self.table, self.index)
    }

    #[cfg(test)]
    pub fn contains(&self, row: &[u8]) -> bool {
        bucket(row, self.count) == self.index
    }
}

/// The scan of the worker rows under `prefix`, their expiry cells only.
fn worker_scan(prefix: &[u8]) -> Scan {
    Scan::prefix(prefix).column(META_FAMILY, ALIVE_Q)
}

/// One observer worker of a table, as its row in the meta table says.
///
/// ```
/// let w = percolator::observer::WorkerRow { worker: "c-obs-1".into(), expires_ms: 10 };
/// assert!(!w.is_live(10) && w.is_live(9));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerRow {
    /// The worker's id (`<client id>-obs-<uuid>`).
    pub worker: String,
    /// Until when (wall ms, the worker's clock) the worker counts as alive; it pushes this
    /// forward every lease round while it runs.
    pub expires_ms: u64,
}

impl WorkerRow {
    /// Whether the worker counts as alive at wall time `now_ms`.
    pub fn is_live(&self, now_ms: u64) -> bool {
        self.expires_ms > now_ms
    }
}

/// The rows of `table`'s observer workers in the meta table: the live ones, and the expired
/// ones that no live worker has removed yet (a live worker removes a row once it has been
/// expired for a lease ttl; when every worker is dead, their rows stay). One scan, nothing
/// changed; empty when the meta table does not exist.
///
/// ```
/// let emulator = hbase_emulator::start_local()?;
/// let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
/// let rows = percolator::observer::worker_rows(&hbase, &Default::default(), "docs")?;
/// assert!(rows.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn worker_rows(hbase: &HBaseClient, schema: &Schema, table: &str) -> Result<Vec<WorkerRow>> {
    let prefix = worker_prefix(table);
    let read = || -> Result<Vec<WorkerRow>> {
        let mut out = Vec::new();
        for row in hbase.scan(&schema.meta_table, &worker_scan(&prefix))? {
            let row = row?;
            let Some(value) = row.value(META_FAMILY, ALIVE_Q) else {
                continue;
            };
            let worker = row.row.get(prefix.len()..).unwrap_or_default();
            out.push(WorkerRow {
                worker: String::from_utf8_lossy(worker).into_owned(),
                expires_ms: expiry(value),
            });
        }
        Ok(out)
    };
    // The scanner may report a missing table when it is opened or at its first page.
    match read() {
        Err(Error::TableNotFound { .. }) => Ok(Vec::new()),
        read => read,
    }
}

/// The workers of a table, as one scan of their rows saw them.
#[derive(Debug, Default)]
pub(crate) struct Workers {
    /// Workers whose rows have not expired (at least 1: this one).
    pub live: usize,
    /// Workers whose rows have expired: their leases may be taken over before they expire.
    pub dead: HashSet<String>,
    /// The clients that run the live workers.
    pub live_clients: HashSet<String>,
}

/// The client a worker id names: ids are `<client owner id>-obs-<uuid>`.
pub(crate) fn worker_client(worker: &str) -> Option<&str> {
    worker.rsplit_once("-obs-").map(|(client, _)| client)
}

impl Workers {
    /// Clients with dead workers of this table and no live one: their observer runs are
    /// abandoned.
    pub fn abandoned_clients(&self) -> impl Iterator<Item = &str> {
        self.dead
            .iter()
            .filter_map(|w| worker_client(w))
            .filter(|c| !self.live_clients.contains(*c))
    }
}

/// One worker's side of the lease protocol.
pub(crate) struct Leases<'a> {
    pub ctx: &'a Context,
    pub owner: &'a str,
    /// A lease not renewed for this long expires.
    pub ttl_ms: u64,
    /// A worker row not refreshed for this long counts as dead.
    pub worker_ttl_ms: u64,
}

impl Leases<'_> {
    fn meta(&self) -> &str {
        &self.ctx.schema().meta_table
    }

    fn worker_row(&self, table: &str) -> Vec<u8> {
        let mut row = worker_prefix(table);
        row.extend_from_slice(self.owner.as_bytes());
        row
    }

    /// Announces this worker as alive on `table` until now + worker ttl.
    pub async fn heartbeat(&self, table: &str) -> Result<()> {
        let expires = self.ctx.now_ms() + self.worker_ttl_ms;
        let put = Put::new(self.worker_row(table)).add(META_FAMILY, ALIVE_Q, expires.to_string());
        self.ctx.store().put(self.meta(), &put).await
    }

    /// Removes this worker's row of `table` (clean shutdown).
    pub async fn leave(&self, table: &str) -> Result<()> {
        let delete = Delete::new(self.worker_row(table));
        self.ctx.store().delete(self.meta(), &delete).await
    }

    /// The workers of `table`: those whose rows have not expired, and the dead ones, whose
    /// rows have. Rows expired for longer than one more lease ttl (their leases have expired
    /// too) are deleted on the way (see [`remove_if_long_dead`](Self::remove_if_long_dead)); a
    /// row that cannot be read as an expiry counts as dead.
    pub async fn workers(&self, table: &str) -> Result<Workers> {
        self.workers_in_pages(table, WORKER_PAGE).await
    }

    /// [`workers`](Self::workers), reading `page_rows` rows per call.
    pub(super) async fn workers_in_pages(&self, table: &str, page_rows: i32) -> Result<Workers> {
        let prefix = worker_prefix(table);
        let rows = self.rows_under(&prefix, page_rows).await?;
        let now = self.ctx.now_ms();
        let mut workers = Workers::default();
        for row in &rows {
            let Some(value) = row.value(META_FAMILY, ALIVE_Q) else {
                continue;
            };
            let expires = expiry(value);
            let owner = String::from_utf8_lossy(row.row.get(prefix.len()..).unwrap_or_default());
            if expires > now {
                workers.live += 1;
                if let Some(client) = worker_client(&owner) {
                    workers.live_clients.insert(client.to_string());
                }
                continue;
            }
            workers.dead.insert(owner.into_owned());
            self.remove_if_long_dead(&row.row, value, expires, now)
                .await;
        }
        workers.live = workers.live.max(1);
        Ok(workers)
    }

    /// Deletes the rows of workers of the earlier layouts (`obs-worker/<id>` and
    /// `obs-worker/<table>/<id>`) that have been expired for longer than a lease ttl. No
    /// current worker reads those rows, so without this a worker of an older version killed
    /// after the upgrade would leave its row for good; one still running keeps its row
    /// unexpired and is left alone. Returns how many rows were deleted.
    pub async fn sweep_legacy_workers(&self) -> Result<usize> {
        self.sweep_legacy_workers_in_pages(WORKER_PAGE).await
    }

    /// [`sweep_legacy_workers`](Self::sweep_legacy_workers), reading `page_rows` rows per call.
    pub(super) async fn sweep_legacy_workers_in_pages(&self, page_rows: i32) -> Result<usize> {
        let rows = self.rows_under(LEGACY_WORKER_ROWS, page_rows).await?;
        let now = self.ctx.now_ms();
        let mut removed = 0;
        for row in &rows {
            if let Some(value) = row.value(META_FAMILY, ALIVE_Q)
                && self
                    .remove_if_long_dead(&row.row, value, expiry(value), now)
                    .await
            {
                removed += 1;
            }
        }
        Ok(removed)
    }

    /// Every worker row under `prefix`, read `page_rows` at a time: however many rows killed
    /// workers left, every live worker is counted (a single capped read would undercount
    /// them, and each worker would then claim more than its share).
    async fn rows_under(&self, prefix: &[u8], page_rows: i32) -> Result<Vec<RowResult>> {
        let page_rows = page_rows.max(1);
        let stop = Scan::prefix(prefix).stop_row;
        let mut from = prefix.to_vec();
        let mut rows = Vec::new();
        loop {
            let scan = Scan::range(from, stop.clone()).column(META_FAMILY, ALIVE_Q);
            let page = self
                .ctx
                .store()
                .scan_page(self.meta(), &scan, page_rows)
                .await?;
            let next = next_page_start(&page, page_rows);
            rows.extend(page);
            match next {
                Some(next) => from = next,
                None => return Ok(rows),
            }
        }
    }

    /// Deletes a worker row that has been expired for longer than a lease ttl (the leases it
    /// held have expired too, so nothing can still be waiting on it), only if it still holds
    /// `value`: a worker that was merely slow and has written its row since keeps it. Whether
    /// it was deleted; a failure is only logged, as the next round tries again.
    async fn remove_if_long_dead(&self, row: &[u8], value: &[u8], expires: u64, now: u64) -> bool {
        if expires.saturating_add(self.ttl_ms) >= now {
            return false;
        }
        let cam = CheckAndMutate::new(row.to_vec(), META_FAMILY, ALIVE_Q, CompareOp::Equal, value)
            .delete(Delete::new(row.to_vec()));
        match self.ctx.store().check_and_mutate(self.meta(), &cam).await {
            Ok(removed) => removed,
            Err(e) => {
                tracing::debug!(error = %e, "a dead worker's row was not removed");
                false
            }
        }
    }

    /// Takes `p`'s lease: the lease value now stored when this worker holds it until now +
    /// ttl (keep it for [`renew`](Self::renew)), `None` when another worker holds it. A lease
    /// of a worker in `dead` is taken even though it has not expired.
    pub async fn acquire(&self, p: &Partition, dead: &HashSet<String>) -> Result<Option<Vec<u8>>> {
        let row = p.lease_row();
        let current = crate::txn::meta::read_row(self.ctx.store(), self.meta(), &row).await?;
        let stored = current.value(META_FAMILY, LEASE_Q).map(<[u8]>::to_vec);
        if let Some((owner, expires)) = stored.as_deref().and_then(parse_lease)
            && owner != self.owner
            && expires > self.ctx.now_ms()
            && !dead.contains(&owner)
        {
            return Ok(None);
        }
        // Absent: compare EQUAL to empty, which HBase matches against a missing cell.
        self.replace(p, stored.unwrap_or_default()).await
    }

    /// Extends a lease this worker took, `held` being the value it last stored: one CAS on
    /// that value, no read. If the lease changed meanwhile (it expired and another worker
    /// took it, say), it is looked at again as by [`acquire`](Self::acquire).
    pub async fn renew(
        &self,
        p: &Partition,
        held: &[u8],
        dead: &HashSet<String>,
    ) -> Result<Option<Vec<u8>>> {
        match self.replace(p, held.to_vec()).await? {
            Some(next) => Ok(Some(next)),
            None => self.acquire(p, dead).await,
        }
    }

    /// Whether a lease this worker stored as `held` is due for renewal: a third of its ttl
    /// has passed since it was stored (or it cannot be read).
    pub fn due(&self, held: &[u8]) -> bool {
        parse_lease(held)
            .is_none_or(|(_, expires)| expires <= self.ctx.now_ms() + self.ttl_ms - self.ttl_ms / 3)
    }

    /// Stores this worker's lease until now + ttl if the stored value is `expected`.
    async fn replace(&self, p: &Partition, expected: Vec<u8>) -> Result<Option<Vec<u8>>> {
        let row = p.lease_row();
        let next = lease_value(self.owner, self.ctx.now_ms() + self.ttl_ms);
        let cam = CheckAndMutate::new(
            row.clone(),
            META_FAMILY,
            LEASE_Q,
            CompareOp::Equal,
            expected,
        )
        .put(Put::new(row).add(META_FAMILY, LEASE_Q, next.clone()));
        let stored = self.ctx.store().check_and_mutate(self.meta(), &cam).await?;
        Ok(stored.then_some(next))
    }

    /// Gives `p` up if this worker still holds it.
    pub async fn release(&self, p: &Partition) -> Result<()> {
        let row = p.lease_row();
        let current = crate::txn::meta::read_row(self.ctx.store(), self.meta(), &row).await?;
        let Some(stored) = current.value(META_FAMILY, LEASE_Q) else {
            return Ok(());
        };
        if parse_lease(stored).is_none_or(|(owner, _)| owner != self.owner) {
            return Ok(());
        }
        // An expired lease of ours, not a delete: a delete marker hides every put up to its
        // millisecond, so a worker taking the partition within it would hold an invisible
        // lease and another could take it too, leaving a partition of its own unowned.
        let cam = CheckAndMutate::new(row.clone(), META_FAMILY, LEASE_Q, CompareOp::Equal, stored)
            .put(Put::new(row).add(META_FAMILY, LEASE_Q, lease_value(self.owner, 0)));
        self.ctx
            .store()
            .check_and_mutate(self.meta(), &cam)
            .await
            .map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_cover_every_row_once() {
        let parts = Partition::all("t", 16);
        for row in [
            &b""[..],
            b"\x00",
            b"a",
            b"\x7fzz",
            b"\xff\xff",
            b"user000042",
        ] {
            assert_eq!(
                parts.iter().filter(|p| p.contains(row)).count(),
                1,
                "{row:?}"
            );
        }
        assert!(Partition::all("t", 1)[0].contains(b"anything"));
    }

    /// Keys sharing a long prefix, and keys that differ only in a byte's high bits, spread
    /// over every partition about evenly.
    #[test]
    fn keys_with_a_shared_prefix_spread_over_every_partition() {
        let mut counts = [0usize; 16];
        for i in 0..100_000 {
            counts[bucket(format!("user{i:06}").as_bytes(), 16)] += 1;
        }
        for (i, n) in counts.iter().enumerate() {
            assert!(
                (5_600..=6_900).contains(n),
                "partition {i}: {n} of 100000: {counts:?}"
            );
        }
        // 256 keys whose bytes differ only in their high four bits: FNV-1a alone puts them
        // all in one partition of 16.
        let high_bits: HashSet<usize> = (0u8..16)
            .flat_map(|x| (0u8..16).map(move |y| bucket(&[x << 4, y << 4], 16)))
            .collect();
        assert_eq!(high_bits.len(), 16, "{high_bits:?}");
    }
}
