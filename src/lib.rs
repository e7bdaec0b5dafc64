//! Percolator transactions on HBase, run entirely by the client over HBase's Thrift2 gateway.
//!
//! Snapshot-isolated, cross-row, cross-table transactions on existing HBase tables, following
//! Google's Percolator (OSDI 2010) with TiKV's refinements. HBase cell versions carry the
//! timestamps and `checkAndMutate` is the single-row transaction; locks and write records live
//! in extra column families beside the user's data. See `docs/design.md` (and the rest
//! of `docs/`) for the protocol and its invariants.
//!
//! # Layout
//! Bottom up; each layer uses only those above it in this list.
//! - `error`, `key`, `clock`, `runtime`: the one error type and its retry classification,
//!   cell addresses, the wall-clock seam, and where the client's tasks run.
//! - [`metrics`]: the names the library records through the `metrics` facade.
//! - `thrift` (private): the Thrift2 bindings and the size-checked input protocol, from the
//!   `percolator-thrift` crate.
//! - [`hbase`]: a plain Thrift2 client, async and pipelined, with a blocking face
//!   ([`AsyncHBaseClient`], [`HBaseClient`]); knows nothing of transactions.
//! - `format` (public with feature `testing`): every stored cell's bytes (locks, write records,
//!   notifications, acknowledgments, meta and liveness rows, observer leases), with their
//!   layouts and compatibility vectors.
//! - [`oracle`]: the timestamp oracle server, its stores and its batching client
//!   ([`TimestampSource`]).
//! - [`txn`]: the Percolator protocol (pure actions; the snapshot reader, lock resolver and
//!   the commit over HBase) and the transaction API: [`AsyncClient`] and [`AsyncTransaction`],
//!   and the blocking [`Client`] and [`Transaction`] over them.
//! - [`observer`]: observers over the transactions: notifications written with commits, the
//!   [`Observer`](observer::Observer) trait and the [`ObserverWorker`](observer::ObserverWorker)
//!   that runs them, sharing the work through leases in HBase.
//! - [`gc`]: garbage collection below a safe point ([`gc::GcWorker`]).
//! - [`locks`]: the locks in a table, whether their owners live, and their resolution.
//! - [`progress`]: how long work (migration) reports its progress.
//! - [`migrate`]: makes existing tables transactional and adopts their data, and returns them
//!   to plain use (`docs/migration.md`).
//!
//! The command line (`percolator`, `percolator-oracle`) lives in the `percolator-cli` crate and
//! the in-memory HBase gateway in `hbase-emulator`; neither is compiled into a service that
//! depends on this crate.
//!
//! # Example
//! ```
//! use percolator::{Client, HBaseConfig, TxnOptions};
//! let emulator = hbase_emulator::start_local()?;
//! let oracle = percolator::OracleServer::start_local(percolator::oracle::MemoryStore::new())?;
//! let hbase = percolator::HBaseClient::connect(HBaseConfig::new(emulator.local_addr().to_string()))?;
//! percolator::txn::setup::create_table(&hbase, &Default::default(), "accounts", &["f"])?;
//! let client = Client::connect(
//!     HBaseConfig::new(emulator.local_addr().to_string()),
//!     &[oracle.local_addr().to_string()],
//!     TxnOptions::default(),
//! )?;
//! client.run(|txn| txn.set("accounts", "alice", "f", "balance", b"10".to_vec()))?;
//! let txn = client.begin()?;
//! assert_eq!(txn.get("accounts", "alice", "f", "balance")?, Some(b"10".to_vec()));
//! # client.shutdown();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod clock;
mod error;
// The stored formats: public only for tests that inspect stored cells (feature `testing`).
#[cfg(feature = "testing")]
pub mod format;
#[cfg(not(feature = "testing"))]
mod format;
pub mod gc;
pub mod hbase;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod internals;
mod key;
pub mod locks;
pub mod metrics;
pub mod migrate;
pub mod observer;
pub mod oracle;
pub mod progress;
mod ranges;
mod runtime;
#[cfg(test)]
mod test_stack;
pub mod txn;

/// The Thrift2 wire, shared with `hbase-emulator` through the `percolator-thrift` crate.
mod thrift {
    pub(crate) use percolator_thrift::{guarded, hbase};
}

pub use error::{Error, MigrationIssue, Peer, Result, RetryClass};
pub use hbase::{AsyncHBaseClient, HBaseClient, HBaseConfig};
pub use key::Binary;
pub use oracle::{LocalTimestamps, OracleClient, OracleHandle, OracleServer, TimestampSource};
pub use runtime::IO_THREADS_ENV;
pub use txn::{AsyncClient, AsyncTransaction, CellKey, Client, Transaction, TxnOptions};
