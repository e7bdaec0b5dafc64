//! Garbage collection: bounded versions under a safe point (docs/gc.md).
//!
//! - `safe_point`: choosing the safe point (oracle time minus the life time, never above a
//!   live client's oldest open transaction) and storing it, only ever raised.
//! - `locks`: deciding every lock below the safe point first, in every transactional table.
//! - `plan`: what one column loses, as a pure function (TiKV's rule).
//! - `collect`: the table pass, exact single-version deletes a page of rows at a time.
//! - `worker`: [`GcWorker`] (one round, or rounds in the background with a [`GcHandle`]
//!   drained on shutdown) and the reports; `command`: `percolator gc`.

mod collect;
mod locks;
#[cfg(test)]
mod locks_tests;
mod plan;
mod safe_point;
mod worker;

pub use safe_point::stored_safe_point;
pub use worker::{
    GcHandle, GcOptions, GcProgress, GcReport, GcWorker, TableReport, MAX_WORKERS, MIN_LIFE_TIME,
};
