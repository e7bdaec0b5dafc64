//! The workloads that exercise percolator on HBase: the bank demo, `observe-demo`, the soak,
//! the benchmarks and the children the crash tests kill, behind the `percolator-workloads`
//! binary. They turn on the library's `testing` feature (clients killed at protocol seams, the
//! protocol's own calls timed as floors), so this crate is for evaluation and tests, never for
//! a service or an operator's machine; the operator tools are `percolator-cli`'s.
//!
//! # Layout
//! - [`cli`]: the binary's command line (clap).
//! - [`stack`]: an embedded emulator and oracle, or the addresses given.
//! - [`bank`]: concurrent transfers and audits, the demo's and the bank test's; [`demo`] runs
//!   it with injected client crashes.
//! - [`observe_demo`]: chained observers with workers killed at random.
//! - [`soak`]: everything at once against one HBase, with processes killed on timers;
//!   [`handed`] checks the timestamps a standby group of oracles handed out.
//! - [`bench`], [`bench_command`]: raw HBase operations vs transactions, and the protocol's
//!   floors; [`large`] and [`notify_bench`] their large-transaction and observer workloads.
//! - [`gc_bench`]: an hour of updates compressed in time, with and without GC; [`gc_scale`]:
//!   GC's collection with 1, 2, 4, 8 workers over a table of many regions.

// The library's `Error` is deliberately rich; see its docs.
#![allow(clippy::result_large_err)]

pub mod bank;
#[cfg(test)]
mod bank_test;
pub mod bench;
pub mod bench_command;
pub mod cli;
pub mod demo;
mod floor;
pub mod gc_bench;
pub mod gc_scale;
pub mod handed;
pub mod large;
pub mod notify_bench;
pub mod observe_demo;
mod rows;
pub mod soak;
pub mod stack;
mod usage;

/// Held by a unit test that commits transactions: the library's failpoints are process-wide,
/// and the bank's crash test arms them under the same lock, so the two never overlap.
#[cfg(test)]
fn failpoints_off() -> fail::FailScenario<'static> {
    fail::FailScenario::setup()
}
