//! Percolator transactions: the protocol core and the transaction API.
//!
//! Layers, bottom up: `codec` (byte formats of locks and write records), `actions` (the
//! protocol steps as pure functions returning the `CheckAndMutate` to apply), `session` +
//! `resolver` + `reader` + `twopc` (the steps driven over HBase), `transaction` and `client`
//! (the API). `access` is the seam to HBase, `liveness` and `keeper` the ephemeral rows.

mod access;
pub mod actions;
mod client;
pub mod codec;
mod executor;
mod keeper;
mod key;
mod liveness;
mod options;
mod reader;
mod resolver;
mod schema;
mod secondaries;
mod session;
pub mod setup;
mod transaction;
mod twopc;

pub use crate::clock::{Clock, SystemClock};
pub use access::HBaseAccess;
pub use client::{AsyncClient, Client};
pub use key::CellKey;
pub use liveness::LivenessConfig;
pub use options::{CrashInjector, RetryPolicy, Seam, TxnOptions};
pub use reader::ScannedRow;
pub use schema::{Schema, ALL_VERSIONS};
pub use session::ClientStats;
pub use transaction::Transaction;
