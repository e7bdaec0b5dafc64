//! Percolator transactions: the protocol and the transaction API.
//!
//! Bottom up:
//! - `codec`: byte formats of locks and write records, and `notify_cells` of observer
//!   notifications; `actions`: the protocol steps as pure functions returning the
//!   `CheckAndMutate` to apply.
//! - `store`: the seam to HBase ([`HBaseAccess`]); `session`: one transaction's counted
//!   round trips; `context`: what a client's transactions share.
//! - The protocol, each part owning its state: `snapshot` (the snapshot reader), `resolver`
//!   (the lock resolver), `committer` (two-phase commit and the secondaries, with `lock_guess`
//!   choosing each prewrite's CAS variant) and
//!   `commit_point` (the one write that decides a transaction).
//! - `heartbeat`, `primaries`, `liveness`: keeping a client's locks and liveness row fresh;
//!   `background`: tracked tasks drained on shutdown; `open_txns`: the open start_ts the
//!   liveness row publishes, and `safe_point`: the GC safe point reads are checked against.
//! - The API: `transaction` ([`AsyncTransaction`]) and `client` ([`AsyncClient`]), and
//!   `blocking` ([`Client`], [`Transaction`]) over them.

mod background;
mod blocking;
mod client;
pub(crate) mod commit;
pub(crate) mod context;
mod families;
mod fusion;
pub(crate) mod granularity;
mod heartbeat;
pub(crate) mod liveness;
mod lock_guess;
pub(crate) mod meta;
pub(crate) mod notify_cells;
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

// The byte formats and the pure protocol steps: public only for tests that script the
// protocol by hand and inspect stored cells (feature `testing`).
#[cfg(feature = "testing")]
pub mod actions;
#[cfg(not(feature = "testing"))]
pub(crate) mod actions;
#[cfg(feature = "testing")]
pub mod codec;
#[cfg(not(feature = "testing"))]
pub(crate) mod codec;
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
pub use crate::key::{CellKey, InvalidKey};
pub use blocking::{Client, RowIter, Transaction};
pub use client::{AsyncClient, TxnBody};
pub use granularity::LockGranularity;
pub use liveness::LivenessConfig;
pub use meta::{meta_row, meta_table_descriptor};
#[cfg(feature = "testing")]
pub use options::{CrashInjector, Seam};
pub use options::{RetryPolicy, TxnOptions, TxnOptionsBuilder};
pub use schema::{Schema, ALL_VERSIONS};
pub use snapshot::ScannedRow;

pub use stats::ClientStats;
pub use store::HBaseAccess;
pub use transaction::{AsyncTransaction, RowStream};
