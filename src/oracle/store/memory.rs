//! In-memory shared store, for tests, the demo and the benchmark.
//!
//! Clones share one record, and each clone is a separate would-be owner, so several in-process
//! servers on clones of one store behave like several oracle processes on one HBase row:
//! restarts continue above the top, and a newer claim fences the older owner.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use super::{new_owner_id, Claim, Holder, WindowStore, DEFAULT_LEASE};
use crate::{Error, Result};

#[derive(Debug)]
struct Record {
    top: u64,
    owner: u128,
    lease: Duration,
    released: bool,
    /// Counts writes, so that every write gives the record a new version.
    writes: u64,
}

impl Record {
    fn version(&self) -> Vec<u8> {
        let mut v = self.owner.to_be_bytes().to_vec();
        v.extend_from_slice(&self.writes.to_be_bytes());
        v
    }
}

/// A shared store in memory: restarts and fencing within one process, without a disk or a
/// cluster. Clones share the record; each clone is a separate would-be owner.
///
/// ```
/// use percolator::oracle::{MemoryStore, OracleClient, OracleServer};
/// let store = MemoryStore::new();
/// let oracle = OracleServer::start_local(store.clone())?;
/// let client = OracleClient::connect(&[oracle.local_addr().to_string()], Default::default())?;
/// let ts = client.get_timestamp()?;
/// assert!(store.top() >= ts, "the top is persisted before anything below it is served");
/// # Ok::<(), percolator::Error>(())
/// ```
#[derive(Debug)]
pub struct MemoryStore {
    record: Arc<Mutex<Option<Record>>>,
    owner: Option<u128>,
    lease: Duration,
}

impl MemoryStore {
    /// An empty store with the [`DEFAULT_LEASE`].
    ///
    /// ```
    /// use percolator::oracle::MemoryStore;
    /// assert_eq!(MemoryStore::new().top(), 0);
    /// ```
    pub fn new() -> Self {
        Self::with_lease(DEFAULT_LEASE)
    }

    /// An empty store whose owners hold `lease`: short leases make fail-over tests fast.
    ///
    /// ```
    /// use std::time::Duration;
    /// use percolator::oracle::{MemoryStore, WindowStore};
    /// let mut old = MemoryStore::with_lease(Duration::from_millis(100));
    /// old.claim()?;
    /// assert_eq!(old.clone().claim()?.wait, Duration::from_millis(100));
    /// # Ok::<(), percolator::Error>(())
    /// ```
    pub fn with_lease(lease: Duration) -> Self {
        MemoryStore {
            record: Arc::new(Mutex::new(None)),
            owner: None,
            lease,
        }
    }

    /// The persisted top (0 if never advanced).
    ///
    /// ```
    /// use percolator::oracle::{MemoryStore, WindowStore};
    /// let mut store = MemoryStore::new();
    /// store.claim()?;
    /// store.advance(77)?;
    /// assert_eq!(store.top(), 77);
    /// # Ok::<(), percolator::Error>(())
    /// ```
    pub fn top(&self) -> u64 {
        self.record.lock().as_ref().map_or(0, |r| r.top)
    }
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new()
    }
}

/// A clone shares the record but is a new, not yet claiming, owner.
impl Clone for MemoryStore {
    fn clone(&self) -> Self {
        MemoryStore {
            record: Arc::clone(&self.record),
            owner: None,
            lease: self.lease,
        }
    }
}

impl WindowStore for MemoryStore {
    fn claim(&mut self) -> Result<Claim> {
        let owner = new_owner_id();
        let mut record = self.record.lock();
        let claim = match record.as_ref() {
            None => Claim {
                top: 0,
                wait: Duration::ZERO,
            },
            Some(r) => Claim {
                top: r.top,
                wait: if r.released { Duration::ZERO } else { r.lease },
            },
        };
        *record = Some(Record {
            top: claim.top,
            owner,
            lease: self.lease,
            released: false,
            writes: 0,
        });
        self.owner = Some(owner);
        Ok(claim)
    }

    fn advance(&mut self, top: u64) -> Result<()> {
        let mut record = self.record.lock();
        match record.as_mut() {
            Some(r) if Some(r.owner) == self.owner && !r.released => {
                r.top = r.top.max(top);
                r.writes += 1;
                Ok(())
            }
            other => Err(Error::OracleFenced {
                detail: format!("memory store now owned by {:x?}", other.map(|r| r.owner)),
            }),
        }
    }

    fn release(&mut self) -> Result<()> {
        if let Some(r) = self.record.lock().as_mut()
            && Some(r.owner) == self.owner
        {
            r.released = true;
            r.writes += 1;
        }
        Ok(())
    }

    fn lease(&self) -> Option<Duration> {
        Some(self.lease)
    }

    fn describe(&self) -> String {
        "memory".to_string()
    }

    fn holder(&mut self) -> Result<Option<Holder>> {
        Ok(self.record.lock().as_ref().map(|r| Holder {
            top: r.top,
            lease: r.lease,
            released: r.released,
            version: r.version(),
        }))
    }

    fn take_over(&mut self, seen: Option<&Holder>) -> Result<Option<Claim>> {
        let mut record = self.record.lock();
        if record.as_ref().map(Record::version) != seen.map(|h| h.version.clone()) {
            return Ok(None);
        }
        let owner = new_owner_id();
        let top = seen.map_or(0, |h| h.top);
        *record = Some(Record {
            top,
            owner,
            lease: self.lease,
            released: false,
            writes: 0,
        });
        self.owner = Some(owner);
        Ok(Some(Claim {
            top,
            wait: Duration::ZERO,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_newer_claim_fences_the_older_owner() {
        let mut a = MemoryStore::new();
        let mut b = a.clone();
        assert_eq!(a.claim().unwrap().top, 0);
        a.advance(100).unwrap();
        let claim = b.claim().unwrap();
        assert_eq!(claim.top, 100);
        assert_eq!(
            claim.wait, DEFAULT_LEASE,
            "a live owner's lease must be waited out"
        );
        assert!(matches!(a.advance(200), Err(Error::OracleFenced { .. })));
        b.advance(300).unwrap();
        assert_eq!(b.top(), 300);
    }

    #[test]
    fn a_released_store_is_taken_over_without_waiting() {
        let mut a = MemoryStore::with_lease(Duration::from_secs(60));
        a.claim().unwrap();
        a.advance(5).unwrap();
        a.release().unwrap();
        let claim = a.clone().claim().unwrap();
        assert_eq!(
            claim,
            Claim {
                top: 5,
                wait: Duration::ZERO
            }
        );
    }
}
