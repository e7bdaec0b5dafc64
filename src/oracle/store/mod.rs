//! Where the oracle persists the top of its allocation window, and how it keeps other oracle
//! processes from serving at the same time.
//!
//! A store holds one record: the window top (the highest timestamp any incarnation may have
//! served) and, for shared stores, which process owns it. An oracle [`claim`]s the store at
//! start, then [`advance`]s the top before serving from the new window. Exclusivity comes in two
//! flavours:
//! - exclusive stores (the file store) hold an OS lock for the life of the process, so a second
//!   oracle cannot even claim; [`WindowStore::lease`] is `None`.
//! - shared stores ([`HBaseStore`], and the in-memory store that mirrors it for tests) let a newer oracle
//!   take over: its claim rewrites the record under a new owner, so the older one's next
//!   conditional advance fails and it stops ([`Error::OracleFenced`]). Because the older one may
//!   still be serving from its current window until then, every advance also grants a lease of
//!   [`WindowStore::lease`] measured from when the advance started: the owner serves only while
//!   its lease is valid, and a claimant that displaced a live owner waits one full lease before
//!   serving. That makes the hand-over clean in real time, so a client never gets a smaller
//!   timestamp after a larger one from another server. It assumes only that the two machines'
//!   monotonic clocks tick at about the same rate, not that their wall clocks agree.
//!
//! [`claim`]: WindowStore::claim
//! [`advance`]: WindowStore::advance

mod file;
mod hbase;
mod memory;

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

pub use file::FileStore;
pub use hbase::{HBaseStore, WindowRecord};
pub use memory::MemoryStore;

use crate::{Error, Result};

/// What a successful claim learned: where the new owner starts and how long it must wait.
///
/// ```
/// use std::time::Duration;
/// use percolator::oracle::{MemoryStore, WindowStore};
/// let mut old = MemoryStore::with_lease(Duration::from_secs(2));
/// let mut new = old.clone(); // another would-be owner of the same record
/// old.claim()?;
/// old.advance(1_000)?;
/// let claim = new.claim()?;
/// assert_eq!(claim.top, 1_000);
/// assert_eq!(claim.wait, Duration::from_secs(2), "the old owner may still be serving");
/// # Ok::<(), percolator::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Claim {
    /// The persisted top: the new owner serves strictly above it.
    pub top: u64,
    /// How long to wait before serving: the displaced owner's lease, if it may still be live.
    pub wait: Duration,
}

/// The record of a shared store as a standby oracle sees it ([`WindowStore::holder`]).
///
/// ```
/// use std::time::Duration;
/// use percolator::oracle::{MemoryStore, WindowStore};
/// let mut owner = MemoryStore::with_lease(Duration::from_secs(2));
/// let mut standby = owner.clone();
/// assert_eq!(standby.holder()?, None, "nobody ever owned a new store");
/// owner.claim()?;
/// owner.advance(10)?;
/// let seen = standby.holder()?.unwrap();
/// assert_eq!((seen.top, seen.lease, seen.released), (10, Duration::from_secs(2), false));
/// owner.advance(20)?; // a renewal: what the standby saw is out of date
/// assert_ne!(standby.holder()?.unwrap().version, seen.version);
/// assert_eq!(standby.take_over(Some(&seen))?, None, "the owner is alive: no take-over");
/// # Ok::<(), percolator::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Holder {
    /// The persisted top.
    pub top: u64,
    /// The owner's lease: it serves no longer than this after its last write began.
    pub lease: Duration,
    /// The owner gave the store up on a clean shutdown.
    pub released: bool,
    /// Differs after every write of the record (claims, advances, renewals, releases), so a
    /// standby that sees one version for a whole lease knows the owner stopped serving.
    pub version: Vec<u8>,
}

/// Durable home of the window top. Calls block (they do I/O); the server runs them off its
/// request path. Implement it to keep the top somewhere else.
///
/// ```
/// use percolator::oracle::{MemoryStore, OracleServer, WindowStore};
///
/// /// Any store works behind a box, e.g. one chosen at run time.
/// let store: Box<dyn WindowStore> = Box::new(MemoryStore::new());
/// assert_eq!(store.describe(), "memory");
/// let oracle = OracleServer::start_local(store)?;
/// # drop(oracle);
/// # Ok::<(), percolator::Error>(())
/// ```
pub trait WindowStore: Send + 'static {
    /// Takes ownership of the store for this process and returns the persisted top.
    ///
    /// ```
    /// use percolator::oracle::{MemoryStore, WindowStore};
    /// let mut store = MemoryStore::new();
    /// assert_eq!(store.claim()?.top, 0, "a new store starts from nothing");
    /// # Ok::<(), percolator::Error>(())
    /// ```
    fn claim(&mut self) -> Result<Claim>;
    /// Durably raises the top to `top` (greater than any value written before). Fails with
    /// [`Error::OracleFenced`] if another process claimed the store since.
    ///
    /// ```
    /// use percolator::oracle::{MemoryStore, WindowStore};
    /// let mut old = MemoryStore::new();
    /// let mut new = old.clone();
    /// old.claim()?;
    /// old.advance(10)?;
    /// new.claim()?;
    /// assert!(matches!(old.advance(20), Err(percolator::Error::OracleFenced { .. })));
    /// # Ok::<(), percolator::Error>(())
    /// ```
    fn advance(&mut self, top: u64) -> Result<()>;
    /// Gives the store up on a clean shutdown, so the next owner need not wait out our lease.
    ///
    /// ```
    /// use std::time::Duration;
    /// use percolator::oracle::{MemoryStore, WindowStore};
    /// let mut old = MemoryStore::new();
    /// old.claim()?;
    /// old.advance(10)?;
    /// old.release()?;
    /// assert_eq!(old.clone().claim()?.wait, Duration::ZERO);
    /// # Ok::<(), percolator::Error>(())
    /// ```
    fn release(&mut self) -> Result<()>;
    /// The lease each advance grants, for shared stores; `None` for exclusive ones.
    ///
    /// ```
    /// use std::time::Duration;
    /// use percolator::oracle::{FileStore, MemoryStore, WindowStore};
    /// let shared = MemoryStore::with_lease(Duration::from_secs(1));
    /// assert_eq!(shared.lease(), Some(Duration::from_secs(1)));
    /// assert_eq!(FileStore::new("/var/lib/tso/window").lease(), None);
    /// ```
    fn lease(&self) -> Option<Duration>;
    /// For log lines: what this store is.
    ///
    /// ```
    /// use percolator::oracle::{FileStore, WindowStore};
    /// assert!(FileStore::new("/var/lib/tso/window").describe().contains("/var/lib/tso/window"));
    /// ```
    fn describe(&self) -> String;
    /// The record of a shared store as it is now: `None` if no oracle ever claimed it.
    /// Exclusive stores cannot be stood by for and answer `IllegalArgument`.
    ///
    /// ```
    /// use percolator::oracle::{FileStore, WindowStore};
    /// let mut exclusive = FileStore::new("/var/lib/tso/window");
    /// assert!(matches!(exclusive.holder(), Err(percolator::Error::IllegalArgument { .. })));
    /// ```
    fn holder(&mut self) -> Result<Option<Holder>> {
        Err(no_standby(&self.describe()))
    }
    /// Claims the store, with no wait, if its record is still exactly `seen` (`None`: still
    /// never claimed); `None` if it changed since (its owner is alive, or another oracle won).
    /// The caller vouches that `seen` was released or unchanged for a whole lease, so its
    /// owner has stopped serving.
    ///
    /// ```
    /// use std::time::Duration;
    /// use percolator::oracle::{Claim, MemoryStore, WindowStore};
    /// let mut owner = MemoryStore::with_lease(Duration::from_millis(50));
    /// let mut standby = owner.clone();
    /// owner.claim()?;
    /// owner.advance(10)?;
    /// let seen = standby.holder()?.unwrap();
    /// std::thread::sleep(seen.lease); // no renewal for a whole lease: the owner died
    /// let claim = standby.take_over(Some(&seen))?.unwrap();
    /// assert_eq!(claim, Claim { top: 10, wait: Duration::ZERO });
    /// assert!(owner.advance(20).is_err(), "the old owner is fenced");
    /// # Ok::<(), percolator::Error>(())
    /// ```
    fn take_over(&mut self, seen: Option<&Holder>) -> Result<Option<Claim>> {
        let _ = seen;
        Err(no_standby(&self.describe()))
    }
}

fn no_standby(store: &str) -> Error {
    Error::IllegalArgument {
        message: format!(
            "store {store} is exclusive: a standby oracle needs a shared (hbase:) store"
        ),
    }
}

impl WindowStore for Box<dyn WindowStore> {
    fn claim(&mut self) -> Result<Claim> {
        (**self).claim()
    }
    fn advance(&mut self, top: u64) -> Result<()> {
        (**self).advance(top)
    }
    fn release(&mut self) -> Result<()> {
        (**self).release()
    }
    fn lease(&self) -> Option<Duration> {
        (**self).lease()
    }
    fn describe(&self) -> String {
        (**self).describe()
    }
    fn holder(&mut self) -> Result<Option<Holder>> {
        (**self).holder()
    }
    fn take_over(&mut self, seen: Option<&Holder>) -> Result<Option<Claim>> {
        (**self).take_over(seen)
    }
}

/// A store named on the command line: `memory`, `file:PATH` or `hbase:GATEWAY[/TABLE]`, where
/// GATEWAY is any address [`HBaseConfig::addr`](crate::HBaseConfig) takes.
///
/// ```
/// use percolator::oracle::StoreSpec;
/// let spec: StoreSpec = "hbase:gateway:9090/ns:tso".parse()?;
/// assert_eq!(spec, StoreSpec::HBase { addr: "gateway:9090".into(), table: "ns:tso".into() });
/// let spec: StoreSpec = "hbase:https://gw1:9090,gw2:9090/tso".parse()?;
/// assert_eq!(spec, StoreSpec::HBase { addr: "https://gw1:9090,gw2:9090".into(), table: "tso".into() });
/// assert!("hbase:gateway".parse::<StoreSpec>().is_err(), "a port is required");
/// # Ok::<(), percolator::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreSpec {
    /// [`MemoryStore`]: not durable, for tests.
    Memory,
    /// [`FileStore`] at this path.
    File(PathBuf),
    /// [`HBaseStore`] on an HBase Thrift2 gateway.
    HBase {
        /// The gateway, as [`HBaseConfig::addr`](crate::HBaseConfig) takes it.
        addr: String,
        /// The table (`percolator_oracle` when the spec names none).
        table: String,
    },
}

/// The table used when a `hbase:` spec names none.
pub(crate) const DEFAULT_HBASE_TABLE: &str = "percolator_oracle";

impl FromStr for StoreSpec {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        let bad = |why: &str| Error::IllegalArgument {
            message: format!(
                "store {s:?}: {why} (expected memory, file:PATH or hbase:HOST:PORT[/TABLE])"
            ),
        };
        if s == "memory" {
            return Ok(StoreSpec::Memory);
        }
        if let Some(path) = s.strip_prefix("file:") {
            if path.is_empty() {
                return Err(bad("empty path"));
            }
            return Ok(StoreSpec::File(PathBuf::from(path)));
        }
        if let Some(rest) = s.strip_prefix("hbase:") {
            // The gateway address may be a URL (`https://gw:9090`): the table follows the
            // first `/` after its scheme.
            let after_scheme = rest.find("://").map_or(0, |at| at + 3);
            let (addr, table) = match rest[after_scheme..].split_once('/') {
                Some((_, table)) if !table.is_empty() => {
                    (&rest[..rest.len() - table.len() - 1], table)
                }
                Some(_) => return Err(bad("empty table name")),
                None => (rest, DEFAULT_HBASE_TABLE),
            };
            if crate::hbase::Endpoint::parse_list(addr).is_err() {
                return Err(bad(
                    "address must be HOST:PORT, http(s)://HOST:PORT or a list",
                ));
            }
            return Ok(StoreSpec::HBase {
                addr: addr.to_string(),
                table: table.to_string(),
            });
        }
        Err(bad("unknown kind"))
    }
}

impl StoreSpec {
    /// Opens the store this spec names; `lease` applies to shared stores.
    ///
    /// ```
    /// use percolator::oracle::{StoreSpec, WindowStore, DEFAULT_LEASE};
    /// let store = StoreSpec::Memory.open(DEFAULT_LEASE)?;
    /// assert_eq!(store.lease(), Some(DEFAULT_LEASE));
    /// # Ok::<(), percolator::Error>(())
    /// ```
    pub fn open(&self, lease: Duration) -> Result<Box<dyn WindowStore>> {
        match self {
            StoreSpec::Memory => Ok(Box::new(MemoryStore::with_lease(lease))),
            StoreSpec::File(path) => Ok(Box::new(FileStore::new(path))),
            StoreSpec::HBase { addr, table } => {
                Ok(Box::new(HBaseStore::connect(addr, table, lease)?))
            }
        }
    }
}

/// A lease long enough for a loaded machine to renew in time: a few window extensions.
///
/// ```
/// use percolator::oracle::{MemoryStore, WindowStore, DEFAULT_LEASE};
/// assert_eq!(MemoryStore::new().lease(), Some(DEFAULT_LEASE));
/// ```
pub const DEFAULT_LEASE: Duration = Duration::from_secs(3);

pub(crate) fn new_owner_id() -> u128 {
    rand::random()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_specs_parse() {
        assert_eq!("memory".parse::<StoreSpec>().unwrap(), StoreSpec::Memory);
        assert_eq!(
            "file:/var/lib/tso".parse::<StoreSpec>().unwrap(),
            StoreSpec::File("/var/lib/tso".into())
        );
        assert_eq!(
            "hbase:localhost:9090".parse::<StoreSpec>().unwrap(),
            StoreSpec::HBase {
                addr: "localhost:9090".into(),
                table: DEFAULT_HBASE_TABLE.into()
            }
        );
        assert_eq!(
            "hbase:h:1/ns:t".parse::<StoreSpec>().unwrap(),
            StoreSpec::HBase {
                addr: "h:1".into(),
                table: "ns:t".into()
            }
        );
        for bad in ["", "file:", "hbase:host", "hbase:h:x", "hbase:h:1/", "s3:x"] {
            assert!(
                bad.parse::<StoreSpec>().is_err(),
                "{bad:?} should not parse"
            );
        }
    }
}
