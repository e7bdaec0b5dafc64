//! The `percolator` and `percolator-oracle` commands: the bank demo, the benchmarks, and the
//! operator tools (`migrate`, `get`/`put`/`delete`/`scan`, `locks`, `gc`, `doctor`) over the
//! [`percolator`] library. This library part exists for the two binaries and their tests; it is
//! not an API for services, which depend on `percolator` itself.
//!
//! # Layout
//! - [`cli`]: the binaries' command lines (clap), and [`logging`]: their shared log setup.
//! - [`gateway`]: the flags every command takes to reach an HTTP, TLS or Kerberos gateway.
//! - [`oracle_access`]: the flags every command takes to reach a TLS or token-secured oracle.
//! - [`tools`]: how the data commands name columns and show values, and progress bars.
//! - [`commands`]: each operator command's arguments (clap) and its run.
//! - [`workload`]: the bank demo, `observe-demo` and the benchmarks, on an embedded emulator
//!   and oracle ([`workload::stack`]) or on the addresses given.
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
pub mod workload;
