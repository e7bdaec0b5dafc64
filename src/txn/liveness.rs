//! Liveness tokens: ZooKeeper-style ephemeral rows. Each client keeps a row in a system table
//! whose family has a short TTL; the row is written with server time, so HBase's TTL applies and
//! the row vanishes by itself once the client stops refreshing it. A lock may be cleaned only if
//! its owner's row is gone or the lock's wall time is stale. The oldest open start_ts is also
//! published in a second family with a longer TTL, so that GC keeps behind a long transaction
//! through an outage of the liveness table (docs/design.md, "Liveness").

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::format::liveness::{
    decode_oldest, encode_oldest, ALIVE_QUALIFIER, LIVENESS_FAMILY, OLDEST_QUALIFIER,
    PUBLICATION_FAMILY,
};
use crate::hbase::{Delete, FamilyDescriptor, Get, Put, RowResult, TableDescriptor};
use crate::txn::store::HBaseAccess;

/// ```
/// let c = percolator::txn::LivenessConfig::default();
/// assert_eq!((c.table.as_str(), c.ttl_secs, c.publication_ttl_secs), ("percolator_liveness", 5, 120));
/// ```
#[derive(Clone, Debug)]
pub struct LivenessConfig {
    /// The system table holding one row per live client.
    pub table: String,
    /// Seconds a client stays alive without a refresh (the `l` family's TTL): how soon a
    /// crashed client's locks need not be waited for.
    pub ttl_secs: i32,
    /// Seconds a client's oldest open transaction stays published without a refresh (the `p`
    /// family's TTL): how long an outage of the liveness table a long transaction survives
    /// without GC passing it, and how long a dead client holds GC back. Used when the table is
    /// created or upgraded.
    pub publication_ttl_secs: i32,
}

impl Default for LivenessConfig {
    fn default() -> Self {
        LivenessConfig {
            table: "percolator_liveness".into(),
            ttl_secs: 5,
            publication_ttl_secs: 120,
        }
    }
}

/// A positive answer is reused this long: a lock's owner rarely dies in the meantime, and a
/// reader that waits on a lock would otherwise ask on every backoff step.
const ALIVE_CACHE: Duration = Duration::from_millis(200);

/// How long an owner whose observer workers were all found dead stays known as such without
/// being reported again (a lease round reports it every quarter of a second or so while its
/// worker rows remain).
const DEAD_WORKERS_KEPT: Duration = Duration::from_secs(30);

impl LivenessConfig {
    /// ```
    /// let d = percolator::txn::LivenessConfig::default().table_descriptor();
    /// assert_eq!(d.families.len(), 2);
    /// ```
    pub fn table_descriptor(&self) -> TableDescriptor {
        TableDescriptor::new(self.table.clone())
            .family(
                FamilyDescriptor::new(LIVENESS_FAMILY)
                    .max_versions(1)
                    .ttl_secs(self.ttl_secs)
                    .in_memory(true),
            )
            .family(self.publication_family())
    }

    /// The liveness family and qualifier: a row with this cell is a live client.
    ///
    /// ```
    /// let c = percolator::txn::LivenessConfig::default();
    /// assert_eq!((c.liveness_family(), c.liveness_qualifier()), (&b"l"[..], &b"a"[..]));
    /// ```
    pub fn liveness_family(&self) -> &'static [u8] {
        LIVENESS_FAMILY
    }

    /// See [`liveness_family`](Self::liveness_family).
    pub fn liveness_qualifier(&self) -> &'static [u8] {
        ALIVE_QUALIFIER
    }

    /// The `p` family, holding each client's oldest open start_ts under the publication lease.
    /// Tables created before it existed lack it until a client adds it.
    ///
    /// ```
    /// let p = percolator::txn::LivenessConfig::default().publication_family();
    /// assert_eq!((&p.name[..], p.ttl_secs), (&b"p"[..], Some(120)));
    /// ```
    pub fn publication_family(&self) -> FamilyDescriptor {
        FamilyDescriptor::new(PUBLICATION_FAMILY)
            .max_versions(1)
            .ttl_secs(self.publication_ttl_secs.max(self.ttl_secs))
            .in_memory(true)
    }

    /// How often a client must refresh its row to stay alive.
    ///
    /// ```
    /// let c = percolator::txn::LivenessConfig { table: "t".into(), ttl_secs: 3, ..Default::default() };
    /// assert_eq!(c.refresh_interval(), std::time::Duration::from_secs(1));
    /// ```
    pub fn refresh_interval(&self) -> Duration {
        Duration::from_millis((self.ttl_secs.max(1) as u64 * 1000) / 3)
    }
}

/// The oldest open start_ts a liveness row publishes, in either family (a client of an
/// earlier version writes only `l:o`, and `l:o` lapses before `p:o`); `None` when it publishes
/// none (or a value that does not decode: a row being rewritten by an older client).
pub(crate) fn published_oldest(row: &RowResult) -> Option<u64> {
    [LIVENESS_FAMILY, PUBLICATION_FAMILY]
        .into_iter()
        .filter_map(|family| row.value(family, OLDEST_QUALIFIER))
        .filter_map(decode_oldest)
        .min()
}

pub(crate) struct Liveness {
    config: LivenessConfig,
    owner: String,
    alive_cache: Mutex<HashMap<String, Instant>>,
    /// Clients whose observer workers this process's workers found dead (worker rows expired,
    /// none live), with when that was last reported.
    dead_workers: Mutex<HashMap<String, Instant>>,
    /// False once a refresh found no `p` family (a table made before it existed): this client
    /// then publishes in `l:o` only.
    publishes_in_own_family: AtomicBool,
}

impl Liveness {
    pub fn new(config: LivenessConfig, owner: String) -> Liveness {
        Liveness {
            config,
            owner,
            alive_cache: Mutex::new(HashMap::new()),
            dead_workers: Mutex::new(HashMap::new()),
            publishes_in_own_family: AtomicBool::new(true),
        }
    }

    /// Records that every observer worker of client `owner` is dead (observer workers learn
    /// it from their rows, which expire within a second by default, long before the client's
    /// liveness row or its locks' wall time): the locks of that client's observer runs may be
    /// cleaned at once ([`observer_runs_abandoned`](Self::observer_runs_abandoned)).
    pub fn observer_workers_dead(&self, owner: &str) {
        if owner != self.owner {
            self.dead_workers
                .lock()
                .insert(owner.to_string(), Instant::now());
        }
    }

    /// Whether `owner`'s observer workers were reported dead lately. A run of an observer
    /// belongs to its worker, so its locks are abandoned once the worker is dead, whatever
    /// the client that sent them does next. Rolling back a lock is safe whoever owns it; this
    /// only says it need not be waited for.
    pub fn observer_runs_abandoned(&self, owner: &str) -> bool {
        let mut dead = self.dead_workers.lock();
        dead.retain(|_, at| at.elapsed() < DEAD_WORKERS_KEPT);
        dead.contains_key(owner)
    }

    pub fn owner(&self) -> &str {
        &self.owner
    }

    pub fn config(&self) -> &LivenessConfig {
        &self.config
    }

    /// Writes (or refreshes) this client's row, publishing the oldest open start_ts. Server
    /// time, so the TTLs count from now.
    pub async fn refresh(
        &self,
        store: &dyn HBaseAccess,
        wall_ms: u64,
        oldest_open: Option<u64>,
    ) -> Result<()> {
        let oldest = encode_oldest(oldest_open);
        let put = Put::new(self.owner.as_bytes().to_vec())
            .add(
                LIVENESS_FAMILY,
                ALIVE_QUALIFIER,
                wall_ms.to_be_bytes().to_vec(),
            )
            .add(LIVENESS_FAMILY, OLDEST_QUALIFIER, oldest.clone());
        if !self.publishes_in_own_family.load(Ordering::Relaxed) {
            return store.put(&self.config.table, &put).await;
        }
        let full = put
            .clone()
            .add(PUBLICATION_FAMILY, OLDEST_QUALIFIER, oldest);
        match store.put(&self.config.table, &full).await {
            Err(Error::FamilyNotFound { family, .. })
                if family.as_bytes() == PUBLICATION_FAMILY =>
            {
                tracing::warn!(
                    table = %self.config.table,
                    "the liveness table has no publication family `p`: long transactions lose \
                     GC's protection in an outage longer than the liveness TTL; connecting a \
                     client adds it"
                );
                self.publishes_in_own_family.store(false, Ordering::Relaxed);
                store.put(&self.config.table, &put).await
            }
            other => other,
        }
    }

    /// Removes this client's row on a clean shutdown, so others need not wait for the TTL.
    pub async fn remove(&self, store: &dyn HBaseAccess) -> Result<()> {
        store
            .delete(
                &self.config.table,
                &Delete::new(self.owner.as_bytes().to_vec()),
            )
            .await
    }

    /// Whether `owner`'s row exists; `on_rpc` is called when answering needed a round trip
    /// (recent positive answers are cached).
    pub async fn is_alive(
        &self,
        store: &dyn HBaseAccess,
        owner: &str,
        on_rpc: impl FnOnce(),
    ) -> Result<bool> {
        if owner == self.owner {
            return Ok(true);
        }
        if let Some(at) = self.alive_cache.lock().get(owner)
            && at.elapsed() < ALIVE_CACHE
        {
            return Ok(true);
        }
        on_rpc();
        let get = Get::new(owner.as_bytes().to_vec()).column(LIVENESS_FAMILY, ALIVE_QUALIFIER);
        let rows = store
            .get_many(&self.config.table, std::slice::from_ref(&get))
            .await?;
        let alive = rows.first().is_some_and(|r| !r.is_empty());
        let mut cache = self.alive_cache.lock();
        if alive {
            cache.insert(owner.to_string(), Instant::now());
        } else {
            cache.remove(owner);
        }
        Ok(alive)
    }
}
