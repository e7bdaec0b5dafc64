//! Observers: user code run in a transaction whenever an observed column changes, as in the
//! Percolator paper's incremental processing (and Apache Fluo). Built on the transactions
//! only; every piece of state lives in HBase. See `docs/observers.md`.
//!
//! - `model`: the notification and acknowledgment cells of the notify family (`_pn`) and the
//!   observed-column registry in the meta table; the committer asks it which writes leave a
//!   notification (strong: a write to an observed column; weak:
//!   [`AsyncTransaction::notify`](crate::AsyncTransaction::notify)).
//! - `run`: the [`Observer`] trait and one observer run (the ack rule, clearing).
//! - `lease`: partitions of the notify space leased through meta table rows.
//! - `worker`: [`ObserverWorker`], the tasks that scan, run and clear.

mod lease;
mod model;
mod run;
mod worker;

pub use model::ObservedColumn;
pub(crate) use model::{notification_put, notify_flags};
pub use run::{Observer, WorkerCrash, WorkerSeam};
pub use worker::{
    observed_columns, pending_notifications, register, ObserverSet, ObserverWorker, WorkerConfig,
    WorkerStats,
};
