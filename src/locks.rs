//! `percolator locks`: the locks present in a table, whether their owners live, and their
//! resolution through the normal protocol (a transactional read of the locked cell resolves an
//! abandoned lock, and waits out, then reports, a live one).

use std::collections::HashMap;

use crate::clock::{Clock, SystemClock};
use crate::error::{Error, Result};
use crate::format::{decode_lock_state, lock_column, LockState};
use crate::hbase::{Get, HBaseClient, Scan};
use crate::key::CellKey;
use crate::txn::{until_settled_blocking, Client, LivenessConfig, Schema, TRANSITION_TIMEOUT};

/// One lock found in a table.
///
/// ```
/// let key = percolator::CellKey::new("t", "r", "f", "q")?;
/// let lock = percolator::locks::LockInfo { key: key.clone(), primary: key, start_ts: 1, owner: "o".into(), age_ms: 0, ttl_ms: 3000, alive: None };
/// assert_eq!(lock.to_json()["start_ts"], 1);
/// # Ok::<(), percolator::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct LockInfo {
    pub key: CellKey,
    pub primary: CellKey,
    pub start_ts: u64,
    /// The liveness id of the client that wrote it.
    pub owner: String,
    /// Since the owner last wrote or refreshed it (owner's wall clock).
    pub age_ms: u64,
    /// The lock's TTL, as its owner wrote it: past `age_ms > ttl_ms` any reader may clean it,
    /// whether its owner lives or not (docs/design.md, "Liveness").
    pub ttl_ms: u64,
    /// Whether the owner's liveness row exists; `None` when not looked up.
    pub alive: Option<bool>,
}

impl LockInfo {
    /// Whether the lock has outlived its TTL: the protocol then lets any reader clean it, so
    /// one still present was left by a writer that died (or stalled) and no one has read the
    /// cell since.
    ///
    /// ```
    /// # let key = percolator::CellKey::new("t", "r", "f", "q")?;
    /// let mut lock = percolator::locks::LockInfo { key: key.clone(), primary: key, start_ts: 1, owner: "o".into(), age_ms: 3001, ttl_ms: 3000, alive: None };
    /// assert!(lock.is_stale());
    /// lock.age_ms = 3000;
    /// assert!(!lock.is_stale());
    /// # Ok::<(), percolator::Error>(())
    /// ```
    pub fn is_stale(&self) -> bool {
        self.age_ms > self.ttl_ms
    }

    /// The lock as one JSON object (rows and columns as lossy UTF-8).
    ///
    /// ```
    /// # let key = percolator::CellKey::new("t", "r", "f", "q")?;
    /// # let lock = percolator::locks::LockInfo { key: key.clone(), primary: key, start_ts: 1, owner: "o".into(), age_ms: 0, ttl_ms: 3000, alive: Some(true) };
    /// assert_eq!(lock.to_json()["alive"], true);
    /// # Ok::<(), percolator::Error>(())
    /// ```
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "row": String::from_utf8_lossy(&self.key.row),
            "column": String::from_utf8_lossy(&self.key.column()),
            "primary": self.primary.to_string(),
            "start_ts": self.start_ts,
            "owner": self.owner,
            "age_ms": self.age_ms,
            "ttl_ms": self.ttl_ms,
            "alive": self.alive,
        })
    }
}

/// Every lock held in `table` (one scan of the lock family; a scan that meets a region in
/// transition is made again from the start once the region is back, for up to a minute).
///
/// ```
/// let emulator = hbase_emulator::start_local()?;
/// let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
/// let schema = Default::default();
/// percolator::txn::setup::create_table(&hbase, &schema, "t", &["f"])?;
/// assert!(percolator::locks::list_locks(&hbase, &schema, "t")?.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn list_locks(hbase: &HBaseClient, schema: &Schema, table: &str) -> Result<Vec<LockInfo>> {
    until_settled_blocking(TRANSITION_TIMEOUT, || list_locks_once(hbase, schema, table))
}

fn list_locks_once(hbase: &HBaseClient, schema: &Schema, table: &str) -> Result<Vec<LockInfo>> {
    let now = SystemClock.now_ms();
    let scan = Scan::new().family(schema.lock_family.clone()).caching(1000);
    let mut out = Vec::new();
    for row in hbase.scan(table, &scan)? {
        let row = row?;
        for cell in &row.cells {
            let corrupt = |reason: String| {
                Error::corrupted_cell("lock", table, &row.row, &cell.qualifier, reason)
            };
            let LockState::Locked(lock) =
                decode_lock_state(Some(&cell.value)).map_err(|e| corrupt(e.0))?
            else {
                continue;
            };
            // A row lock is listed once, under its first column.
            let (family, qualifier) =
                lock_column(&cell.qualifier, &lock).map_err(|e| corrupt(e.0))?;
            out.push(LockInfo {
                key: CellKey::new(table, row.row.clone(), family, qualifier)?,
                primary: lock.primary,
                start_ts: lock.start_ts,
                owner: lock.owner,
                age_ms: now.saturating_sub(lock.wall_ms),
                ttl_ms: lock.ttl_ms,
                alive: None,
            });
        }
    }
    Ok(out)
}

/// Fills in whether each lock's owner still has its liveness row (each read waits out a
/// region in transition, as [`list_locks`] does).
///
/// ```
/// # let emulator = hbase_emulator::start_local()?;
/// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
/// let mut none = Vec::new();
/// percolator::locks::check_owners(&hbase, &Default::default(), &mut none)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn check_owners(
    hbase: &HBaseClient,
    liveness: &LivenessConfig,
    locks: &mut [LockInfo],
) -> Result<()> {
    // One read per owner: a dead client often leaves many locks.
    let mut alive: HashMap<String, bool> = HashMap::new();
    for lock in locks.iter_mut() {
        if let Some(&known) = alive.get(&lock.owner) {
            lock.alive = Some(known);
            continue;
        }
        // Only the liveness cell: a dead client's row keeps its publication for a while.
        let get = Get::new(lock.owner.as_bytes().to_vec())
            .column(liveness.liveness_family(), liveness.liveness_qualifier());
        let row = until_settled_blocking(TRANSITION_TIMEOUT, || {
            match hbase.get(&liveness.table, &get) {
                Err(Error::TableNotFound { .. }) => Ok(Default::default()),
                read => read,
            }
        })?;
        alive.insert(lock.owner.clone(), !row.is_empty());
        lock.alive = Some(!row.is_empty());
    }
    Ok(())
}

/// The outcome of resolving one lock.
///
/// ```
/// # let key = percolator::CellKey::new("t", "r", "f", "q")?;
/// let r = percolator::locks::Resolution { key, resolved: false, reason: Some("held by a live transaction".into()) };
/// assert!(!r.resolved);
/// # Ok::<(), percolator::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Resolution {
    pub key: CellKey,
    /// The lock is gone (rolled forward or back, here or by its owner).
    pub resolved: bool,
    pub reason: Option<String>,
}

/// Resolves each lock by reading its cell in a new transaction: the snapshot reader rolls an
/// abandoned lock forward or back as its primary decides, and waits for a live one up to the
/// client's `max_lock_wait`, after which that lock is reported unresolved.
///
/// ```
/// # let emulator = hbase_emulator::start_local()?;
/// # let oracle = percolator::OracleServer::start_local(percolator::oracle::MemoryStore::new())?;
/// # let config = percolator::HBaseConfig::new(emulator.local_addr().to_string());
/// # let client = percolator::Client::connect(config, &[oracle.local_addr().to_string()], Default::default())?;
/// assert!(percolator::locks::resolve_locks(&client, &[]).is_empty());
/// # client.shutdown();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn resolve_locks(client: &Client, locks: &[LockInfo]) -> Vec<Resolution> {
    locks
        .iter()
        .map(|lock| {
            let outcome = client
                .begin()
                .and_then(|txn| txn.get_many(std::slice::from_ref(&lock.key)));
            Resolution {
                key: lock.key.clone(),
                resolved: outcome.is_ok(),
                reason: outcome.err().map(|e| match e {
                    Error::KeyLocked { .. } => "held by a live transaction".to_string(),
                    e => e.to_string(),
                }),
            }
        })
        .collect()
}
