//! Percolator transactions on HBase, run entirely by the client over HBase's Thrift2 gateway.
//!
//! Snapshot-isolated, cross-row, cross-table transactions on existing HBase tables, following
//! Google's Percolator (OSDI 2010) with TiKV's refinements. HBase cell versions carry the
//! timestamps and `checkAndMutate` is the single-row transaction; locks and write records live
//! in extra column families beside the user's data. See `docs/design.md` (and the rest
//! of `docs/`) for the protocol and its invariants.
//!
//! # Layout
//! - [`thrift`]: wire layer, bindings generated from `thrift/hbase.thrift`.
//! - `hbase`: typed HBase operations over pooled Thrift2 connections ([`HBaseClient`]).
//! - [`emulator`]: an in-memory server speaking Thrift2 with HBase 2.x semantics.
//! - `oracle`: the timestamp oracle server, its stores and its batching client.
//! - [`txn`]: the Percolator protocol (pure actions, resolver, two-phase commit) and the
//!   transaction API ([`Client`], [`Transaction`]).
//! - [`workload`]: the bank demo and the benchmark behind the `percolator` binary.
//! - `clock`: the wall-clock seam shared by the oracle and the transaction layer.
//! - `error`: the crate's one error type and its retry classification.

mod clock;
pub mod emulator;
mod error;
pub mod hbase;
mod key;
pub mod oracle;
mod runtime;
mod thrift;
pub mod txn;
mod workload;

pub use error::{Error, Peer, Result, RetryClass};
pub use hbase::{AsyncHBaseClient, HBaseClient, HBaseConfig};
pub use oracle::{LocalTimestamps, OracleClient, OracleHandle, OracleServer, TimestampSource};
pub use txn::{AsyncClient, AsyncTransaction, CellKey, Client, Transaction, TxnOptions};

/// Entry points of the `percolator` binary (the demo and the bench), not a supported API.
#[doc(hidden)]
pub mod cli {
    pub use crate::workload::bench::{self, BenchConfig, BenchReport, WORKLOADS};
    pub use crate::workload::demo::{self, DemoConfig};
    pub use crate::workload::stack::Stack;
}
