//! Percolator transactions: the protocol and the transaction API. The stored bytes they read
//! and write are `crate::format`'s.
//!
//! Every file, bottom up:
//! - The protocol's pure steps: `actions/` (prewrite, commit, rollback, read, status), each a
//!   function from stored cells to the `CheckAndMutate` to apply.
//! - The seam to HBase and what a client shares: `store` ([`HBaseAccess`]), `transitions`
//!   (regions in transition waited out), `fusion` (reads of one moment sent together),
//!   `session` (one transaction's counted round trips), `context` (a client's shared state),
//!   `stats` (its counters), `spans` (awaiting inside a tracing span).
//! - What a client knows and checks of its tables: `schema` (where the percolator columns
//!   live), `families` (each table's families as found), `meta` (the meta table's cached
//!   rows), `refresh` (a value trusted for a while), `granularity` (cell or row locks),
//!   `table_checks` (transactional, not being migrated), `lock_guess` (which prewrite variant
//!   to try first), `setup` (creating tables).
//! - Timestamps and liveness: `timestamps` (taken from the source, timed), `safe_point` (the GC
//!   safe point reads are checked against), `liveness` (the client's liveness row),
//!   `open_txns` (the open start_ts it publishes), `primaries` and `heartbeat` (primaries'
//!   locks kept fresh), `background` (tracked tasks drained on shutdown).
//! - The protocol, each part owning its state: `snapshot` (the snapshot reader), `resolver`
//!   (the lock resolver), `commit/` (two-phase commit, read top-down in its `mod.rs`:
//!   `checks`, `prewrite`, `commit_point`, `secondaries`, with `batches`, `mutation`,
//!   `packed` and `notify` beneath them).
//! - The API: `options` ([`TxnOptions`]), `transaction/` ([`AsyncTransaction`]: `reads`,
//!   `writes`, `scan`), `client` ([`AsyncClient`]), and `blocking/` ([`Client`],
//!   [`Transaction`]) over them.
//! - Test doubles and tests: `reads_only`, and the `*_tests.rs` files beside what they test.

mod background;
mod blocking;
mod client;
mod commit;
pub(crate) mod context;
mod families;
mod fusion;
pub(crate) mod granularity;
mod heartbeat;
pub(crate) mod liveness;
mod lock_guess;
pub(crate) mod meta;
mod open_txns;
mod options;
#[cfg(test)]
pub(crate) use options::failpoints_off;
mod primaries;
#[cfg(test)]
mod reads_only;
mod refresh;
pub(crate) mod resolver;
pub(crate) mod safe_point;
mod schema;
pub(crate) mod session;
pub(crate) mod snapshot;
mod spans;
mod stats;
pub(crate) mod store;
pub(crate) mod table_checks;
pub(crate) mod timestamps;
mod transaction;
mod transitions;
pub(crate) use transitions::{
    resuming_blocking, until_settled, until_settled_blocking, TRANSITION_TIMEOUT,
};

// The pure protocol steps: public only for tests that script the protocol by hand
// (feature `testing`).
#[cfg(feature = "testing")]
pub mod actions;
#[cfg(not(feature = "testing"))]
pub(crate) mod actions;
pub mod setup;

/// The maps a commit looks up on every call (families, meta rows, lock guesses, primaries
/// under heartbeat), keyed by names and timestamps this client chose: a fast hash, as no
/// outsider picks the keys to collide them.
pub(crate) type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
pub(crate) type FastSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;
/// A flag per cell of a commit. Nearly every commit has a handful of cells: their flags sit in
/// place rather than in an allocation of their own.
pub(crate) type CellFlags = smallvec::SmallVec<[bool; 16]>;

pub use crate::clock::{Clock, SystemClock};
pub use crate::format::meta::meta_row;
pub use crate::key::{CellKey, InvalidKey};
pub use blocking::{Client, RowIter, Transaction};
pub use client::{AsyncClient, TxnBody};
pub use granularity::LockGranularity;
pub use liveness::LivenessConfig;
pub use meta::meta_table_descriptor;
#[cfg(feature = "testing")]
pub use options::{CrashInjector, Seam};
pub use options::{RetryPolicy, TxnOptions, TxnOptionsBuilder};
pub use schema::{Schema, ALL_VERSIONS};
pub use snapshot::ScannedRow;

pub use stats::ClientStats;
pub use store::HBaseAccess;
pub use transaction::{AsyncTransaction, RowStream};
