//! Window top kept in one HBase cell, claimed and advanced with checkAndMutate.
//!
//! Cell: row `timestamp-oracle`, column `w:window` of the store's table (created on first use
//! with VERSIONS = 1). Value (34 bytes): magic `PTSW`, format version 1, the top (u64), the
//! owner's random id (u128), the owner's lease in ms (u32), and a released flag (u8); integers
//! big-endian.
//!
//! Every write is a checkAndMutate comparing the EXACT bytes this owner last wrote. Those bytes
//! never recur: each claim uses a fresh random owner id, and within one owner every write
//! raises the top or sets the released flag. So once a newer oracle has rewritten the cell
//! (its claim), the older one's next advance can only fail, and it stops with
//! [`Error::OracleFenced`]. A claim that displaced an owner that had not released tells the
//! server to wait out that owner's lease (read from the cell) before serving.
//!
//! A checkAndMutate whose reply was lost (`OutcomeUnknown`) is settled by reading the cell back:
//! our new bytes mean it applied, our old bytes mean it did not, anything else means fenced. A
//! write adopted that way is not counted as a lease renewal (it may have been applied long
//! before the current attempt began); the advance writes once more so the lease is fresh.

use std::time::Duration;

use super::{new_owner_id, Claim, Holder, WindowStore};
use crate::hbase::{
    CheckAndMutate, CompareOp, Durability, FamilyDescriptor, Get, HBaseClient, HBaseConfig, Put,
    TableDescriptor,
};
use crate::{Error, Result};

const ROW: &[u8] = b"timestamp-oracle";
const FAMILY: &[u8] = b"w";
const QUALIFIER: &[u8] = b"window";

const MAGIC: &[u8; 4] = b"PTSW";
const FORMAT: u8 = 1;
const RECORD_LEN: usize = 34;
/// Conditional writes per claim or advance before giving up for this round (each failure
/// that is not a fence means another writer raced us, or a reply was lost).
const ATTEMPTS: usize = 4;

/// The decoded cell of an [`HBaseStore`], as [`HBaseStore::read`] finds it: for operators and
/// tests checking who owns the window.
///
/// ```
/// use std::time::Duration;
/// use percolator::oracle::{HBaseStore, WindowStore};
/// use percolator::{HBaseClient, HBaseConfig};
/// let emulator = hbase_emulator::start_local()?;
/// let addr = emulator.local_addr().to_string();
/// let mut store = HBaseStore::connect(&addr, "tso", Duration::from_secs(2))?;
/// store.claim()?;
/// store.advance(500)?;
/// let client = HBaseClient::connect(HBaseConfig::new(addr))?;
/// let record = HBaseStore::read(&client, "tso")?.unwrap();
/// assert_eq!((record.top, record.lease_ms, record.released), (500, 2_000, false));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowRecord {
    /// The persisted top.
    pub top: u64,
    /// The owning process's random id (new on every claim).
    pub owner: u128,
    /// The owner's lease: how long a successor waits unless `released`.
    pub lease_ms: u32,
    /// The owner gave the store up on a clean shutdown.
    pub released: bool,
}

impl WindowRecord {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(RECORD_LEN);
        b.extend_from_slice(MAGIC);
        b.push(FORMAT);
        b.extend_from_slice(&self.top.to_be_bytes());
        b.extend_from_slice(&self.owner.to_be_bytes());
        b.extend_from_slice(&self.lease_ms.to_be_bytes());
        b.push(u8::from(self.released));
        b
    }

    pub(crate) fn decode(b: &[u8]) -> std::result::Result<Self, String> {
        if b.len() != RECORD_LEN {
            return Err(format!("{} bytes, expected {RECORD_LEN}", b.len()));
        }
        if &b[..4] != MAGIC || b[4] != FORMAT {
            return Err(format!("unknown header {:02x?}", &b[..5]));
        }
        let released = match b[33] {
            0 => false,
            1 => true,
            other => return Err(format!("bad released flag {other}")),
        };
        Ok(WindowRecord {
            top: u64::from_be_bytes(b[5..13].try_into().expect("8 bytes")),
            owner: u128::from_be_bytes(b[13..29].try_into().expect("16 bytes")),
            lease_ms: u32::from_be_bytes(b[29..33].try_into().expect("4 bytes")),
            released,
        })
    }
}

/// Table creation's timeout (see `ensure_table`).
const ADMIN_TIMEOUT: Duration = Duration::from_secs(60);

/// The window top in one HBase cell, shared by every oracle pointed at the table: a newer
/// oracle fences the older one, so oracles can fail over.
///
/// ```
/// use std::time::Duration;
/// use percolator::oracle::{HBaseStore, OracleClient, OracleServer};
/// let emulator = hbase_emulator::start_local()?;
/// let addr = emulator.local_addr().to_string();
/// let store = HBaseStore::connect(&addr, "tso", Duration::from_secs(1))?;
/// let oracle = OracleServer::start_local(store)?;
/// let client = OracleClient::connect(&[oracle.local_addr().to_string()], Default::default())?;
/// assert!(client.get_timestamp()? > 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct HBaseStore {
    client: HBaseClient,
    table: String,
    lease: Duration,
    owner: u128,
    /// The record we last wrote (its bytes are what the next CAS expects); `None` before the
    /// claim.
    last: Option<WindowRecord>,
}

impl HBaseStore {
    /// Connects to the gateway at `addr`. Calls time out after the lease: a renewal slower
    /// than that is useless anyway. The table is created on the first claim if missing.
    ///
    /// ```
    /// use percolator::oracle::{HBaseStore, WindowStore, DEFAULT_LEASE};
    /// let emulator = hbase_emulator::start_local()?;
    /// let mut store = HBaseStore::connect(&emulator.local_addr().to_string(), "tso", DEFAULT_LEASE)?;
    /// assert_eq!(store.claim()?.top, 0);
    /// assert_eq!(store.lease(), Some(DEFAULT_LEASE));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn connect(addr: &str, table: &str, lease: Duration) -> Result<Self> {
        // The oracle runs as its own process: it reaches a secured gateway as the
        // `percolator` commands do, by the environment (`HBaseConfig::with_env`).
        let mut config = HBaseConfig::new(addr).with_env()?;
        config.read_timeout = lease.max(Duration::from_secs(1));
        Ok(Self::with_client(
            HBaseClient::connect(config)?,
            table,
            lease,
        ))
    }

    pub(crate) fn with_client(client: HBaseClient, table: &str, lease: Duration) -> Self {
        HBaseStore {
            client,
            table: table.to_string(),
            lease,
            owner: new_owner_id(),
            last: None,
        }
    }

    /// Reads the cell as it is now: `None` if it does not exist.
    ///
    /// ```
    /// use percolator::oracle::{HBaseStore, WindowStore, DEFAULT_LEASE};
    /// use percolator::{HBaseClient, HBaseConfig};
    /// let emulator = hbase_emulator::start_local()?;
    /// let addr = emulator.local_addr().to_string();
    /// let mut store = HBaseStore::connect(&addr, "tso", DEFAULT_LEASE)?;
    /// store.claim()?;
    /// store.release()?;
    /// let client = HBaseClient::connect(HBaseConfig::new(addr))?;
    /// assert!(HBaseStore::read(&client, "tso")?.unwrap().released);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn read(client: &HBaseClient, table: &str) -> Result<Option<WindowRecord>> {
        read_bytes(client, table)?
            .map(|bytes| decode_cell(table, &bytes))
            .transpose()
    }

    fn ensure_table(&self) -> Result<()> {
        if self.client.admin().table_exists(&self.table)? {
            return Ok(());
        }
        // Creating a table runs a master procedure: 0.4-0.7 s on an idle standalone HBase,
        // more under load, so the lease-sized timeout of the window calls is too short for it.
        let config = self.client.config().clone().read_timeout(ADMIN_TIMEOUT);
        let client = HBaseClient::connect(config)?;
        let admin = client.admin();
        let desc = TableDescriptor::new(self.table.clone())
            .family(FamilyDescriptor::new(FAMILY).max_versions(1));
        match admin.create_table(&desc) {
            Ok(()) => Ok(()),
            // Another oracle may have created it meanwhile.
            Err(_) if admin.table_exists(&self.table)? => Ok(()),
            Err(e) => Err(e),
        }
    }

    fn record(&self, top: u64, released: bool) -> WindowRecord {
        WindowRecord {
            top,
            owner: self.owner,
            lease_ms: self.lease.as_millis().min(u128::from(u32::MAX)) as u32,
            released,
        }
    }

    /// Replaces the cell holding `expected` (`None`: no cell) by `new`; true if applied. A
    /// lost reply is settled by reading the cell back.
    fn swap(&self, expected: Option<&WindowRecord>, new: &WindowRecord) -> Result<bool> {
        let new = new.encode();
        let expected = expected.map(WindowRecord::encode).unwrap_or_default();
        let put = Put::new(ROW)
            .add(FAMILY, QUALIFIER, new.clone())
            .durability(Durability::FsyncWal);
        let cam = CheckAndMutate::new(ROW, FAMILY, QUALIFIER, CompareOp::Equal, expected).put(put);
        match self.client.check_and_mutate(&self.table, &cam) {
            Ok(applied) => Ok(applied),
            Err(Error::OutcomeUnknown { source, .. }) => {
                tracing::warn!(error = %source, "window write outcome unknown: reading it back");
                Ok(read_bytes(&self.client, &self.table)?.as_deref() == Some(new.as_slice()))
            }
            Err(e) => Err(e),
        }
    }

    fn fenced(&self, current: Option<&WindowRecord>) -> Error {
        let detail = match current {
            Some(r) => format!(
                "{}/w:window now owned by {:032x} with top {}",
                self.table, r.owner, r.top
            ),
            None => format!("{}/w:window was deleted", self.table),
        };
        Error::OracleFenced { detail }
    }
}

fn read_bytes(client: &HBaseClient, table: &str) -> Result<Option<Vec<u8>>> {
    let get = Get::new(ROW).column(FAMILY, QUALIFIER);
    let row = client.get(table, &get)?;
    Ok(row.value(FAMILY, QUALIFIER).map(<[u8]>::to_vec))
}

fn decode_cell(table: &str, bytes: &[u8]) -> Result<WindowRecord> {
    WindowRecord::decode(bytes).map_err(|reason| Error::OracleStore {
        message: format!(
            "window cell {table}/{}/w:window is corrupt ({reason}); refusing to use it, since \
             starting over could repeat timestamps",
            String::from_utf8_lossy(ROW)
        ),
    })
}

impl WindowStore for HBaseStore {
    fn claim(&mut self) -> Result<Claim> {
        self.ensure_table()?;
        // A fresh id per claim keeps our records from ever repeating, even if this store
        // claims again after being fenced.
        self.owner = new_owner_id();
        for _ in 0..ATTEMPTS {
            let previous = Self::read(&self.client, &self.table)?;
            let top = previous.map_or(0, |p| p.top);
            let mine = self.record(top, false);
            if self.swap(previous.as_ref(), &mine)? {
                self.last = Some(mine);
                let wait = match previous {
                    Some(p) if !p.released => Duration::from_millis(u64::from(p.lease_ms)),
                    _ => Duration::ZERO,
                };
                return Ok(Claim { top, wait });
            }
        }
        Err(Error::OracleStore {
            message: format!(
                "could not claim the window in {}: other oracles keep rewriting it",
                self.table
            ),
        })
    }

    fn advance(&mut self, top: u64) -> Result<()> {
        let new = self.record(top, false);
        for _ in 0..ATTEMPTS {
            if self.last.is_none() {
                return Err(Error::OracleStore {
                    message: "window advanced before claim".into(),
                });
            }
            if self.swap(self.last.as_ref(), &new)? {
                self.last = Some(new);
                return Ok(());
            }
            match Self::read(&self.client, &self.table) {
                // Ours, as left by an earlier attempt whose reply was lost: expect that and
                // write again, so that the lease counts from this attempt.
                Ok(Some(r)) if r.owner == self.owner && !r.released => self.last = Some(r),
                Ok(current) => return Err(self.fenced(current.as_ref())),
                // Unreadable bytes: certainly not ours any more.
                Err(Error::OracleStore { message }) => {
                    return Err(Error::OracleFenced { detail: message })
                }
                Err(e) => return Err(e),
            }
        }
        Err(Error::OracleStore {
            message: format!("window write in {} keeps failing", self.table),
        })
    }

    fn release(&mut self) -> Result<()> {
        if let Some(last) = self.last {
            let released = self.record(last.top, true);
            if self.swap(Some(&last), &released)? {
                self.last = Some(released);
            }
        }
        Ok(())
    }

    fn lease(&self) -> Option<Duration> {
        Some(self.lease)
    }

    fn describe(&self) -> String {
        format!("hbase:{}/{}", self.client.config().addr, self.table)
    }

    fn holder(&mut self) -> Result<Option<Holder>> {
        let record = match Self::read(&self.client, &self.table) {
            Err(Error::TableNotFound { .. }) => {
                self.ensure_table()?;
                None
            }
            read => read?,
        };
        Ok(record.map(|r| Holder {
            top: r.top,
            lease: Duration::from_millis(u64::from(r.lease_ms)),
            released: r.released,
            // The cell's bytes never recur (see the module doc): they are the version.
            version: r.encode(),
        }))
    }

    fn take_over(&mut self, seen: Option<&Holder>) -> Result<Option<Claim>> {
        let seen = seen
            .map(|h| {
                WindowRecord::decode(&h.version).map_err(|reason| Error::IllegalArgument {
                    message: format!("not a record of {}: {reason}", self.table),
                })
            })
            .transpose()?;
        let top = seen.map_or(0, |r| r.top);
        self.owner = new_owner_id();
        let mine = self.record(top, false);
        if !self.swap(seen.as_ref(), &mine)? {
            return Ok(None);
        }
        self.last = Some(mine);
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
    fn records_round_trip_and_reject_foreign_bytes() {
        let r = WindowRecord {
            top: 42 << 18,
            owner: u128::MAX - 7,
            lease_ms: 3000,
            released: true,
        };
        assert_eq!(WindowRecord::decode(&r.encode()), Ok(r));
        let mut bad = r.encode();
        bad[33] = 9;
        assert!(WindowRecord::decode(&bad).is_err());
        assert!(WindowRecord::decode(b"PTSW").is_err());
        let mut other = r.encode();
        other[4] = 2;
        assert!(WindowRecord::decode(&other).is_err());
    }
}
