//! The `percolator` and `percolator-oracle` commands: the operator tools (`create`, `migrate`,
//! `get`/`put`/`delete`/`scan`, `locks`, `gc`, `doctor`) and the timestamp oracle, over the
//! [`percolator`] library, which they build without its test hooks. This library part exists
//! for the two binaries, `percolator-workloads` (the demos and benchmarks, which reuse its
//! flags and helpers) and their tests; it is not an API for services, which depend on
//! `percolator` itself.
//!
//! # Layout
//! - [`cli`]: the binaries' command lines (clap), and [`logging`]: their shared log setup.
//! - [`gateway`]: the flags every command takes to reach an HTTP, TLS or Kerberos gateway.
//! - [`oracle_access`]: the flags every command takes to reach a TLS or token-secured oracle.
//! - [`tools`]: how the data commands name columns and show values, progress bars, and calls
//!   made again while HBase is in transition.
//! - [`commands`]: each operator command's arguments (clap) and its run.
//! - [`oracle_bench`]: `percolator-oracle bench`.

// The library's `Error` is deliberately rich; see its docs.
#![allow(clippy::result_large_err)]

pub mod cli;
pub mod commands;
pub mod gateway;
pub mod logging;
pub mod metrics_http;
pub mod oracle_access;
pub mod oracle_bench;
pub mod tools;
