//! Observers: user code run in a transaction whenever an observed column changes, as in the
//! Percolator paper's incremental processing (and Apache Fluo). Built on the transactions
//! only; every piece of state lives in HBase. See `docs/observers.md`.
//!
//! - `model`: the acknowledgment cells (`_pa`) and the observed-column registry in the meta
//!   table. Which writes leave a notification (`_pn`) is the committer's business
//!   (`txn::notify`: strong, a write to an observed column; weak,
//!   [`AsyncTransaction::notify`](crate::AsyncTransaction::notify)).
//! - `applied`: [`LastApplied`], the old value derived data needs, kept beside the observed
//!   column.
//! - `run`: the [`Observer`] trait and one observer run (the ack rule, clearing).
//! - `lease`: partitions of the notify space leased through meta table rows.
//! - `registry`: [`register`] an observed column, list them, count pending notifications.
//! - `worker`: [`ObserverWorker`], the tasks that scan, run and clear.

mod applied;
mod lease;
#[cfg(test)]
mod lease_tests;
mod model;
mod registry;
mod run;
#[cfg(test)]
mod run_tests;
mod worker;

/// The attribute an [`Observer`] implementation takes (`#[percolator::observer::async_trait]`),
/// so that implementing the trait needs no dependency of the service's own.
pub use applied::{Change, LastApplied};
pub use async_trait::async_trait;
pub use lease::{worker_rows, WorkerRow};
#[cfg(feature = "testing")]
pub use model::ack_key;
pub use model::ObservedColumn;
pub use registry::{observed_columns, pending_notifications, register};
pub use run::{CommittedRun, Observer};
#[cfg(feature = "testing")]
pub use run::{WorkerCrash, WorkerSeam};
pub use worker::{ObserverSet, ObserverWorker, WorkerConfig, WorkerStats};
